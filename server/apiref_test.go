package server_test

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/server"
)

var updateRef = flag.Bool("update", false, "rewrite docs/reference/http-api.md from openapi.json")

// apiReference renders the embedded OpenAPI document as the Markdown page
// docs/reference/http-api.md: every route with the scopes it needs, its
// parameters, request media types and answers.
func apiReference(t *testing.T) string {
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Summary     string                `json:"summary"`
			Description string                `json:"description"`
			Security    []map[string][]string `json:"security"`
			Parameters  []struct {
				Name        string `json:"name"`
				In          string `json:"in"`
				Required    bool   `json:"required"`
				Description string `json:"description"`
			} `json:"parameters"`
			RequestBody struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Description string `json:"description"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(server.OpenAPI(), &doc, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	var b strings.Builder
	b.WriteString("# HTTP API reference\n\n")
	b.WriteString("Rendered from `server/openapi.json` (also served by `govledger serve` on `/openapi.json`) by\n")
	b.WriteString("`go test ./server -run TestAPIReference -update`; a test fails when this page is stale.\n\n")
	b.WriteString(doc.Info.Description + "\n\n")
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range doc.Paths {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range paths {
		for _, m := range []string{"get", "post", "put", "delete"} {
			op, ok := doc.Paths[p][m]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "## %s %s\n\n%s\n\n", strings.ToUpper(m), p, op.Summary)
			if op.Description != "" {
				b.WriteString(op.Description + "\n\n")
			}
			var scopes []string
			for _, s := range op.Security {
				for scheme, sc := range s {
					scopes = append(scopes, fmt.Sprintf("%s: %s", scheme, strings.Join(sc, ", ")))
				}
			}
			if len(scopes) > 0 {
				slices.Sort(scopes)
				fmt.Fprintf(&b, "Authorization: %s.\n\n", strings.Join(scopes, "; or "))
			} else if op.Security != nil {
				b.WriteString("Authorization: none (public).\n\n")
			}
			if len(op.Parameters) > 0 {
				b.WriteString("| parameter | in | required | meaning |\n|---|---|---|---|\n")
				for _, pa := range op.Parameters {
					fmt.Fprintf(&b, "| `%s` | %s | %v | %s |\n", pa.Name, pa.In, pa.Required, cell(pa.Description))
				}
				b.WriteString("\n")
			}
			if len(op.RequestBody.Content) > 0 {
				types := slices.Sorted(func(yield func(string) bool) {
					for t := range op.RequestBody.Content {
						if !yield(t) {
							return
						}
					}
				})
				fmt.Fprintf(&b, "Request body: `%s`.\n\n", strings.Join(types, "`, `"))
			}
			b.WriteString("| status | meaning |\n|---|---|\n")
			codes := slices.Sorted(func(yield func(string) bool) {
				for c := range op.Responses {
					if !yield(c) {
						return
					}
				}
			})
			for _, c := range codes {
				fmt.Fprintf(&b, "| %s | %s |\n", c, cell(op.Responses[c].Description))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString(schemaReference(t))
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// apiSchema is the part of a JSON Schema the reference renders.
type apiSchema struct {
	Ref         string               `json:"$ref"`
	Type        any                  `json:"type"`
	Description string               `json:"description"`
	Const       any                  `json:"const"`
	Enum        []any                `json:"enum"`
	Pattern     string               `json:"pattern"`
	Items       *apiSchema           `json:"items"`
	OneOf       []apiSchema          `json:"oneOf"`
	AnyOf       []apiSchema          `json:"anyOf"`
	Properties  map[string]apiSchema `json:"properties"`
	Required    []string             `json:"required"`
	Closed      *bool                `json:"additionalProperties"`
}

// typeOf renders a schema's type in one cell: a component's name, a
// const, an enum, an array of something.
func (s apiSchema) typeOf() string {
	switch {
	case s.Ref != "":
		name := s.Ref[strings.LastIndexByte(s.Ref, '/')+1:]
		return "[" + name + "](#" + strings.ToLower(name) + ")"
	case s.Const != nil:
		return fmt.Sprintf("`%v`", s.Const)
	case len(s.Enum) > 0:
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
		return strings.Join(vs, ", ")
	case s.Items != nil:
		return "array of " + s.Items.typeOf()
	case len(s.OneOf) > 0:
		var vs []string
		for _, v := range s.OneOf {
			vs = append(vs, v.typeOf())
		}
		return "one of " + strings.Join(vs, ", ")
	}
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		var vs []string
		for _, v := range t {
			vs = append(vs, fmt.Sprint(v))
		}
		return strings.Join(vs, " or ")
	}
	return "any"
}

// schemaReference renders the document's component schemas: each
// object's members (type, whether required, meaning) and each union's
// branches.
func schemaReference(t *testing.T) string {
	var doc struct {
		Components struct {
			Schemas map[string]apiSchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(server.OpenAPI(), &doc, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	var b strings.Builder
	b.WriteString("## Schemas\n\nThe bodies' components. An object marked closed refuses members it does not list.\n\n")
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
		s := doc.Components.Schemas[name]
		fmt.Fprintf(&b, "### %s\n\n", name)
		if s.Description != "" {
			b.WriteString(s.Description + "\n\n")
		}
		if len(s.Properties) == 0 {
			fmt.Fprintf(&b, "%s.\n\n", s.typeOf())
			continue
		}
		if s.Closed != nil && !*s.Closed {
			b.WriteString("An object (closed).\n\n")
		}
		b.WriteString("| member | type | required | meaning |\n|---|---|---|---|\n")
		for _, p := range slices.Sorted(maps.Keys(s.Properties)) {
			ps := s.Properties[p]
			fmt.Fprintf(&b, "| `%s` | %s | %v | %s |\n", p, cell(ps.typeOf()), slices.Contains(s.Required, p), cell(ps.Description))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestAPIReference holds docs/reference/http-api.md to openapi.json.
func TestAPIReference(t *testing.T) {
	path := filepath.Join("..", "docs", "reference", "http-api.md")
	got := apiReference(t)
	if *updateRef {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatal("docs/reference/http-api.md is stale: run go test ./server -run TestAPIReference -update")
	}
}
