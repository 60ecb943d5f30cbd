package verify_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/verify"
)

func exportOf(t testing.TB, src verify.Source) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := verify.WriteExport(context.Background(), &b, src); err != nil {
		t.Fatalf("WriteExport = %v", err)
	}
	return b.Bytes()
}

func TestExportRoundTrip(t *testing.T) {
	c := baseChain(t)
	exp := exportOf(t, c.src)
	if n := bytes.Count(exp, []byte("\n")); n != 9 {
		t.Fatalf("export has %d lines, want 9", n)
	}
	// Line 3's payload was redacted: no payload_b64. Line 5 (unblock) has none.
	lines := strings.Split(string(exp), "\n")
	if strings.Contains(lines[2], "payload_b64") || strings.Contains(lines[4], "payload_b64") || !strings.Contains(lines[0], "payload_b64") {
		t.Errorf("payload_b64 placement wrong:\n%s", exp)
	}
	rep, err := verify.Replay(t.Context(), verify.ExportSource(bytes.NewReader(exp)), noReeval)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Head != c.head || rep.Entries != 9 || fmt.Sprint(rep.Redacted) != "[3]" {
		t.Errorf("Replay(export) = %+v, want OK, head %s, 9 entries, redacted [3]", rep, c.head)
	}
	if again := exportOf(t, verify.ExportSource(bytes.NewReader(exp))); !bytes.Equal(again, exp) {
		t.Errorf("re-export differs:\n%s\nwant\n%s", again, exp)
	}
}

func TestExportFindings(t *testing.T) {
	c := baseChain(t)
	exp := string(exportOf(t, c.src))
	lines := strings.Split(strings.TrimSuffix(exp, "\n"), "\n")
	line := func(i int, old, new string) string {
		l := slicesClone(lines)
		if !strings.Contains(l[i], old) {
			t.Fatalf("line %d lacks %q", i+1, old)
		}
		l[i] = strings.Replace(l[i], old, new, 1)
		return strings.Join(l, "\n") + "\n"
	}
	h4 := entry.LeafHash(c.src.raws[3]).String()
	tests := []struct {
		name, export, kinds string
	}{
		{"unknown member", line(3, `{"entry"`, `{"x":1,"entry"`), "4:export_line 4:gap 5:prev"},
		{"duplicate member", line(3, `{"entry"`, `{"hash":"`+h4+`","entry"`), "4:export_line 4:gap 5:prev"},
		{"trailing data", line(3, `}`+"", `}`), ""}, // placeholder replaced below
		{"hash differs", line(3, h4, strings.Repeat("0", 64)), "4:hash"},
		{"hash not hex", line(3, h4, "XYZ"), "4:export_line 4:gap 5:prev"},
		{"hash missing", line(3, `,"hash":"`+h4+`"`, ``), "4:export_line 4:gap 5:prev"},
		{"entry not object", line(3, `{"entry":{`, `{"entry":[{`), "4:export_line 4:gap 5:prev"},
		{"payload not base64", line(3, `"payload_b64":"`, `"payload_b64":"!`), "4:export_line 4:gap 5:prev"},
		{"payload dropped", line(5, `,"payload_b64":"`+base64.StdEncoding.EncodeToString([]byte("payload three"))+`"`, ``), "6:payload_missing"},
		{"payload edited", line(5, base64.StdEncoding.EncodeToString([]byte("payload three")), base64.StdEncoding.EncodeToString([]byte("payload thref"))), "6:payload"},
		{"payload on unblock", line(4, `"}`, `","payload_b64":"eA=="}`), "5:export_line 5:gap 6:prev"},
		{"entry edited", line(5, `"handoff_id":"h3"`, `"handoff_id":"h9"`), "6:hash 6:hash"},
		{"entry reformatted", line(5, `{"decision":"accepted",`, `{ "decision" : "accepted" ,`), ""},
		{"entry number form", line(5, `"seq":6`, `"seq":6.0`), ""},
		{"entry unsafe number", line(5, `"seq":6`, `"seq":60000000000000000000`), "6:export_line 6:gap 7:prev"},
		{"blank line", strings.Join(lines[:4], "\n") + "\n\n" + strings.Join(lines[4:], "\n") + "\n", "5:export_line"},
		{"no final newline", strings.TrimSuffix(exp, "\n"), "10:export_line"},
		{"line deleted", strings.Join(append(slicesClone(lines[:4]), lines[5:]...), "\n") + "\n", "5:gap 6:prev"},
		{"lines swapped", strings.Join([]string{lines[0], lines[1], lines[2], lines[4], lines[3], lines[5], lines[6], lines[7], lines[8]}, "\n") + "\n", "4:gap 4:gap 4:time_backwards 4:prev 5:prev 5:gap 6:prev"},
		{"tail truncated (needs an anchor)", strings.Join(lines[:7], "\n") + "\n", ""},
		{"not JSON", line(2, `{`, `[`), "3:export_line 3:gap 4:prev"},
		{"empty export", "", ""},
	}
	tests[2].export = line(3, `"}`, `"} {}`)
	tests[2].kinds = "4:export_line 4:gap 5:prev"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := verify.Replay(t.Context(), verify.ExportSource(strings.NewReader(tt.export)), noReeval)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Findings {
				got = append(got, fmt.Sprintf("%d:%s", f.Seq, f.Kind))
			}
			if g := strings.Join(got, " "); g != tt.kinds {
				t.Errorf("findings = %q, want %q\n%s", g, tt.kinds, rep.Findings)
			}
			if rep.OK() != (tt.kinds == "") {
				t.Errorf("OK() = %v", rep.OK())
			}
		})
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func TestExportSourceOutsideReplay(t *testing.T) {
	err := verify.ExportSource(strings.NewReader("{}\n")).Entries(t.Context(), func(uint64, []byte) error { return nil })
	var le *verify.LineError
	if !errors.As(err, &le) || !errors.Is(err, verify.ErrExportLine) || le.Line != 1 {
		t.Errorf("Entries(bad line) = %v, want *LineError at line 1 wrapping ErrExportLine", err)
	}
	if _, err := verify.Replay(t.Context(), verify.ExportSource(iotestErrReader{}), noReeval); !errors.Is(err, verify.ErrSource) {
		t.Errorf("Replay(failing reader) = %v, want ErrSource", err)
	}
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errors.New("read failed") }

// FuzzVerifyExport mutates a valid export. Replay must never panic, and a
// mutated export that verifies must mean what the original means: its
// re-export is the original's, or a prefix of it in whole lines (a
// truncated tail, which only an anchor can detect).
func FuzzVerifyExport(f *testing.F) {
	c := baseChain(f)
	exp := exportOf(f, c.src)
	f.Add(exp)
	f.Add([]byte(""))
	f.Add(bytes.Replace(exp, []byte(`"seq":6`), []byte(`"seq":6.0`), 1))
	f.Add(bytes.Replace(exp, []byte(`"h3"`), []byte(`"h4"`), 1))
	f.Add(exp[:len(exp)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := verify.Replay(context.Background(), verify.ExportSource(bytes.NewReader(data)), noReeval)
		if err != nil {
			t.Fatalf("Replay = %v", err)
		}
		if !rep.OK() {
			return
		}
		again := exportOf(t, verify.ExportSource(bytes.NewReader(data)))
		if !bytes.HasPrefix(exp, again) || (len(again) > 0 && again[len(again)-1] != '\n') {
			t.Fatalf("mutated export verifies but means something else:\n%s\nwant a prefix of\n%s", again, exp)
		}
	})
}
