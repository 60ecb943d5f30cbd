package checkpoint_test

import (
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
)

func TestGenerateKeyNames(t *testing.T) {
	for _, name := range []string{"", "a b", "a+b", "a\tb"} {
		if _, _, err := checkpoint.GenerateKey(detRand{"x"}, name); !errors.Is(err, checkpoint.ErrKeyFormat) {
			t.Errorf("GenerateKey(%q) = %v, want ErrKeyFormat", name, err)
		}
	}
}

func TestLoadSignerPermissions(t *testing.T) {
	skey, vkey, err := checkpoint.GenerateKey(detRand{"p"}, "example.com/ledger")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o640, false}, {0o604, false}, {0o644, false}, {0o660, false}, {0o700, true}, {0o666, false}} {
		path := filepath.Join(dir, "k"+tt.mode.String()+".key")
		if err := os.WriteFile(path, []byte(skey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tt.mode); err != nil {
			t.Fatal(err)
		}
		s, err := checkpoint.LoadSigner(path, "")
		if tt.ok {
			if err != nil {
				t.Fatalf("mode %v: LoadSigner = %v", tt.mode, err)
			}
			v, _ := note.NewVerifier(vkey)
			if s.KeyHash() != v.KeyHash() || s.Name() != v.Name() {
				t.Fatalf("mode %v: signer %s+%08x, want %s+%08x", tt.mode, s.Name(), s.KeyHash(), v.Name(), v.KeyHash())
			}
		} else if !errors.Is(err, checkpoint.ErrKeyPermissions) {
			t.Fatalf("mode %v: LoadSigner = %v, want ErrKeyPermissions", tt.mode, err)
		}
	}
	if _, err := checkpoint.LoadSigner(dir, ""); !errors.Is(err, checkpoint.ErrKeyPermissions) {
		t.Fatalf("LoadSigner(dir) = %v, want ErrKeyPermissions", err)
	}
}

// TestOpenSSHKeys: an OpenSSH ed25519 private key signs checkpoints that
// its "ssh-ed25519 AAAA…" public key, converted under the same name, opens.
func TestOpenSSHKeys(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(detRand{"ssh"})
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test key")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.LoadSigner(path, ""); !errors.Is(err, checkpoint.ErrKeyFormat) {
		t.Fatalf("OpenSSH key without a name: %v, want ErrKeyFormat", err)
	}
	s, err := checkpoint.LoadSigner(path, "example.com/ledger")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	authorized := ssh.MarshalAuthorizedKey(sp) // "ssh-ed25519 AAAA...\n"
	v, vkey, err := checkpoint.ParseVerifier(append(authorized[:len(authorized)-1], " me@host\n"...), "example.com/ledger")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := note.NewEd25519VerifierKey("example.com/ledger", pub)
	if vkey != want {
		t.Fatalf("vkey = %q, want %q", vkey, want)
	}
	msg, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: "example.com/ledger", Size: 1}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Open(msg, note.VerifierList(v), "example.com/ledger"); err != nil {
		t.Fatalf("Open with converted ssh key: %v", err)
	}
	// The same key under another name is another note key.
	v2, _, _ := checkpoint.ParseVerifier(authorized, "other")
	if _, err := checkpoint.Open(msg, note.VerifierList(v2), ""); !errors.Is(err, checkpoint.ErrUnknownKey) {
		t.Fatalf("Open with renamed key = %v, want ErrUnknownKey", err)
	}
}

func TestParseVerifierErrors(t *testing.T) {
	skey, vkey, _ := checkpoint.GenerateKey(detRand{"v"}, "n")
	for _, tt := range []struct {
		name, in string
		ok       bool
	}{
		{"note key", vkey, true},
		{"note key with newline", vkey + "\n", true},
		{"signer key", skey, false},
		{"garbage", "hello", false},
		{"bad hash", "n+00000000+" + vkey[len("n+00000000+"):], false},
		{"ssh rsa", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDGdu", false},
		{"empty", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := checkpoint.ParseVerifier([]byte(tt.in), "n")
			if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, checkpoint.ErrKeyFormat)) {
				t.Fatalf("ParseVerifier(%q) = %v", tt.in, err)
			}
		})
	}
}

// TestVerifierKeyOf: the verifier key a signer knows is the one keygen
// wrote beside it, for note keys and OpenSSH keys alike, so a server given
// only --key tells its viewer the right key.
func TestVerifierKeyOf(t *testing.T) {
	skey, vkey, err := checkpoint.GenerateKey(detRand{"vk"}, "example.com/ledger")
	if err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.ParseSigner([]byte(skey+"\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := checkpoint.VerifierKeyOf(s); !ok || got != vkey {
		t.Errorf("VerifierKeyOf(note key) = %q, %v; want %q", got, ok, vkey)
	}
	pub, priv, err := ed25519.GenerateKey(detRand{"ssh-vk"})
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err = checkpoint.ParseSigner(pem.EncodeToMemory(block), "example.com/ssh")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := note.NewEd25519VerifierKey("example.com/ssh", pub)
	if got, ok := checkpoint.VerifierKeyOf(s); !ok || got != want {
		t.Errorf("VerifierKeyOf(OpenSSH key) = %q, %v; want %q", got, ok, want)
	}
	// What it returns verifies what the signer signs.
	v, err := note.NewVerifier(want)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: "example.com/ssh", Size: 1}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Open(msg, note.VerifierList(v), "example.com/ssh"); err != nil {
		t.Errorf("Open with VerifierKeyOf's key: %v", err)
	}
}
