package openapitest_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/content"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/govledger/govledger/server"
)

// Two independent implementations check the document and every exchange
// of the end-to-end test against it: kin-openapi (openapi3, openapi3filter,
// its gorilla/mux router) and libopenapi-validator in strict mode, which
// also reports query parameters, headers and object members the document
// does not declare. They disagree often enough on details (kin-openapi
// does not report undeclared query parameters or headers; libopenapi
// checks headers strictly) that one of them alone would let mismatches
// through.

// sequentialTypes are the media types whose body is a sequence of JSON
// texts, one per line. The document models them as arrays, one item per
// line (as OpenAPI 3.2 models sequential media types); these decoders
// give both validators that array.
var sequentialTypes = []string{"application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines"}

// decodeLines decodes a JSON Lines body: one array item per non-blank line.
func decodeLines(body io.Reader) (any, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 32<<20)
	items := []any{}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		items = append(items, v)
	}
	return items, sc.Err()
}

// decodeEvents decodes a text/event-stream body into its events, as the
// document models them: one object per event with its fields (id, event,
// data, retry); comment lines are not events, and a last event without
// its blank line (a stream cut while reading) is left out.
func decodeEvents(body io.Reader) (any, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	events := []any{}
	blocks := strings.Split(string(data), "\n\n")
	for _, block := range blocks[:len(blocks)-1] {
		ev := map[string]any{}
		for line := range strings.SplitSeq(block, "\n") {
			if line == "" || strings.HasPrefix(line, ":") {
				continue
			}
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			if _, dup := ev[name]; dup {
				return nil, fmt.Errorf("event field %q repeated in %q", name, block)
			}
			if name == "retry" {
				n, err := strconv.Atoi(value)
				if err != nil {
					return nil, fmt.Errorf("retry %q: %v", value, err)
				}
				ev[name] = n
				continue
			}
			ev[name] = value
		}
		if len(ev) > 0 {
			events = append(events, ev)
		}
	}
	return events, nil
}

var registerKinDecoders = sync.OnceFunc(func() {
	lines := func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		return decodeLines(body)
	}
	for _, t := range sequentialTypes {
		openapi3filter.RegisterBodyDecoder(t, lines)
	}
	openapi3filter.RegisterBodyDecoder("text/event-stream", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		return decodeEvents(body)
	})
})

// apiValidators checks exchanges against server.OpenAPI() with both
// implementations.
type apiValidators struct {
	kin       *openapi3.T
	kinRouter routers.Router
	lib       validator.Validator
	libModel  *v3.Document
	libSchema schema_validation.SchemaValidator
	// grants reports whether an Authorization header value grants every
	// scope listed, for the security requirements (bearer); nil: any
	// bearer token does.
	grants func(authorization string, scopes []string) bool
}

// libOptions are libopenapi-validator's settings: strict (undeclared
// members, query parameters and headers are errors), formats asserted,
// every declared body media type decoded (or refused when it cannot be).
func (v *apiValidators) libOptions() []config.Option {
	lines := content.DecoderFunc(func(in *content.DecodeInput) (any, error) { return decodeLines(in.Body) })
	opts := []config.Option{
		config.WithStrictMode(),
		// Headers every answer carries for browsers and caches, which the
		// document does not list answer by answer.
		config.WithStrictIgnoredHeadersExtra("x-content-type-options"),
		config.WithFormatAssertions(),
		config.WithContentAssertions(),
		config.WithStandardBodyDecoders(),
		config.WithRejectUnsupportedBodyContent(),
		config.WithRejectUndeclaredRequestBody(),
		config.WithBodyDecoder("application/openmetrics-text", content.TextDecoder()),
		config.WithBodyDecoder("text/event-stream", content.DecoderFunc(func(in *content.DecodeInput) (any, error) { return decodeEvents(in.Body) })),
		config.WithAuthenticationFunc(func(_ context.Context, in *config.AuthenticationInput) error {
			return v.authenticate(in.Request, in.SecuritySchemeName, in.Scopes)
		}),
	}
	for _, t := range sequentialTypes {
		opts = append(opts, config.WithBodyDecoder(t, lines))
	}
	return opts
}

func (v *apiValidators) authenticate(r *http.Request, scheme string, scopes []string) error {
	switch scheme {
	case "bearer":
		a := r.Header.Get("Authorization")
		if !strings.HasPrefix(a, "Bearer ") {
			return errors.New("no bearer token")
		}
		if v.grants != nil && !v.grants(a, scopes) {
			return fmt.Errorf("the token does not grant %v", scopes)
		}
		return nil
	case "mtls":
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return errors.New("no client certificate")
		}
		return nil
	}
	return fmt.Errorf("unknown security scheme %q", scheme)
}

// newAPIValidators loads the embedded document with both libraries,
// failing the test on any error either reports about the document itself
// (each library's errors are reported, whatever the other says).
func newAPIValidators(t testing.TB) *apiValidators {
	t.Helper()
	registerKinDecoders()
	doc := server.OpenAPI()
	v := &apiValidators{}
	if err := v.loadKin(doc); err != nil {
		t.Errorf("kin-openapi: %v", err)
	}
	if err := v.loadLib(doc); err != nil {
		t.Errorf("libopenapi-validator: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return v
}

func (v *apiValidators) loadKin(doc []byte) error {
	ctx := context.Background()
	kin, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return fmt.Errorf("loading openapi.json: %w", err)
	}
	if err := kin.Validate(ctx, openapi3.EnableMultiError(), openapi3.EnableSchemaFormatValidation(),
		openapi3.EnableSchemaPatternValidation(), openapi3.EnableSchemaDefaultsValidation(), openapi3.EnableExamplesValidation(),
		openapi3.ProhibitExtensionsWithRef()); err != nil {
		return fmt.Errorf("openapi.json is invalid: %w", err)
	}
	if v.kinRouter, err = gorillamux.NewRouter(kin); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	v.kin = kin
	return nil
}

func (v *apiValidators) loadLib(doc []byte) error {
	ld, err := libopenapi.NewDocument(doc)
	if err != nil {
		return fmt.Errorf("loading openapi.json: %w", err)
	}
	model, err := ld.BuildV3Model()
	if err != nil {
		return fmt.Errorf("building the model of openapi.json: %w", err)
	}
	v.libModel = &model.Model
	lib, errs := validator.NewValidator(ld, v.libOptions()...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if ok, verrs := lib.ValidateDocument(); !ok || len(verrs) > 0 {
		return fmt.Errorf("openapi.json is invalid:\n%s", libErrors(verrs))
	}
	v.lib = lib
	v.libSchema = schema_validation.NewSchemaValidator(config.WithFormatAssertions())
	return nil
}

// libErrors renders libopenapi-validator's errors, one per line, with
// their schema failures.
func libErrors(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s", e.Message, e.Reason)
		if e.SpecLine > 0 {
			fmt.Fprintf(&b, " (openapi.json line %d)", e.SpecLine)
		}
		b.WriteString("\n")
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "    at %s (%s): %s\n", f.FieldPath, f.KeywordLocation, f.Reason)
		}
	}
	return b.String()
}

// exchange is one request and its answer, as sent and received.
type exchange struct {
	method, url string
	header      http.Header
	body        []byte

	status    int
	resHeader http.Header
	resBody   []byte
	tls       bool // the request came over mutual TLS
}

func (ex *exchange) request() *http.Request {
	r, err := http.NewRequest(ex.method, ex.url, bytes.NewReader(ex.body))
	if err != nil {
		panic(err)
	}
	r.Header = ex.header.Clone()
	if ex.tls {
		// The validators see the request as the server did: over mutual TLS.
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{}}}
	}
	if len(ex.body) == 0 {
		r.Body, r.ContentLength = http.NoBody, 0
	}
	return r
}

func (ex *exchange) response(r *http.Request) *http.Response {
	return &http.Response{StatusCode: ex.status, Header: ex.resHeader.Clone(), Request: r,
		Body: io.NopCloser(bytes.NewReader(ex.resBody)), ContentLength: int64(len(ex.resBody))}
}

var colonRedact = regexp.MustCompile(`^/v1/entries/([^/]*):redact$`)

// verdict is what each library says of an exchange ("" when it accepts).
type verdict struct {
	kinRequest, libRequest   string
	kinResponse, libResponse string
}

// check validates ex's request and response with both libraries.
func (v *apiValidators) check(ex *exchange) verdict {
	var out verdict
	// kin-openapi
	kinOpts := &openapi3filter.Options{
		MultiError: true, IncludeResponseStatus: true, RejectWhenRequestBodyNotSpecified: true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableFormatValidation()},
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			return v.authenticate(in.RequestValidationInput.Request, in.SecuritySchemeName, in.Scopes)
		},
	}
	req := ex.request()
	route, params, err := v.kinRouter.FindRoute(req)
	if err != nil {
		out.kinRequest = "no route: " + err.Error()
		out.kinResponse = out.kinRequest
	} else {
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: kinOpts}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			out.kinRequest = err.Error()
		}
		in.Request = ex.request() // ValidateRequest read the body
		rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.status,
			Header: ex.resHeader.Clone(), Options: kinOpts}
		rin.SetBodyBytes(ex.resBody)
		if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
			out.kinResponse = err.Error()
		}
	}
	// libopenapi-validator
	libReq := func() *http.Request {
		r := ex.request()
		// The deprecated POST /v1/entries/{seq}:redact is ambiguous with
		// GET /v1/entries/{seq} under OpenAPI path matching, and
		// libopenapi-validator's router takes the latter (as the generic
		// routers the alias exists for do): it checks such exchanges as
		// the alias, the same operation.
		if m := colonRedact.FindStringSubmatch(r.URL.Path); m != nil {
			r.URL.Path = "/v1/entries/" + m[1] + "/redact"
		}
		return r
	}
	if ok, errs := v.lib.ValidateHttpRequestSync(libReq()); !ok || len(errs) > 0 {
		out.libRequest = libErrors(errs)
	}
	req = libReq()
	if ok, errs := v.lib.ValidateHttpResponse(req, ex.response(req)); !ok || len(errs) > 0 {
		out.libResponse = libErrors(errs)
	}
	return out
}

// checkValue validates a JSON value against the component schema name
// with both libraries (for what a body carries as text, such as an event's
// data, which the body's own schema describes as a string).
func (v *apiValidators) checkValue(name string, data []byte) (kinErr, libErr string) {
	var val any
	if err := json.Unmarshal(data, &val); err != nil {
		return err.Error(), err.Error()
	}
	ks := v.kin.Components.Schemas[name]
	if ks == nil || ks.Value == nil {
		return "no schema " + name, ""
	}
	if err := ks.Value.VisitJSON(val, openapi3.EnableJSONSchema2020(), openapi3.EnableFormatValidation(), openapi3.MultiErrors()); err != nil {
		kinErr = err.Error()
	}
	ls, ok := v.libModel.Components.Schemas.Get(name)
	if !ok {
		return kinErr, "no schema " + name
	}
	schema, err := ls.BuildSchema()
	if err != nil {
		return kinErr, err.Error()
	}
	if ok, errs := v.libSchema.ValidateSchemaBytesWithVersion(schema, data, 3.1); !ok || len(errs) > 0 {
		libErr = libErrors(errs)
	}
	return kinErr, libErr
}

// TestOpenAPIValid loads openapi.json with kin-openapi and
// libopenapi-validator: neither may find anything wrong with the
// document itself. Its schemas are checked too: a closed object refuses a
// member it does not declare.
func TestOpenAPIValid(t *testing.T) {
	v := newAPIValidators(t)
	for _, c := range []struct {
		schema, value string
		ok            bool
	}{
		{"Status", `{"status":"ok"}`, true},
		{"Status", `{"status":"ok","extra":1}`, false},
		{"Hash", `"` + strings.Repeat("ab", 32) + `"`, true},
		{"Hash", `"` + strings.Repeat("AB", 32) + `"`, false},
	} {
		kinErr, libErr := v.checkValue(c.schema, []byte(c.value))
		if (kinErr == "") != c.ok || (libErr == "") != c.ok {
			t.Errorf("%s %s: kin-openapi %q, libopenapi-validator %q; want ok=%v", c.schema, c.value, kinErr, libErr, c.ok)
		}
	}
	if !slices.Contains(slices.Collect(func(yield func(string) bool) {
		for k := range v.kin.Components.Schemas {
			if !yield(k) {
				return
			}
		}
	}), "Entry") {
		t.Error("openapi.json has no Entry schema")
	}
}

// TestOpenAPIEntryVectors holds the Entry schema to the entry encoding:
// every entry of the published test vectors (one of every kind, hostile
// strings) passes it with both libraries, and each is refused with a
// member it does not have, without a member it needs, or under another
// kind's name.
func TestOpenAPIEntryVectors(t *testing.T) {
	v := newAPIValidators(t)
	n := 0
	kinds := map[string]bool{}
	for _, file := range []string{"entries.jsonl", "govledger-entries.jsonl"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors", file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var vec struct {
				Entry map[string]any `json:"entry"`
			}
			if err := json.Unmarshal(line, &vec); err != nil {
				t.Fatalf("%s:%d: %v", file, i+1, err)
			}
			where := fmt.Sprintf("%s:%d (%v)", file, i+1, vec.Entry["kind"])
			kinds[vec.Entry["kind"].(string)] = true
			n++
			check := func(what string, e map[string]any, ok bool) {
				t.Helper()
				b, _ := json.Marshal(e)
				kinErr, libErr := v.checkValue("Entry", b)
				if (kinErr == "") != ok {
					t.Errorf("%s %s: kin-openapi says %q, want ok=%v", where, what, kinErr, ok)
				}
				if (libErr == "") != ok {
					t.Errorf("%s %s: libopenapi-validator says %q, want ok=%v", where, what, libErr, ok)
				}
			}
			check("as published", vec.Entry, true)
			extra := maps.Clone(vec.Entry)
			extra["extra"] = 1
			check("with a member of no kind", extra, false)
			for _, name := range []string{"seq", "prev", "time", "v"} {
				missing := maps.Clone(vec.Entry)
				delete(missing, name)
				check("without "+name, missing, false)
			}
			other := maps.Clone(vec.Entry)
			other["kind"] = map[string]string{"handoff": "snapshot"}[vec.Entry["kind"].(string)]
			if other["kind"] == "" {
				other["kind"] = "handoff"
			}
			check("under another kind", other, false)
		}
	}
	for _, k := range []string{"handoff", "snapshot", "unblock", "redaction", "key_rotation"} {
		if !kinds[k] {
			t.Errorf("no %s entry among the %d vectors", k, n)
		}
	}
}
