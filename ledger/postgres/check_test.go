package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

// checkFixture stores a ledger touching every table in a fresh database:
//
//	1 manifest snapshot, 2 lock snapshot,
//	3 h1 accepted a->b (idempotency key k1), 4 h2 rejected, blocks a,
//	5 h3 rejected, blocks c, 6 unblock a, 7 h4 accepted, 8 redaction of 7.
func checkFixture(t testing.TB) (*postgres.Driver, string) {
	t.Helper()
	d, dsn := open(t, nil)
	h1 := handoff("h1", "a", "b", "wf", true, []byte("payload one"))
	h1.e.IdempotencyKey = "k1"
	h4 := handoff("h4", "d", "b", "wf", true, []byte("payload four"))
	appendAll(t, d, append(snapshots(), h1, handoff("h2", "a", "b", "", false, []byte("payload two")))...)
	appendAll(t, d, handoff("h3", "c", "b", "", false, []byte("payload three")), unblock("a"), h4)
	appendAll(t, d, req{e: entry.Entry{Kind: entry.KindRedaction, RedactedSeq: 7, Note: "erase"}, erase: []entry.Hash{entry.Sum256([]byte("payload four"))}})
	return d, dsn
}

func dbName(dsn string) string { return dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")] }

// TestCheck: a store written by the driver has no findings; every row a
// database administrator rewrites, deletes or adds in SQL is named, with
// the entry it concerns.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Shared(t)
	d, dsn := checkFixture(t)
	db := dbName(dsn)
	if fs, err := d.Check(ctx); err != nil || len(fs) != 0 {
		t.Fatalf("Check of an untouched store = %v, %v; want no findings", fs, err)
	}
	// Each case tampers with the fixture, then puts every row back from a
	// copy (one database for all cases: creating one takes a second).
	var save, restore string
	for _, tb := range []string{"head", "entries", "blobs", "redacted", "tree", "accepted", "idempotency", "blocked"} {
		save += fmt.Sprintf("CREATE TABLE saved.%[1]s AS TABLE govledger.%[1]s;\n", tb)
		restore += fmt.Sprintf("TRUNCATE govledger.%[1]s; INSERT INTO govledger.%[1]s SELECT * FROM saved.%[1]s;\n", tb)
	}
	if out, err := srv.Psql(db, "CREATE SCHEMA saved;\n"+save); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	const (
		p1 = `sha256('payload one')`
		p4 = `sha256('payload four')`
	)
	for _, tc := range []struct {
		name string
		sql  string
		seq  uint64
		kind string
	}{
		{"entry bytes rewritten", `UPDATE govledger.entries SET raw = convert_to(replace(convert_from(raw, 'UTF8'), '"target":"b"', '"target":"x"'), 'UTF8') WHERE seq = 3`, 3, ledger.FindBadValue},
		{"entry bytes and hash column rewritten", `UPDATE govledger.entries SET raw = convert_to(replace(convert_from(raw, 'UTF8'), '"target":"b"', '"target":"x"'), 'UTF8') WHERE seq = 3;
UPDATE govledger.entries SET hash = sha256(raw) WHERE seq = 3`, 4, ledger.FindPrevLink},
		{"entry deleted in the middle", `DELETE FROM govledger.entries WHERE seq = 5`, 6, ledger.FindSeqGap},
		{"index column rewritten", `UPDATE govledger.entries SET decision = 'accepted' WHERE seq = 4`, 4, ledger.FindIndexMissing},
		{"tree hash rewritten", `UPDATE govledger.tree SET hash = sha256('x') WHERE idx = 5`, 4, ledger.FindTreeHash},
		{"tree hash deleted", `DELETE FROM govledger.tree WHERE idx = 0`, 1, ledger.FindTreeHash},
		{"tree hash added", `INSERT INTO govledger.tree VALUES (100000, sha256('x'))`, 0, ledger.FindTreeExtra},
		{"blocked row deleted", `DELETE FROM govledger.blocked`, 5, ledger.FindBlocked},
		{"blocked row added", `INSERT INTO govledger.blocked VALUES (sha256('a'), 'a', 4)`, 4, ledger.FindBlocked},
		{"blocked row rewritten", `UPDATE govledger.blocked SET seq = 4`, 5, ledger.FindBlocked},
		{"accepted row rewritten", `UPDATE govledger.accepted SET seq = 4 WHERE seq = 3`, 3, ledger.FindAccepted},
		{"accepted row deleted", `DELETE FROM govledger.accepted WHERE seq = 7`, 7, ledger.FindAccepted},
		{"idempotency row deleted", `DELETE FROM govledger.idempotency`, 3, ledger.FindAccepted},
		{"payload rewritten", `UPDATE govledger.blobs SET bytes = 'evil' WHERE sha256 = ` + p1, 3, ledger.FindBlobHash},
		{"erased payload put back", `INSERT INTO govledger.blobs VALUES (` + p4 + `, 'payload four')`, 8, ledger.FindBlobUnremoved},
		{"redacted row deleted", `DELETE FROM govledger.redacted`, 8, ledger.FindRedacted},
		{"snapshot deleted", `DELETE FROM govledger.blobs WHERE sha256 = sha256('{"agents":[]}')`, 1, ledger.FindBlobMissing},
		{"orphan blob added", `INSERT INTO govledger.blobs VALUES (sha256('planted'), 'planted')`, 0, ledger.FindBlobOrphan},
		{"head rewound", `UPDATE govledger.head SET seq = 7, hash = (SELECT hash FROM govledger.entries WHERE seq = 7)`, 8, ledger.FindMetaHead},
		{"head key rewritten", `UPDATE govledger.head SET key = 'x'`, 0, ledger.FindKey},
		{"head lock rewritten", `UPDATE govledger.head SET lock = sha256('x')`, 2, ledger.FindInForce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := srv.Psql(db, tc.sql); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			defer func() {
				if out, err := srv.Psql(db, restore); err != nil {
					t.Fatalf("restore: %v: %s", err, out)
				}
				if fs, err := d.Check(ctx); err != nil || len(fs) != 0 {
					t.Fatalf("Check after the restore = %v, %v; want no findings", fs, err)
				}
			}()
			fs, err := d.Check(ctx)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			for _, f := range fs {
				if f.Seq == tc.seq && f.Kind == tc.kind {
					return
				}
			}
			t.Fatalf("findings %v; want one of kind %s at seq %d", fs, tc.kind, tc.seq)
		})
	}
}
