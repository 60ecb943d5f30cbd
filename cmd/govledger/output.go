package main

import (
	"io"

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
