package bolt_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// TestDurableOptions pins that a writable ledger's bbolt file syncs every
// commit: not NoSync (acknowledging before the disk has it), not
// NoFreelistSync, not NoGrowSync — after creating a file, opening an
// existing one, a compaction (a redaction renames a new file over the
// ledger) and an in-place upgrade of a format 5 file.
func TestDurableOptions(t *testing.T) {
	check := func(when string, l *ledger.Ledger) {
		t.Helper()
		noSync, noFreelistSync, noGrowSync := bolt.SyncOptions(l.Driver().(*bolt.Driver))
		if noSync || noFreelistSync || noGrowSync {
			t.Errorf("%s: NoSync %v, NoFreelistSync %v, NoGrowSync %v; want all false", when, noSync, noFreelistSync, noGrowSync)
		}
	}
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("created", l)
	var seqs []uint64
	for i := range 3 {
		seqs = append(seqs, bolttest.AppendHandoff(t, l, handoff(i)).Entry.Seq)
	}
	l.Close()
	if l, err = bolt.Open(path, nil); err != nil {
		t.Fatal(err)
	}
	check("reopened", l)
	if _, err := l.Redact(context.Background(), seqs[1], "pii"); err != nil {
		t.Fatal(err)
	}
	check("after a compaction", l)
	bolttest.AppendHandoff(t, l, handoff(9))
	l.Close()

	up, err := bolt.Open(format5Fixture(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	check("after an upgrade", up)
	up.Close()
}

// TestNoSyncSites pins, in the source, every place ledger/bolt sets a
// bbolt sync option: the compaction's temporary copy is built with NoSync
// (one sync at the end, before the rename, replaces one per page batch)
// and set back before that sync; openBolt's NoSync is the test-only fault
// switch, false outside a govledger_faults build. A new site (a
// NoSync: true on a file whose commits are acknowledged) fails here and
// must be argued for.
func TestNoSyncSites(t *testing.T) {
	want := []string{
		"compact: NoSync: true",
		"compact: dst.NoSync = false",
		"openBolt: NoSync: fault.On(fault.BoltNoSync)",
	}
	var got []string
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	src := func(n ast.Node) string {
		var b strings.Builder
		printer.Fprint(&b, fset, n)
		return b.String()
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, b, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && isSyncOption(k.Name) {
						got = append(got, fn.Name.Name+": "+src(n))
					}
				case *ast.AssignStmt:
					for _, lhs := range n.Lhs {
						if s, ok := lhs.(*ast.SelectorExpr); ok && isSyncOption(s.Sel.Name) {
							got = append(got, fn.Name.Name+": "+src(n))
						}
					}
				}
				return true
			})
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("bbolt sync options set in ledger/bolt:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func isSyncOption(name string) bool {
	return name == "NoSync" || name == "NoFreelistSync" || name == "NoGrowSync"
}
