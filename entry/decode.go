package entry

import (
	"bytes"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/reason"
)

// Decode parses stored entry bytes strictly: they must be exactly the
// canonical form of an entry with known fields only that passes Validate.
//
// Bytes already in canonical form (every stored entry of a sound ledger)
// are read in one pass that accepts nothing but the canonical form of each
// member; anything that pass does not accept is decoded by the general
// path (decodeGeneral), which gives the error. Both yield the same Entry:
// TestDecodePaths and FuzzDecodePaths hold them to it.
func Decode(data []byte) (*Entry, error) {
	if e, ok := decodeCanonical(data); ok {
		if err := e.Validate(); err != nil {
			return nil, err
		}
		return e, nil
	}
	return decodeGeneral(data)
}

// decodeGeneral is Decode by unmarshaling and marshaling again: it accepts
// the same entries as the canonical pass and says what is wrong with the
// others.
func decodeGeneral(data []byte) (*Entry, error) {
	var e Entry
	// json v2 refuses duplicate names, invalid UTF-8, trailing data and
	// unknown members; number range is checked by Validate and by the
	// canonical comparison below.
	if err := json.Unmarshal(data, &e, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	c, err := e.marshal()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !bytes.Equal(c, data) {
		return nil, ErrNotCanonical
	}
	if e.Inputs != nil {
		ci, err := strictjson.CanonicalizeBytes(e.Inputs)
		if err != nil || !bytes.Equal(ci, e.Inputs) {
			return nil, fmt.Errorf("%w: inputs are not canonical JSON", ErrNotCanonical)
		}
	}
	return &e, nil
}

// The canonical pass. Members come in canonical key order (each name at
// most once, later names only), every value in the one form marshaling an
// Entry writes: strings with the minimal JCS escapes and valid UTF-8,
// integers without sign, leading zeros, fraction or exponent (a sign only
// on a negative signed field), hashes as 64 lowercase hex digits, no
// member that omitzero would drop. inputs must be an object whose
// canonical form the pass can see without reordering (ASCII names in
// order, integers below 10^15, no other numbers). The pass reports false
// for anything else; it never errs on the side of accepting.

// member indexes, in canonical key order.
const (
	mAgent = iota
	mBlocks
	mContentSHA256
	mDecision
	mDecisionSeq
	mDurationMS
	mFormat
	mHandoffID
	mIdempotencyKey
	mInputs
	mKind
	mLifts
	mLockSHA256
	mManifestSHA256
	mNewKey
	mNote
	mOldKey
	mOutputSHA256
	mPayloadSHA256
	mPayloadSize
	mPrev
	mReasons
	mRedactedSeq
	mSeq
	mSize
	mSource
	mStatus
	mSubmitter
	mTarget
	mTime
	mTraceParent
	mV
	mWhat
	mWorkflowID
	numMembers
)

var memberNames = [numMembers]string{
	"agent", "blocks", "content_sha256", "decision", "decision_seq", "duration_ms", "format", "handoff_id",
	"idempotency_key", "inputs", "kind", "lifts", "lock_sha256", "manifest_sha256", "new_key", "note",
	"old_key", "output_sha256", "payload_sha256", "payload_size", "prev", "reasons", "redacted_seq", "seq",
	"size", "source", "status", "submitter", "target",
	"time", "traceparent", "v", "what", "workflow_id",
}

// requiredMembers are those marshaling writes even when zero.
const requiredMembers = 1<<mKind | 1<<mPrev | 1<<mSeq | 1<<mTime | 1<<mV

// entryBox holds an Entry and what its pointer fields point to, so that a
// decoded entry is one allocation (and its strings one more).
type entryBox struct {
	e       Entry
	hashes  [5]Hash  // one per *Hash field
	ints    [3]int64 // one per *int64 field
	lifts   []string
	reasons []reason.Reason
}

type canonReader struct {
	b   []byte
	i   int
	str string // string(b), made on first use; unescaped strings are slices of it
}

// decodeCanonical decodes data if it is the canonical form of an Entry
// (Validate aside); ok is false otherwise.
func decodeCanonical(data []byte) (_ *Entry, ok bool) {
	r := canonReader{b: data}
	box := new(entryBox)
	e := &box.e
	if !r.byte('{') {
		return nil, false
	}
	var seen uint64
	next := 0 // the first member index a name may still have
	nh, ni := 0, 0
	hash := func(p **Hash) bool {
		h := &box.hashes[nh]
		nh++
		*p = h
		return r.hash(h)
	}
	int64p := func(p **int64) bool {
		n := &box.ints[ni]
		ni++
		*p = n
		v, ok := r.int(true)
		*n = v
		return ok
	}
	for first := true; ; first = false {
		if r.peek() == '}' && first {
			break
		}
		if !first && !r.byte(',') {
			break
		}
		m := r.name(next)
		if m < 0 {
			return nil, false
		}
		next = m + 1
		seen |= 1 << m
		var ok bool
		switch m {
		case mAgent:
			e.Agent, ok = r.nonEmpty()
		case mBlocks:
			e.Blocks, ok = r.strings()
		case mContentSHA256:
			ok = hash(&e.ContentSHA256)
		case mDecision:
			e.Decision, ok = r.nonEmpty()
		case mDecisionSeq:
			e.DecisionSeq, ok = r.uint()
			ok = ok && e.DecisionSeq != 0
		case mDurationMS:
			ok = int64p(&e.DurationMS)
		case mFormat:
			e.Format, ok = r.nullString()
		case mHandoffID:
			e.HandoffID, ok = r.nullString()
		case mIdempotencyKey:
			e.IdempotencyKey, ok = r.nonEmpty()
		case mInputs:
			start := r.i
			if r.peek() != '{' || !r.canonicalValue(0) {
				return nil, false
			}
			e.Inputs = bytes.Clone(data[start:r.i])
			ok = true
		case mKind:
			e.Kind, ok = r.string()
		case mLifts:
			box.lifts, ok = r.strings()
			e.Lifts = &box.lifts
		case mLockSHA256:
			ok = hash(&e.LockSHA256)
		case mManifestSHA256:
			ok = hash(&e.ManifestSHA256)
		case mNewKey:
			e.NewKey, ok = r.nonEmpty()
		case mNote:
			e.Note, ok = r.nonEmpty()
		case mOldKey:
			e.OldKey, ok = r.nonEmpty()
		case mOutputSHA256:
			ok = hash(&e.OutputSHA256)
		case mPayloadSHA256:
			ok = hash(&e.PayloadSHA256)
		case mPayloadSize:
			ok = int64p(&e.PayloadSize)
		case mPrev:
			ok = r.hash(&e.Prev)
		case mReasons:
			box.reasons, ok = r.reasons()
			e.Reasons = &box.reasons
		case mRedactedSeq:
			e.RedactedSeq, ok = r.uint()
			ok = ok && e.RedactedSeq != 0
		case mSeq:
			e.Seq, ok = r.uint()
		case mSize:
			ok = int64p(&e.Size)
		case mSource:
			e.Source, ok = r.nullString()
		case mStatus:
			e.Status, ok = r.nonEmpty()
		case mSubmitter:
			e.Submitter, ok = r.nonEmpty()
		case mTarget:
			e.Target, ok = r.nullString()
		case mTime:
			var s string
			if s, ok = r.string(); ok {
				e.Time, ok = canonicalTime(s)
			}
		case mTraceParent:
			e.TraceParent, ok = r.nonEmpty()
		case mV:
			var v int64
			v, ok = r.int(true)
			e.V = int(v)
			ok = ok && int64(e.V) == v
		case mWhat:
			e.What, ok = r.nonEmpty()
		case mWorkflowID:
			e.WorkflowID, ok = r.nullString()
		}
		if !ok {
			return nil, false
		}
	}
	if !r.byte('}') || r.i != len(r.b) || seen&requiredMembers != requiredMembers {
		return nil, false
	}
	return e, true
}

func (r *canonReader) peek() byte {
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

func (r *canonReader) byte(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *canonReader) literal(s string) bool {
	if len(r.b)-r.i >= len(s) && string(r.b[r.i:r.i+len(s)]) == s {
		r.i += len(s)
		return true
	}
	return false
}

// name reads `"name":` for a member whose index is at least from, and
// returns the index, or -1.
func (r *canonReader) name(from int) int {
	if !r.byte('"') {
		return -1
	}
	start := r.i
	for r.i < len(r.b) && r.b[r.i] != '"' {
		c := r.b[r.i]
		if !(c >= 'a' && c <= 'z' || c == '_' || c >= '0' && c <= '9') {
			return -1
		}
		r.i++
	}
	key := r.b[start:r.i]
	if !r.byte('"') || !r.byte(':') {
		return -1
	}
	for m := from; m < numMembers; m++ {
		if memberNames[m] == string(key) {
			return m
		}
	}
	return -1
}

// string reads a string in canonical form.
func (r *canonReader) string() (string, bool) {
	if !r.byte('"') {
		return "", false
	}
	start := r.i
	escaped := false
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			end := r.i
			r.i++
			if !escaped {
				if r.str == "" {
					r.str = string(r.b)
				}
				return r.str[start:end], true
			}
			return unescape(r.b[start:end]), true
		case c == '\\':
			if !canonicalEscape(r.b[r.i:]) {
				return "", false
			}
			escaped = true
			if r.b[r.i+1] == 'u' {
				r.i += 6
			} else {
				r.i += 2
			}
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			r.i++
		default:
			ch, size := utf8.DecodeRune(r.b[r.i:])
			if ch == utf8.RuneError && size == 1 {
				return "", false
			}
			r.i += size
		}
	}
	return "", false
}

// canonicalEscape reports whether b starts with an escape JCS writes: \"
// \\ \b \f \n \r \t, or \u00xx (lowercase) for another control character.
func canonicalEscape(b []byte) bool {
	if len(b) < 2 {
		return false
	}
	switch b[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if len(b) < 6 || b[2] != '0' || b[3] != '0' || (b[4] != '0' && b[4] != '1') {
			return false
		}
		v, ok := hexDigit(b[5])
		if !ok {
			return false
		}
		switch c := (b[4]-'0')<<4 | v; c {
		case '\b', '\f', '\n', '\r', '\t':
			return false
		}
		return true
	}
	return false
}

// unescape decodes the content of a string canonicalEscape accepted.
func unescape(b []byte) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch b[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			v, _ := hexDigit(b[i+4])
			out = append(out, (b[i+3]-'0')<<4|v)
			i += 4
		default: // '"', '\\'
			out = append(out, b[i])
		}
	}
	return string(out)
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// nonEmpty reads a string that omitzero would not drop.
func (r *canonReader) nonEmpty() (string, bool) {
	s, ok := r.string()
	return s, ok && s != ""
}

func (r *canonReader) nullString() (NullString, bool) {
	if r.literal("null") {
		return Null(), true
	}
	s, ok := r.string()
	return Str(s), ok
}

func (r *canonReader) hash(h *Hash) bool {
	if len(r.b)-r.i < 66 || r.b[r.i] != '"' || r.b[r.i+65] != '"' {
		return false
	}
	src := r.b[r.i+1 : r.i+65]
	bad := byte(0)
	for k := range h {
		hi, lo := hexValue[src[2*k]], hexValue[src[2*k+1]]
		bad |= hi | lo
		h[k] = hi<<4 | lo&0xf
	}
	if bad&0x80 != 0 {
		return false
	}
	r.i += 66
	return true
}

// hexValue maps a lowercase hex digit to its value, anything else to 0xff.
var hexValue = func() (t [256]byte) {
	for i := range t {
		if v, ok := hexDigit(byte(i)); ok {
			t[i] = v
		} else {
			t[i] = 0xff
		}
	}
	return t
}()

// uint reads an unsigned integer in canonical form.
func (r *canonReader) uint() (uint64, bool) {
	start := r.i
	var v uint64
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		d := uint64(r.b[r.i] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
		r.i++
	}
	n := r.i - start
	if n == 0 || n > 1 && r.b[start] == '0' {
		return 0, false
	}
	return v, true
}

// int reads a signed integer in canonical form (no "-0").
func (r *canonReader) int(signed bool) (int64, bool) {
	neg := signed && r.byte('-')
	v, ok := r.uint()
	switch {
	case !ok || v > 1<<63 || !neg && v == 1<<63 || neg && v == 0:
		return 0, false
	case neg:
		return -int64(v), true
	}
	return int64(v), true
}

// strings reads an array of strings.
func (r *canonReader) strings() ([]string, bool) {
	if !r.byte('[') {
		return nil, false
	}
	out := []string{}
	if r.byte(']') {
		return out, true
	}
	for {
		s, ok := r.string()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if r.byte(']') {
			return out, true
		}
		if !r.byte(',') {
			return nil, false
		}
	}
}

// reasons reads an array of reason.Reason, each with all four members.
func (r *canonReader) reasons() ([]reason.Reason, bool) {
	if !r.byte('[') {
		return nil, false
	}
	n := 0
	if r.peek() != ']' {
		n = 1 + bytes.Count(r.b[r.i:], []byte(`},{"code":`)) // an upper bound
	}
	out := make([]reason.Reason, 0, n)
	if r.byte(']') {
		return out, true
	}
	for {
		var x reason.Reason
		var code, sev string
		ok := r.literal(`{"code":`)
		if ok {
			code, ok = r.string()
		}
		ok = ok && r.literal(`,"field":`)
		if ok {
			x.Field, ok = r.string()
		}
		ok = ok && r.literal(`,"message":`)
		if ok {
			x.Message, ok = r.string()
		}
		ok = ok && r.literal(`,"severity":`)
		if ok {
			sev, ok = r.string()
		}
		if !ok || !r.byte('}') {
			return nil, false
		}
		x.Code, x.Severity = reason.Code(code), reason.Severity(sev)
		out = append(out, x)
		if r.byte(']') {
			return out, true
		}
		if !r.byte(',') {
			return nil, false
		}
	}
}

// canonicalValue skips a JSON value that is its own RFC 8785 canonical
// form and within strictjson's limits (depth, safe integers), as far as
// this pass can tell: object names are ASCII (so byte order is UTF-16
// order) and strictly increasing, numbers are integers of at most 15
// digits. It reports false for anything else.
func (r *canonReader) canonicalValue(depth int) bool {
	switch c := r.peek(); {
	case c == '{':
		if depth >= strictjson.MaxDepth {
			return false
		}
		r.i++
		if r.byte('}') {
			return true
		}
		var prev []byte
		for {
			start := r.i
			if _, ok := r.string(); !ok {
				return false
			}
			name := r.b[start+1 : r.i-1]
			for _, c := range name {
				if c >= utf8.RuneSelf || c == '\\' {
					return false
				}
			}
			if prev != nil && bytes.Compare(prev, name) >= 0 {
				return false
			}
			prev = name
			if !r.byte(':') || !r.canonicalValue(depth+1) {
				return false
			}
			if r.byte('}') {
				return true
			}
			if !r.byte(',') {
				return false
			}
		}
	case c == '[':
		if depth >= strictjson.MaxDepth {
			return false
		}
		r.i++
		if r.byte(']') {
			return true
		}
		for {
			if !r.canonicalValue(depth + 1) {
				return false
			}
			if r.byte(']') {
				return true
			}
			if !r.byte(',') {
				return false
			}
		}
	case c == '"':
		_, ok := r.string()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		start := r.i
		_, ok := r.int(true)
		digits := r.i - start
		if r.b[start] == '-' {
			digits--
		}
		return ok && digits <= 15 && (r.i == len(r.b) || r.b[r.i] != '.' && r.b[r.i] != 'e' && r.b[r.i] != 'E')
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	}
	return false
}

// canonicalTime parses s if it is a time in the form Time.MarshalText
// writes, "YYYY-MM-DDTHH:MM:SS[.fraction]Z" with no trailing zero in the
// fraction, and a valid date and clock; otherwise it leaves the decision
// to Time.UnmarshalText.
func canonicalTime(s string) (Time, bool) {
	if len(s) < 20 || len(s) > 30 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return slowTime(s)
	}
	num := func(a, b int) int {
		n := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	nsec := 0
	switch frac := s[19 : len(s)-1]; {
	case frac == "":
	case len(frac) < 2 || frac[0] != '.' || frac[len(frac)-1] == '0':
		return slowTime(s)
	default:
		nsec = num(20, len(s)-1)
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	if year < 0 || month < 1 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 || nsec < 0 {
		return slowTime(s)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day || t.Month() != time.Month(month) {
		return slowTime(s) // no such day
	}
	return Time{t}, true
}

func slowTime(s string) (Time, bool) {
	var t Time
	err := t.UnmarshalText([]byte(s))
	return t, err == nil
}
