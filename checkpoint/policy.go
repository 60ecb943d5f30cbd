package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// MaxPolicySize is the largest policy file ParsePolicy reads.
const MaxPolicySize = 1 << 20

// ErrPolicy is returned (wrapped) by Policy.Open for a checkpoint whose
// signatures do not satisfy the policy: no log signature, or too few
// witness cosignatures for the quorum.
var ErrPolicy = errors.New("checkpoint does not satisfy the policy")

// ErrPolicySyntax is returned (wrapped, naming the line) by ParsePolicy.
var ErrPolicySyntax = errors.New("policy")

// A Policy says which logs and witnesses a verifier trusts and how many
// witnesses must have cosigned a checkpoint. Its text is the tlog-policy
// syntax Sigsum and the C2SP witness ecosystem use, one rule a line
// ('#' starts a comment):
//
//	log VKEY [URL]                  a log key (at least one)
//	witness NAME VKEY [URL]         a witness: its cosignature key (0x04) or an Ed25519 note key
//	group NAME K|all|any MEMBER...  K of the members (witnesses or earlier groups)
//	quorum NAME|none                the witness or group that must be satisfied
//
// VKEY is a note verifier key, name+hash+base64(type||key).
type Policy struct {
	Logs      []PolicyKey
	Witnesses []PolicyKey // Name is the policy's name for the witness
	Quorum    string      // "" or "none": no witness needed
	groups    map[string]*policyGroup
	byName    map[string]*PolicyKey
}

// A PolicyKey is a log or witness of a policy.
type PolicyKey struct {
	Name     string // witness name in the policy; the key's name for a log
	Key      string // its verifier key
	URL      string // optional: where it is reached (a log's prefix, a witness's submission URL)
	Verifier note.Verifier
}

type policyGroup struct {
	k       int
	members []string
}

// ParsePolicy parses a policy file. Every error wraps ErrPolicySyntax and
// names the line.
func ParsePolicy(data []byte) (*Policy, error) {
	if len(data) > MaxPolicySize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrPolicySyntax, MaxPolicySize)
	}
	p := &Policy{groups: map[string]*policyGroup{}, byName: map[string]*PolicyKey{}}
	quorumSet := false
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrPolicySyntax, n, fmt.Sprintf(format, a...))
		}
		taken := func(name string) bool {
			_, g := p.groups[name]
			_, w := p.byName[name]
			return g || w || name == "none"
		}
		switch f[0] {
		case "log":
			if len(f) < 2 || len(f) > 3 {
				return nil, bad("want: log VKEY [URL]")
			}
			v, err := NewVerifier(f[1])
			if err != nil {
				return nil, bad("log key: %v", err)
			}
			k := PolicyKey{Name: v.Name(), Key: f[1], Verifier: v}
			if len(f) == 3 {
				k.URL = f[2]
			}
			p.Logs = append(p.Logs, k)
		case "witness":
			if len(f) < 3 || len(f) > 4 {
				return nil, bad("want: witness NAME VKEY [URL]")
			}
			if taken(f[1]) {
				return nil, bad("name %q used twice", f[1])
			}
			v, err := NewVerifier(f[2])
			if err != nil {
				return nil, bad("witness %s key: %v", f[1], err)
			}
			k := PolicyKey{Name: f[1], Key: f[2], Verifier: v}
			if len(f) == 4 {
				k.URL = f[3]
			}
			p.Witnesses = append(p.Witnesses, k)
			p.byName[f[1]] = &p.Witnesses[len(p.Witnesses)-1]
		case "group":
			if len(f) < 4 {
				return nil, bad("want: group NAME K|all|any MEMBER...")
			}
			if taken(f[1]) {
				return nil, bad("name %q used twice", f[1])
			}
			members := f[3:]
			seen := map[string]bool{}
			for _, m := range members {
				if !taken(m) || m == "none" {
					return nil, bad("group %s: member %q is not a witness or group defined above", f[1], m)
				}
				if seen[m] {
					return nil, bad("group %s: member %q twice", f[1], m)
				}
				seen[m] = true
			}
			g := &policyGroup{members: members}
			switch f[2] {
			case "all":
				g.k = len(members)
			case "any":
				g.k = 1
			default:
				k, err := strconv.Atoi(f[2])
				if err != nil || k < 1 || k > len(members) {
					return nil, bad("group %s: threshold %q must be all, any or 1..%d", f[1], f[2], len(members))
				}
				g.k = k
			}
			p.groups[f[1]] = g
		case "quorum":
			if len(f) != 2 {
				return nil, bad("want: quorum NAME|none")
			}
			if quorumSet {
				return nil, bad("a second quorum")
			}
			if f[1] != "none" && !taken(f[1]) {
				return nil, bad("quorum %q is not a witness or group defined above", f[1])
			}
			quorumSet = true
			p.Quorum = f[1]
		default:
			return nil, bad("unknown rule %q (want log, witness, group or quorum)", f[0])
		}
	}
	// The witnesses slice may have moved while growing: rebuild byName.
	for i := range p.Witnesses {
		p.byName[p.Witnesses[i].Name] = &p.Witnesses[i]
	}
	if len(p.Logs) == 0 {
		return nil, fmt.Errorf("%w: no log key", ErrPolicySyntax)
	}
	if !quorumSet {
		return nil, fmt.Errorf("%w: no quorum line (write \"quorum none\" to need no witness)", ErrPolicySyntax)
	}
	if p.Quorum == "none" {
		p.Quorum = ""
	}
	return p, nil
}

// Verifiers returns the verifiers of every log and witness of p.
func (p *Policy) Verifiers() note.Verifiers {
	var vs []note.Verifier
	for _, k := range p.Logs {
		vs = append(vs, k.Verifier)
	}
	for _, k := range p.Witnesses {
		vs = append(vs, k.Verifier)
	}
	return note.VerifierList(vs...)
}

// LogKey returns the first log's verifier key.
func (p *Policy) LogKey() string { return p.Logs[0].Key }

// satisfied reports whether name (a witness or group) holds given the
// witnesses whose cosignature verified.
func (p *Policy) satisfied(name string, signed map[string]bool, depth int) bool {
	if depth > 64 {
		return false
	}
	if _, ok := p.byName[name]; ok {
		return signed[name]
	}
	g := p.groups[name]
	if g == nil {
		return false
	}
	n := 0
	for _, m := range g.members {
		if p.satisfied(m, signed, depth+1) {
			n++
		}
	}
	return n >= g.k
}

// Open verifies the signed checkpoint msg against p: a signature of one
// of its logs (ErrUnknownKey otherwise), every signature from a key of p
// valid (ErrBadSignature), and the witnesses whose cosignature verified
// satisfy the quorum (ErrPolicy, naming who cosigned). Signatures of other
// keys, of any type, are ignored. origin, when set, must be the
// checkpoint's. Cosigners lists the policy names of the witnesses that
// cosigned.
func (p *Policy) Open(msg []byte, origin string) (cp *Checkpoint, cosigners []string, err error) {
	cp, err = Open(msg, p.Verifiers(), origin)
	if err != nil {
		return nil, nil, err
	}
	verified := map[string]bool{}
	for _, s := range cp.Signers {
		verified[s] = true
	}
	logSigned := false
	for _, k := range p.Logs {
		if verified[fmt.Sprintf("%s+%08x", k.Verifier.Name(), k.Verifier.KeyHash())] {
			logSigned = true
		}
	}
	if !logSigned {
		return nil, nil, fmt.Errorf("%w: signed by no log key of the policy (only by witnesses %s)", ErrUnknownKey, strings.Join(cp.Signers, ", "))
	}
	signed := map[string]bool{}
	for _, w := range p.Witnesses {
		if verified[fmt.Sprintf("%s+%08x", w.Verifier.Name(), w.Verifier.KeyHash())] {
			signed[w.Name] = true
			cosigners = append(cosigners, w.Name)
		}
	}
	if p.Quorum != "" && !p.satisfied(p.Quorum, signed, 0) {
		who := "none"
		if len(cosigners) > 0 {
			who = strings.Join(cosigners, ", ")
		}
		return cp, cosigners, fmt.Errorf("%w: quorum %s not met at size %d (cosigned by: %s)", ErrPolicy, p.Quorum, cp.Size, who)
	}
	return cp, cosigners, nil
}

// String returns a one-line summary of the quorum rule.
func (p *Policy) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d log key(s), %d witness(es), quorum ", len(p.Logs), len(p.Witnesses))
	if p.Quorum == "" {
		b.WriteString("none")
	} else {
		b.WriteString(p.Quorum)
		if g := p.groups[p.Quorum]; g != nil {
			fmt.Fprintf(&b, " (%d of %s)", g.k, strings.Join(slices.Clone(g.members), ", "))
		}
	}
	return b.String()
}
