package stream_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/govledger/govledger/stream"
)

func ExampleReader() {
	in := `{"handoff_id":"h-1","source_agent":"a"}
{"document":"## Status\nall green","from":"qa","to":"dev","idempotency_key":"run-7/qa"}

{"document":7}
`
	r := stream.NewReader(strings.NewReader(in), 0)
	for {
		it, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		switch {
		case it.Err != nil:
			fmt.Println(it.Err)
		case it.Envelope:
			fmt.Printf("line %d: %q from %s to %s, key %s\n", it.Line, it.Doc, it.From, it.To, it.IdempotencyKey)
		default:
			fmt.Printf("line %d: %s\n", it.Line, it.Doc)
		}
	}
	// Output:
	// line 1: {"handoff_id":"h-1","source_agent":"a"}
	// line 2: "## Status\nall green" from qa to dev, key run-7/qa
	// line 4: malformed envelope: document: want a string
}
