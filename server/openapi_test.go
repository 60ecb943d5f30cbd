package server_test

import (
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/server"
)

type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	OperationID string                `json:"operationId"`
	Security    []map[string][]string `json:"security"`
	Responses   map[string]any        `json:"responses"`
}

// TestOpenAPI checks the embedded document against the mux: every route
// is documented with the scopes it enforces, every documented operation
// is a route, and every documented path reaches its route.
func TestOpenAPI(t *testing.T) {
	h := start(t, nil)
	r := h.do(req{method: "GET", path: "/openapi.json"})
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", r.status, r.header.Get("Content-Type"))
	}
	if string(r.body) != string(server.OpenAPI()) {
		t.Fatal("served document differs from server.OpenAPI()")
	}
	if err := strictjson.Check("openapi.json", r.body); err != nil {
		t.Fatal(err)
	}
	doc := decode[openAPIDoc](t, r.body)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	documented := map[string]openAPIOperation{}
	ids := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			documented[key] = op
			if op.OperationID == "" || ids[op.OperationID] != "" {
				t.Errorf("%s: operationId %q missing or also used by %s", key, op.OperationID, ids[op.OperationID])
			}
			ids[op.OperationID] = key
		}
	}
	routes := map[string]server.RouteInfo{}
	for _, rt := range h.srv.Routes() {
		key := rt.Method + " " + rt.Path
		routes[key] = rt
		op, ok := documented[key]
		if !ok {
			t.Errorf("route %s is not in openapi.json", key)
			continue
		}
		// The security requirement lists the route's scopes, for bearer and mTLS alike.
		var want []string
		for _, s := range rt.Scopes {
			want = append(want, string(s))
		}
		sort.Strings(want)
		if len(want) == 0 {
			if len(op.Security) != 0 {
				t.Errorf("%s: public route documents security %v", key, op.Security)
			}
		} else {
			if len(op.Security) != 2 {
				t.Errorf("%s: security %v, want bearer and mtls alternatives", key, op.Security)
			}
			for _, req := range op.Security {
				for scheme, scopes := range req {
					got := slices.Sorted(slices.Values(scopes))
					if (scheme != "bearer" && scheme != "mtls") || !slices.Equal(got, want) {
						t.Errorf("%s: security %s %v, want %v", key, scheme, got, want)
					}
				}
			}
			for _, code := range []string{"401", "403", "429"} {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s: response %s not documented", key, code)
				}
			}
		}
	}
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	for key := range documented {
		if _, ok := routes[key]; !ok {
			t.Errorf("openapi.json documents %s, which is no route", key)
			continue
		}
		// A concrete request for the documented path reaches a route (a
		// public route answers, a protected one asks for credentials)
		// instead of the mux's 404 or 405.
		method, path, _ := strings.Cut(key, " ")
		concrete := param.ReplaceAllStringFunc(path, func(p string) string {
			switch p {
			case "{seq}":
				return "1"
			case "{agent}":
				return "agent-a"
			}
			return "x"
		})
		hr, _ := http.NewRequest(method, h.url+concrete, nil)
		res, err := h.client.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		want := http.StatusUnauthorized
		if len(routes[key].Scopes) == 0 {
			want = http.StatusOK
		}
		if res.StatusCode != want {
			t.Errorf("%s %s: %d, want %d (the documented path does not reach its route)", method, concrete, res.StatusCode, want)
		}
	}
}
