package handoff

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/govledger/govledger/internal/strictjson"
)

// FuzzJSONTree holds jsonTree's single-pass fast path to the checked path:
// whatever the fast path accepts, strictjson.Check accepts, and both read
// it into the same nodes.
func FuzzJSONTree(f *testing.F) {
	for _, dir := range []string{"governed", "vbw"} {
		for _, kind := range []string{"valid", "hostile"} {
			paths, _ := filepath.Glob(filepath.Join("..", "testdata", "handoffs", dir, kind, "*"))
			for _, p := range paths {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
		}
	}
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[9007199254740992]`, `{"a":1} x`, "\xef\xbb\xbf{}", `1e400`, `"\udc00"`, "[\"\xff\"]", ``, ` `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast := jsonTreeFast(data)
		slow, err := jsonTreeChecked(data)
		if fast == nil {
			return
		}
		if cerr := strictjson.Check("", data); cerr != nil {
			t.Fatalf("fast path accepted %q; strictjson.Check: %v", data, cerr)
		}
		if err != nil {
			t.Fatalf("fast path accepted %q; checked path: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast and checked trees differ for %q", data)
		}
	})
}
