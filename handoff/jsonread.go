package handoff

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/govledger/govledger/internal/strictjson"
)

// jsonTreeFast reads data into nodes in one pass over its bytes, or
// returns nil: then jsonTree takes the slow path (strictjson.Check, which
// words the error, and a read with jsontext). It accepts only what that
// path accepts, and builds the same tree (FuzzJSONTree holds the two
// together): exactly one value with white space around it, no byte order
// mark, names unique after unescaping, valid UTF-8 and no control
// character in strings, numbers within +-(2^53-1), nesting at most
// MaxDepth. Whatever it is unsure of (a surrogate escape that is not a
// valid pair, a number outside the safe range) it leaves to the slow path.
//
// Strings without escapes are slices of one copy of data; the nodes, the
// member names and the child lists are carved from a few shared blocks.
func jsonTreeFast(data []byte) *node {
	n, _, _ := jsonTreeText(data, false)
	return n
}

// jsonTreeText is jsonTreeFast; it also returns the copy of data that the
// tree's strings are slices of. With pooled, the tree is carved from an
// arena of the pool, returned with it: the caller hands it back with
// release once nothing holds a node of the tree.
func jsonTreeText(data []byte, pooled bool) (*node, string, *jsonArena) {
	a := jsonArenas.Get().(*jsonArena)
	p := jsonReader{src: string(data), line: 1, stack: a.stack[:0], names: a.names[:0], buf: a.buf[:0]}
	if pooled {
		p.nodes, p.ptrs, p.strs = a.nodes, a.ptrs[:0], a.strs[:0]
		p.counted = len(a.nodes) > 0
	}
	n := p.value(0)
	if n != nil {
		p.space()
		if p.pos != len(p.src) {
			n = nil
		}
	}
	// Keep the grown scratch, holding no node or name.
	clear(p.stack[:cap(p.stack)])
	clear(p.names[:cap(p.names)])
	a.stack, a.names, a.buf = p.stack[:0], p.names[:0], p.buf[:0]
	a.used = [3]int{p.usedNodes, p.usedPtrs, p.usedStrs}
	if !pooled || n == nil {
		a.release()
		a = nil
	}
	if n == nil {
		return nil, "", nil
	}
	return n, p.src, a
}

// jsonArena is the memory of a jsonReader, reused through jsonArenas: its
// working lists, and blocks of nodes, child lists and names that a pooled
// tree is carved from, each sized by the largest of the recent trees (up
// to maxArenaNodes nodes, maxArenaPtrs list entries and names).
type jsonArena struct {
	stack []*node
	names []string
	buf   []byte

	nodes []node
	ptrs  []*node
	strs  []string
	used  [3]int // nodes, child list entries, names the last read needed
}

const (
	maxArenaNodes = 1 << 10
	maxArenaPtrs  = 1 << 12
)

var jsonArenas = sync.Pool{New: func() any { return new(jsonArena) }}

// released releases a and returns nil, for a tree not kept.
func (a *jsonArena) released() *jsonArena {
	a.release()
	return nil
}

// release hands a back to the pool, once nothing holds a node of the tree
// carved from it.
func (a *jsonArena) release() {
	if a == nil {
		return
	}
	clear(a.nodes)
	clear(a.ptrs[:cap(a.ptrs)])
	clear(a.strs[:cap(a.strs)])
	if n := a.used[0]; n > len(a.nodes) && n <= maxArenaNodes {
		a.nodes = make([]node, n)
	}
	if n := a.used[1]; n > cap(a.ptrs) && n <= maxArenaPtrs {
		a.ptrs = make([]*node, 0, n)
	}
	if n := a.used[2]; n > cap(a.strs) && n <= maxArenaPtrs {
		a.strs = make([]string, 0, n)
	}
	jsonArenas.Put(a)
}

// jsonReader is the state of one jsonTreeFast read.
type jsonReader struct {
	src       string
	pos       int
	line      int // 1-based line of pos
	lineStart int // offset where that line starts

	nodes []node   // free nodes of the current block
	ptrs  []*node  // the current block of child lists
	strs  []string // the current block of member name lists
	stack []*node  // children of the open containers
	names []string // member names of the open objects
	buf   []byte   // an unescaped string being built

	counted bool // the first block of nodes, sized by countValues, is taken
	// what the tree took: nodes, child list entries, names
	usedNodes, usedPtrs, usedStrs int
}

// countValues returns about the number of values in the JSON text s, for
// the first block of nodes: one, and one per member (a ':') and per array
// item (a '[' and a ',' in an array), outside strings. It is a hint (an
// empty array counts one, nesting deeper than 63 is not followed), never a
// check.
func countValues(s string) int {
	n := 1
	var arrays uint64 // bit d: the container at depth d is an array
	d := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for { // to the closing quote: one after an even run of '\\'
				j := strings.IndexByte(s[i+1:], '"')
				if j < 0 {
					return n
				}
				i += 1 + j
				k := i - 1
				for s[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case '[':
			d++
			if d > 0 && d < 64 {
				arrays |= 1 << d
			}
			n++
		case '{':
			d++
			if d > 0 && d < 64 {
				arrays &^= 1 << d
			}
		case ']', '}':
			d--
		case ':':
			n++
		case ',':
			if d > 0 && d < 64 && arrays&(1<<d) != 0 {
				n++
			}
		}
	}
	return n
}

func (p *jsonReader) newNode() *node {
	if len(p.nodes) == 0 {
		n := 16
		if !p.counted {
			p.counted = true
			n = countValues(p.src)
		}
		p.nodes = make([]node, min(n, 1024))
	}
	n := &p.nodes[0]
	p.nodes = p.nodes[1:]
	p.usedNodes++
	return n
}

// carveNodes returns a copy of s in a shared block (nil for none).
func (p *jsonReader) carveNodes(s []*node) []*node {
	if len(s) == 0 {
		return nil
	}
	p.usedPtrs += len(s)
	if cap(p.ptrs)-len(p.ptrs) < len(s) {
		p.ptrs = make([]*node, 0, max(64, len(s)))
	}
	i := len(p.ptrs)
	p.ptrs = append(p.ptrs, s...)
	return p.ptrs[i:len(p.ptrs):len(p.ptrs)]
}

func (p *jsonReader) carveStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	p.usedStrs += len(s)
	if cap(p.strs)-len(p.strs) < len(s) {
		p.strs = make([]string, 0, max(32, len(s)))
	}
	i := len(p.strs)
	p.strs = append(p.strs, s...)
	return p.strs[i:len(p.strs):len(p.strs)]
}

// space skips JSON white space, counting lines.
// separator reads what follows a member or item: done at close (the end
// of its object or array), not done at a comma; ok is false otherwise.
func (p *jsonReader) separator(close byte) (done, ok bool) {
	p.space()
	if p.pos >= len(p.src) {
		return false, false
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case close:
		return true, true
	case ',':
		return false, true
	}
	return false, false
}

func (p *jsonReader) space() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '\n':
			p.line++
			p.lineStart = p.pos + 1
		case ' ', '\t', '\r':
		default:
			return
		}
		p.pos++
	}
}

// value reads the value at p.pos (white space first), at nesting depth.
func (p *jsonReader) value(depth int) *node {
	p.space()
	if p.pos >= len(p.src) {
		return nil
	}
	n := p.newNode()
	n.line, n.col = p.line, p.pos-p.lineStart+1
	switch c := p.src[p.pos]; c {
	case '{':
		if depth+1 > MaxDepth {
			return nil
		}
		p.pos++
		if !p.object(n, depth+1) {
			return nil
		}
	case '[':
		if depth+1 > MaxDepth {
			return nil
		}
		p.pos++
		if !p.array(n, depth+1) {
			return nil
		}
	case '"':
		s, ok := p.str()
		if !ok {
			return nil
		}
		n.kind, n.text = kString, s
	case 't':
		if !p.literal("true") {
			return nil
		}
		n.kind, n.text = kBool, "true"
	case 'f':
		if !p.literal("false") {
			return nil
		}
		n.kind, n.text = kBool, "false"
	case 'n':
		if !p.literal("null") {
			return nil
		}
		n.kind = kNull
	default:
		if c != '-' && (c < '0' || c > '9') {
			return nil
		}
		lit, ok := p.number()
		if !ok || strictjson.CheckNumber(lit) != nil {
			return nil
		}
		n.kind, n.text = kNumber, lit
	}
	return n
}

func (p *jsonReader) literal(word string) bool {
	if len(p.src)-p.pos < len(word) || p.src[p.pos:p.pos+len(word)] != word {
		return false
	}
	p.pos += len(word)
	return true
}

// number reads a number literal by RFC 8259's grammar.
func (p *jsonReader) number() (string, bool) {
	s, i := p.src, p.pos
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return "", false
		}
	}
	lit := s[p.pos:i]
	p.pos = i
	return lit, true
}

// str reads the string at p.pos (its opening quote).
func (p *jsonReader) str() (string, bool) {
	s := p.src
	start := p.pos + 1
	i := start
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return s[start:i], true
		case c == '\\':
			return p.escaped(start, i)
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return "", false
			}
			i += size
		}
	}
	return "", false
}

// escaped finishes reading a string with an escape at i, which starts at
// start, into a new string.
func (p *jsonReader) escaped(start, i int) (string, bool) {
	s := p.src
	b := append(p.buf[:0], s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.buf = b
			return string(b), true
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			i += 2
			switch s[i-1] {
			case '"', '\\', '/':
				b = append(b, s[i-1])
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(s, i)
				if !ok {
					return "", false
				}
				i += 4
				if r >= 0xd800 && r < 0xe000 {
					// Only a high surrogate followed by a low one; anything
					// else is left to the slow path.
					if r >= 0xdc00 || i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
						return "", false
					}
					lo, ok := hex4(s, i+2)
					if !ok || lo < 0xdc00 || lo >= 0xe000 {
						return "", false
					}
					i += 6
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return "", false
			}
			b = append(b, s[i:i+size]...)
			i += size
		}
	}
	return "", false
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// array reads the items of an array whose "[" was read.
func (p *jsonReader) array(n *node, depth int) bool {
	n.kind = kArray
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return true
	}
	base := len(p.stack)
	for {
		v := p.value(depth)
		if v == nil {
			return false
		}
		p.stack = append(p.stack, v)
		done, ok := p.separator(']')
		if !ok {
			return false
		}
		if done {
			break
		}
	}
	n.items = p.carveNodes(p.stack[base:])
	clear(p.stack[base:])
	p.stack = p.stack[:base]
	return true
}

// object reads the members of an object whose "{" was read.
func (p *jsonReader) object(n *node, depth int) bool {
	n.kind = kObject
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return true
	}
	base := len(p.stack)
	var index map[string]int
	for {
		p.space()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return false
		}
		k, ok := p.str()
		if !ok {
			return false
		}
		// Unique names: a scan of the few names so far, or an index.
		names := p.names[len(p.names)-(len(p.stack)-base):]
		switch {
		case index != nil:
			if _, dup := index[k]; dup {
				return false
			}
			index[k] = len(names)
		default:
			for _, x := range names {
				if x == k {
					return false
				}
			}
			if len(names)+1 > indexedMembers {
				index = make(map[string]int, 2*indexedMembers)
				for i, x := range names {
					index[x] = i
				}
				index[k] = len(names)
			}
		}
		p.space()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return false
		}
		p.pos++
		v := p.value(depth)
		if v == nil {
			return false
		}
		p.names = append(p.names, k)
		p.stack = append(p.stack, v)
		done, ok := p.separator('}')
		if !ok {
			return false
		}
		if done {
			break
		}
	}
	m := len(p.stack) - base
	n.keys = p.carveStrings(p.names[len(p.names)-m:])
	n.items = p.carveNodes(p.stack[base:])
	n.index = index
	clear(p.stack[base:])
	p.stack = p.stack[:base]
	p.names = p.names[:len(p.names)-m]
	return true
}
