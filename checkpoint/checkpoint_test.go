package checkpoint_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
)

func TestParseText(t *testing.T) {
	root := base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name, text string
		want       error
	}{
		{"ok", "example.com/log\n10\n" + root + "\n", nil},
		{"ok zero", "example.com/log\n0\n" + root + "\n", nil},
		{"ok extension", "example.com/log\n10\n" + root + "\nx y z\n", nil},
		{"non-canonical size 010", "example.com/log\n010\n" + root + "\n", checkpoint.ErrNonCanonicalSize},
		{"size plus", "example.com/log\n+10\n" + root + "\n", checkpoint.ErrMalformed},
		{"size negative", "example.com/log\n-1\n" + root + "\n", checkpoint.ErrMalformed},
		{"size hex", "example.com/log\n0x10\n" + root + "\n", checkpoint.ErrMalformed},
		{"size too large", "example.com/log\n9223372036854775808\n" + root + "\n", checkpoint.ErrMalformed},
		{"empty origin", "\n10\n" + root + "\n", checkpoint.ErrMalformed},
		{"two lines", "example.com/log\n10\n", checkpoint.ErrMalformed},
		{"no final newline", "example.com/log\n10\n" + root, checkpoint.ErrMalformed},
		{"root 31 bytes", "example.com/log\n10\n" + base64.StdEncoding.EncodeToString(make([]byte, 31)) + "\n", checkpoint.ErrMalformed},
		{"root unpadded", "example.com/log\n10\n" + strings.TrimRight(root, "=") + "\n", checkpoint.ErrMalformed},
		{"root url base64", "example.com/log\n10\n" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)) + "\n", checkpoint.ErrMalformed},
		{"empty extension", "example.com/log\n10\n" + root + "\n\nx\n", checkpoint.ErrMalformed},
		// tlog.FormatTree's text is well-formed C2SP, with the origin
		// "go.sum database tree": why Make builds its own text.
		{"go sumdb flavour", string(tlog.FormatTree(tlog.Tree{N: 10})), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := checkpoint.ParseText([]byte(tt.text))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("ParseText = %v, want %v", err, tt.want)
			}
			if err == nil {
				back, err := c.Text()
				if err != nil || string(back) != tt.text {
					t.Fatalf("Text() = %q, %v; want %q", back, err, tt.text)
				}
			}
		})
	}
}

// TestMakeOpensWithNote: a checkpoint made by govledger is a signed note
// that golang.org/x/mod/sumdb/note opens, with the C2SP three-line body.
func TestMakeOpensWithNote(t *testing.T) {
	s, v, _ := testKey(t, "example.com/ledger", "k1")
	l := openLedger(t, "example.com/ledger")
	fill(t, l, 5, "h")
	before, _ := l.TreeSize(t.Context())
	msg, err := checkpoint.Make(t.Context(), l, s)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := l.TreeSize(t.Context()); after != before {
		t.Fatalf("Make added entries: size %d -> %d", before, after)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open: %v", err)
	}
	root, _ := l.TreeHash(t.Context(), 5)
	want := "example.com/ledger\n5\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"
	if n.Text != want {
		t.Fatalf("note text = %q, want %q", n.Text, want)
	}
	if len(n.Sigs) != 1 || n.Sigs[0].Name != "example.com/ledger" {
		t.Fatalf("sigs = %+v", n.Sigs)
	}
	cp, err := checkpoint.Open(msg, note.VerifierList(v), "example.com/ledger")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size != 5 || cp.Hash != root || cp.Origin != "example.com/ledger" || !bytes.Equal(cp.Signed, msg) {
		t.Fatalf("Open = %+v", cp)
	}
}

func TestOpenErrors(t *testing.T) {
	s, v, _ := testKey(t, "example.com/ledger", "k1")
	other, otherV, _ := testKey(t, "example.com/ledger", "k2")
	good := &checkpoint.Checkpoint{Origin: "example.com/ledger", Size: 3, Hash: tlog.RecordHash([]byte("x"))}
	signed, err := checkpoint.Sign(good, s)
	if err != nil {
		t.Fatal(err)
	}
	// A signature made by another key but labelled with the trusted key's
	// name and key hash.
	bySOther, _ := checkpoint.Sign(good, other)
	forged := relabel(t, bySOther, v.KeyHash())
	nonCanon := []byte(strings.Replace(string(mustText(t, good)), "\n3\n", "\n03\n", 1))
	nonCanonSigned, err := note.Sign(&note.Note{Text: string(nonCanon)}, s)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		msg  []byte
		vs   note.Verifiers
		orig string
		want error
	}{
		{"ok", signed, note.VerifierList(v), "example.com/ledger", nil},
		{"ok any origin", signed, note.VerifierList(v), "", nil},
		{"ok extra unknown signature", append(append([]byte(nil), signed...), sigLine(t, bySOther)...), note.VerifierList(v), "", nil},
		{"wrong key", signed, note.VerifierList(otherV), "", checkpoint.ErrUnknownKey},
		{"no keys", signed, nil, "", checkpoint.ErrUnknownKey},
		{"signature from another key", forged, note.VerifierList(v), "", checkpoint.ErrBadSignature},
		{"wrong origin", signed, note.VerifierList(v), "example.com/other", checkpoint.ErrOrigin},
		{"non-canonical size", nonCanonSigned, note.VerifierList(v), "", checkpoint.ErrNonCanonicalSize},
		{"flipped root", flipRoot(t, signed), note.VerifierList(v), "", checkpoint.ErrBadSignature},
		{"no signature", mustText(t, good), note.VerifierList(v), "", checkpoint.ErrMalformed},
		{"control char", append([]byte("\x01"), signed...), note.VerifierList(v), "", checkpoint.ErrMalformed},
		{"too large", bytes.Repeat([]byte("a"), checkpoint.MaxCheckpointSize+1), note.VerifierList(v), "", checkpoint.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkpoint.Open(tt.msg, tt.vs, tt.orig)
			if (tt.want == nil) != (err == nil) || !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
		})
	}
}

func mustText(t *testing.T, c *checkpoint.Checkpoint) []byte {
	b, err := c.Text()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sigLine returns the signature line of a singly signed note.
func sigLine(t *testing.T, msg []byte) []byte {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	return msg[i+2:]
}

// relabel rewrites the key hash of a note's only signature.
func relabel(t *testing.T, msg []byte, hash uint32) []byte {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	line := strings.TrimSuffix(string(msg[i+2:]), "\n")
	sp := strings.LastIndexByte(line, ' ')
	raw, err := base64.StdEncoding.DecodeString(line[sp+1:])
	if err != nil {
		t.Fatal(err)
	}
	raw[0], raw[1], raw[2], raw[3] = byte(hash>>24), byte(hash>>16), byte(hash>>8), byte(hash)
	return []byte(string(msg[:i+2]) + line[:sp+1] + base64.StdEncoding.EncodeToString(raw) + "\n")
}

// flipRoot changes one bit of the root line, keeping the signature.
func flipRoot(t *testing.T, msg []byte) []byte {
	lines := strings.SplitN(string(msg), "\n", 4)
	raw, _ := base64.StdEncoding.DecodeString(lines[2])
	raw[0] ^= 1
	lines[2] = base64.StdEncoding.EncodeToString(raw)
	return []byte(strings.Join(lines, "\n"))
}

func FuzzParseText(f *testing.F) {
	root := base64.StdEncoding.EncodeToString(make([]byte, 32))
	f.Add([]byte("example.com/log\n10\n" + root + "\n"))
	f.Add([]byte("example.com/log\n010\n" + root + "\next\n"))
	f.Add([]byte("o\n0\n" + root + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := checkpoint.ParseText(data)
		if err != nil {
			return
		}
		back, err := c.Text()
		if err != nil {
			t.Fatalf("accepted %q but Text fails: %v", data, err)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("round trip %q -> %q", data, back)
		}
	})
}

func FuzzOpen(f *testing.F) {
	s, v, _ := testKey(f, "example.com/ledger", "k1")
	signed, _ := checkpoint.Sign(&checkpoint.Checkpoint{Origin: "example.com/ledger", Size: 7}, s)
	f.Add(signed)
	f.Add([]byte("x\n\n— a AAAAAAA=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := checkpoint.Open(data, note.VerifierList(v), "")
		if err != nil {
			return
		}
		// Whatever opens re-signs to a message that opens to the same value.
		re, err := checkpoint.Sign(c, s)
		if err != nil {
			t.Fatalf("re-sign: %v", err)
		}
		c2, err := checkpoint.Open(re, note.VerifierList(v), "")
		if err != nil || c2.Size != c.Size || c2.Hash != c.Hash || c2.Origin != c.Origin {
			t.Fatalf("round trip: %v", err)
		}
	})
}
