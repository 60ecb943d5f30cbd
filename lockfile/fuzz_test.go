package lockfile_test

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
)

// FuzzParseLock: Parse never panics, errors are placed ErrorLists, and
// Marshal(Parse(x)) is a fixed point that parses to an equal lock.
func FuzzParseLock(f *testing.F) {
	if data, err := os.ReadFile(exampleLock); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		`{"lock_version":1,"agents":{}}`,
		`{"lock_version":1,"agents":{"a":{"agent_version":"1.0.0","prompt_path":"p.md","prompt_hash":"sha256:` +
			"0000000000000000000000000000000000000000000000000000000000000000" + `"}}}`,
		`{"lock_version":1,"agents":{"a":{"agent_version":"1.0.0","prompt_path":"p.md","prompt_hash":"sha512:00"}}}`,
		`{"lock_version":2}`, `null`, "\xef\xbb\xbf{}", `{"lock_version":1,"agents":{}} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lk, err := lockfile.Parse("f.json", data)
		if err != nil {
			var list manifest.ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %T %v is not a non-empty ErrorList", err, err)
			}
			return
		}
		out := lk.Marshal()
		again, err := lockfile.Parse("again.json", out)
		if err != nil {
			t.Fatalf("Marshal output refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, lk) {
			t.Fatalf("round trip changed the lock")
		}
		if !bytes.Equal(again.Marshal(), out) {
			t.Fatalf("Marshal is not a fixed point")
		}
	})
}
