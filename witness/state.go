package witness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/internal/atomicfile"
	"github.com/govledger/govledger/internal/strictjson"
)

// StateSchema names the state file's format.
const StateSchema = "govledger.witness-state/v1"

// MaxStateFile bounds a state file read by LoadState.
const MaxStateFile = 4 << 20

// A state file remembers, per witness, the size of the last checkpoint of
// the log it cosigned (or told the log it was at), so that a restarted log
// sends the right old size and consistency proof at once instead of
// learning it from a 409:
//
//	{"schema": "govledger.witness-state/v1", "origin": "example.com/log",
//	 "witnesses": [{"key": "w.example+7f2e1a0b+BDhV…", "name": "alpha", "size": 300}]}
//
// Witnesses are known by their verifier key (the policy's names are local
// to the policy file); name is for the reader.
type stateFile struct {
	Schema    string         `json:"schema"`
	Origin    string         `json:"origin"`
	Witnesses []stateWitness `json:"witnesses"`
}

type stateWitness struct {
	Key  string `json:"key"`
	Name string `json:"name,omitzero"`
	Size uint64 `json:"size"`
}

// LoadState reads the state file at path for the log origin: the size each
// witness last cosigned, by the witness's verifier key. A missing file is
// an empty state. A file of another log, or one that is not a state file,
// is an error naming path.
func LoadState(path, origin string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]uint64{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readAtMost(f, MaxStateFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var st stateFile
	if err := strictjson.Unmarshal(path, data, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Schema != StateSchema:
		return nil, fmt.Errorf("%s: schema %q: want %q", path, st.Schema, StateSchema)
	case st.Origin != origin:
		return nil, fmt.Errorf("%s: the witness state of log %q, not of this log (%q): give each log its own folder", path, st.Origin, origin)
	}
	sizes := make(map[string]uint64, len(st.Witnesses))
	for i, w := range st.Witnesses {
		if w.Key == "" {
			return nil, fmt.Errorf("%s: witnesses[%d]: no key", path, i)
		}
		if _, dup := sizes[w.Key]; dup {
			return nil, fmt.Errorf("%s: witnesses[%d]: key %s given twice", path, i, w.Key)
		}
		sizes[w.Key] = w.Size
	}
	return sizes, nil
}

// SaveState writes sizes (by witness verifier key) as the state file at
// path for the log origin: mode 0600, atomically and durably (a temporary
// file, fsync, rename, folder fsync), so a crash leaves the old state or
// the new. names, when set, gives a witness's name in the policy, for the
// reader.
func SaveState(path, origin string, sizes map[string]uint64, names map[string]string) error {
	st := stateFile{Schema: StateSchema, Origin: origin, Witnesses: []stateWitness{}}
	for k, n := range sizes {
		st.Witnesses = append(st.Witnesses, stateWitness{Key: k, Name: names[k], Size: n})
	}
	slices.SortFunc(st.Witnesses, func(a, b stateWitness) int { return strings.Compare(a.Key, b.Key) })
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(data, '\n'), 0o600)
}

func readAtMost(r io.Reader, n int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > n {
		return nil, fmt.Errorf("over %d bytes: not a witness state file", n)
	}
	return data, nil
}
