package bolt_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/ledgertest"
)

// TestConformance runs the driver suite against bbolt files, with
// durability across a reopen and a search of the file's bytes for a
// redacted payload.
func TestConformance(t *testing.T) {
	ledgertest.RunStore(t, ledgertest.Store{
		Open: func(t *testing.T) ledger.Driver {
			d, err := bolt.OpenDriver(filepath.Join(t.TempDir(), "l.db"), &bolt.Options{Origin: "test.example/bolt", IndexBatch: 4})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Reopen: func(t *testing.T, d ledger.Driver) ledger.Driver {
			r, err := bolt.OpenDriver(d.(*bolt.Driver).Path(), &bolt.Options{NoCreate: true})
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
		Bytes: func(t *testing.T, d ledger.Driver) []byte {
			b, err := os.ReadFile(d.(*bolt.Driver).Path())
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	})
}
