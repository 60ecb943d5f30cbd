package handoff

import (
	"bytes"
	"regexp"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// SourceHint names the source agent of data by a cheap read that builds
// no tree: the top-level "source_agent" member's "agent_id" of a JSON
// object (governed/1); the only "source_skill" line (skill/1) or
// "skill" line under the only "source" line (swarm/2) of a YAML
// "handoff:" block written in the plain block style; opts.From for a
// vbw/1 JSON message (a top-level "type" naming a message type), for
// Format vbw/1, task/1 or a2a/1, and for text that is neither. (A detected
// a2a/1 document names its source deep in its metadata: no cheap answer.) ok is false when
// the read finds no answer it is sure of.
//
// It costs about the size of data and is meant to refuse a document from
// a principal that may not submit for its source before the document is
// parsed: a document it names a source for that Parse then attributes to
// another is impossible for strict JSON, and for YAML only in shapes no
// producer writes (Parse's answer is checked again after the parse).
func SourceHint(data []byte, opts Options) (source string, ok bool) {
	if opts.Format == VBW || opts.Format == Task || opts.Format == A2A {
		// a2a/1: a source in the metadata must agree with From (Parse).
		return opts.From, opts.From != ""
	}
	text := bytes.TrimPrefix(data, bom)
	if looksJSON(text) {
		return jsonSourceHint(text, opts)
	}
	if topHandoffKeyRE.Match(text) {
		return yamlSourceHint(text)
	}
	if opts.Format == "" && opts.From != "" {
		return opts.From, true // task/1 or vbw/1 markdown: the caller names it
	}
	return "", false
}

func jsonSourceHint(text []byte, opts Options) (string, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(text),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", false
	}
	for dec.PeekKind() == '"' {
		k, err := dec.ReadToken()
		if err != nil {
			return "", false
		}
		switch name := k.String(); {
		case name == "type" && dec.PeekKind() == '"':
			v, err := dec.ReadToken()
			if err != nil {
				return "", false
			}
			if slices.Contains(vbwTypes, v.String()) && opts.From != "" {
				return opts.From, true
			}
		case name == "source_agent" && dec.PeekKind() == '{':
			dec.ReadToken()
			for dec.PeekKind() == '"' {
				k, err := dec.ReadToken()
				if err != nil {
					return "", false
				}
				if k.String() == "agent_id" && dec.PeekKind() == '"' {
					v, err := dec.ReadToken()
					if err != nil {
						return "", false
					}
					return v.String(), true
				}
				if err := dec.SkipValue(); err != nil {
					return "", false
				}
			}
			return "", false
		default:
			if err := dec.SkipValue(); err != nil {
				return "", false
			}
		}
	}
	return "", false
}

var (
	hintSourceSkillRE = regexp.MustCompile(`(?m)^  source_skill:[ \t]+([a-z0-9][a-z0-9-]*)[ \t]*$`)
	hintSourceRE      = regexp.MustCompile(`(?m)^  source:[ \t]*$`)
	hintSkillRE       = regexp.MustCompile(`^    skill:[ \t]+([a-z0-9][a-z0-9-]*)[ \t]*$`)
)

func yamlSourceHint(text []byte) (string, bool) {
	if m := hintSourceSkillRE.FindAllSubmatch(text, 2); len(m) == 1 {
		return string(m[0][1]), true
	}
	at := hintSourceRE.FindAllIndex(text, 2)
	if len(at) != 1 {
		return "", false
	}
	found := ""
	for l := range bytes.Lines(text[at[0][1]:]) {
		l = bytes.TrimRight(l, "\r\n")
		if len(l) == 0 {
			continue
		}
		if !bytes.HasPrefix(l, []byte("    ")) {
			break // the end of the source block
		}
		if m := hintSkillRE.FindSubmatch(l); m != nil {
			if found != "" {
				return "", false
			}
			found = string(m[1])
		}
	}
	return found, found != ""
}
