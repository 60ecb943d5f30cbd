package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// writeJSON writes v as one JSON document followed by a newline. Result
// structs carry a leading Schema field ("govledger.<cmd>/v1").
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v, jsontext.EscapeForHTML(false), jsontext.WithIndent("  "), json.Deterministic(true))
	if err != nil {
		return internalErr(err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// writeJSONLine writes v compactly on one line (for streams).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v, jsontext.EscapeForHTML(false), json.Deterministic(true))
	if err != nil {
		return internalErr(err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// Output formats. Every command renders text and JSON from the same result
// structs; a few add formats of their own.
const (
	outText      = "text"
	outJSON      = "json"
	outGitHub    = "github"     // GitHub Actions workflow-command annotations
	outSARIF     = "sarif"      // SARIF 2.1.0 for code scanning
	outSeedError = "seed-error" // a rejection in its format's own words
)

// outputs is the one table of the formats each command writes, by command
// path ("" is govledger itself: --version). A format a command does not
// write is a usage error (exit 2), never ignored. Every command is listed
// (a test holds the table to the command tree); one missing would get
// text and JSON.
var outputs = map[string][]string{
	"":                  {outText, outJSON},
	"lock":              {outText, outJSON},
	"lock check":        {outText, outJSON, outGitHub, outSARIF},
	"validate":          {outText, outJSON, outSeedError},
	"handoff":           {outText},
	"handoff new":       {outText}, // the document is JSON either way
	"record":            {outText, outJSON, outSeedError},
	"hook":              {outText},
	"hook claude-code":  {outText, outJSON}, // Claude Code's hook JSON either way
	"verify":            {outText, outJSON},
	"log":               {outText, outJSON},
	"show":              {outText, outJSON},
	"trace":             {outText, outJSON},
	"export":            {outText, outJSON}, // JSON Lines either way
	"stats":             {outText, outJSON},
	"copy":              {outText, outJSON},
	"unblock":           {outText, outJSON},
	"blocks":            {outText, outJSON},
	"registry":          {outText, outJSON},
	"demo":              {outText, outJSON},
	"bench":             {outText, outJSON},
	"keygen":            {outText, outJSON},
	"checkpoint":        {outText, outJSON},
	"checkpoint rotate": {outText, outJSON},
	"prove":             {outText, outJSON},
	"verify-proof":      {outText, outJSON},
	"publish":           {outText, outJSON},
	"monitor":           {outText, outJSON},
	"redact":            {outText, outJSON},
	"token":             {outText},
	"token create":      {outText, outJSON},
	"token list":        {outText, outJSON},
	"token revoke":      {outText, outJSON},
	"serve":             {outText}, // logs are JSON lines on stderr either way
	"completion":        {outText},
	"completion bash":   {outText},
	"completion zsh":    {outText},
	"completion fish":   {outText},
}

// outputsOf returns the formats the command at path writes.
func outputsOf(path string) []string {
	if o, ok := outputs[path]; ok {
		return o
	}
	return []string{outText, outJSON}
}

// checkOutput refuses an --output the command at path does not write.
func checkOutput(path, output string) error {
	formats := outputsOf(path)
	if slices.Contains(formats, output) {
		return nil
	}
	prefix := ""
	if path != "" {
		prefix = path + ": "
	}
	return usageErr("%s--output %q: want %s", prefix, output, orList(formats))
}

// count writes n and noun, in the plural unless n is 1: "1 finding",
// "3 findings", "0 agents", "2 entries".
func count[N ~int | ~uint64](n N, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
