package handoff

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// uuidV4 is canonicalUUIDv4 as it was written with the uuid package.
func uuidV4(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	u, err := uuid.Parse(s)
	if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != strings.ToLower(s) {
		return "", false
	}
	return u.String(), true
}

func checkUUID(t *testing.T, s string) {
	got, gotOK := canonicalUUIDv4(s)
	want, wantOK := uuidV4(s)
	if got != want || gotOK != wantOK {
		t.Fatalf("canonicalUUIDv4(%q) = %q, %v; the uuid package says %q, %v", s, got, gotOK, want, wantOK)
	}
}

// grammars are the byte loops of grammar.go beside the regular
// expressions they implement.
var grammars = []struct {
	name string
	re   *regexp.Regexp
	fn   func(string) bool
}{
	{"agent id", regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`), isAgentID},
	{"RFC 3339", regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$`), isRFC3339},
	{"SHA-256 hex", regexp.MustCompile(`^[0-9a-f]{64}$`), isSHA256Hex},
	{"short hash", regexp.MustCompile(`^[0-9a-f]{7,40}$`), func(s string) bool { return isLowerHexN(s, 7, 40) }},
	{"field key", regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$`), isFieldKey},
	{"decimal integer", regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`), isDecimalInt},
}

var grammarCases = []string{
	"", "-", "a", "A", "0", "-0", "00", "-00", "01", "10", "-10", "9", "a-b", "-ab", "ab-", "a_b", "a b", "a\n",
	"domain-05-product", "Domain", "é", "a\x00",
	"2026-02-11T00:45:02Z", "2026-02-11T00:45:02.123456789Z", "2026-02-11T00:45:02.1234567890Z",
	"2026-02-11T00:45:02.Z", "2026-02-11T00:45:02+01:00", "2026-02-11T00:45:02-01:00", "2026-02-11T00:45:02+0100",
	"2026-02-11t00:45:02Z", "2026-02-11T00:45:02z", "2026-02-11T00:45:02Z\n", "2026-02-11T00:45:02", "2026-2-11T00:45:02Z",
	"2026-02-11T00:45:02.5+01:00", "2026-02-11T00:45:02+01:00x", "２026-02-11T00:45:02Z",
	"e504dec08fc5ea57ae16ddad5878f41efe921bab1c62070934ad9692f50c509d",
	"E504dec08fc5ea57ae16ddad5878f41efe921bab1c62070934ad9692f50c509d",
	"e504dec08fc5ea57ae16ddad5878f41efe921bab1c62070934ad9692f50c509",
	"e504dec08fc5ea57ae16ddad5878f41efe921bab1c62070934ad9692f50c509d0",
	"abc1234", "abc123", "0123456789012345678901234567890123456789", "01234567890123456789012345678901234567890",
	"_", "_-", "x234567890123456789012345678901234567890123456789012345678901234",
	"x2345678901234567890123456789012345678901234567890123456789012345",
	"550e8400-e29b-41d4-a716-446655440000", "550E8400-E29B-41D4-A716-446655440000", "550e8400-e29b-41d4-c716-446655440000",
	"550e8400-e29b-31d4-a716-446655440000", "550e8400-e29b-41d4-b716-44665544000g", "550e8400xe29b-41d4-a716-446655440000",
	"{550e8400-e29b-41d4-a716-446655440000}", "urn:uuid:550e8400-e29b-41d4-a716-44665544", "550e8400-e29b-41d4-8716-446655440000",
	"550e8400-e29b-41d4-9716-4466554400-0", "550e8400-e29b-41d4-B716-446655440000", "550e8400-e29b-41d4-7716-446655440000",
}

func TestGrammars(t *testing.T) {
	for _, s := range grammarCases {
		checkUUID(t, s)
	}
	for _, g := range grammars {
		for _, s := range grammarCases {
			if got, want := g.fn(s), g.re.MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, the regular expression says %v", g.name, s, got, want)
			}
		}
	}
}

func FuzzGrammars(f *testing.F) {
	for _, s := range grammarCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkUUID(t, s)
		for _, g := range grammars {
			if got, want := g.fn(s), g.re.MatchString(s); got != want {
				t.Fatalf("%s(%q) = %v, the regular expression says %v", g.name, s, got, want)
			}
		}
	})
}
