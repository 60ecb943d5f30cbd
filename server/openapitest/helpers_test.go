package openapitest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

// The tokens, clock and certificate authority of the server package's
// tests, copied: these tests live in their own package so that the server
// package's test binary (and its fuzz targets' instrumented build) does
// not link the two OpenAPI validators.

// Principals of the test tokens file.
const (
	pWriterA  = "writer-a"   // handoff:write for agent-a
	pWriterAn = "writer-any" // handoff:write for any agent
	pReader   = "reader"     // ledger:read
	pPayload  = "payload"    // payload:read
	pExporter = "exporter"   // ledger:read + payload:read
	pOperator = "operator"   // operator
	pAll      = "all"        // every scope, any agent
	pExpired  = "expired"    // every scope, expired
	pGateway  = "gateway"    // mTLS only: handoff:write for agent-a, ledger:read
	pClient   = "client"     // handoff:write for agent-a, ledger:read: the example clients
)

var testNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func testTokens(t testing.TB) (*server.TokensFile, map[string]string) {
	t.Helper()
	f := &server.TokensFile{Version: server.TokensVersion}
	tokens := map[string]string{}
	all := server.Scopes
	for _, e := range []server.TokenEntry{
		{Name: pWriterA, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"agent-a"}},
		{Name: pWriterAn, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"*"}},
		{Name: pReader, Scopes: []server.Scope{server.ScopeLedgerRead}},
		{Name: pPayload, Scopes: []server.Scope{server.ScopePayloadRead}},
		{Name: pExporter, Scopes: []server.Scope{server.ScopeLedgerRead, server.ScopePayloadRead}},
		{Name: pOperator, Scopes: []server.Scope{server.ScopeOperator}},
		{Name: pAll, Scopes: all, Agents: []string{"*"}},
		{Name: pExpired, Scopes: all, Agents: []string{"*"}, Expires: testNow.Add(-time.Hour)},
		{Name: pClient, Scopes: []server.Scope{server.ScopeHandoffWrite, server.ScopeLedgerRead}, Agents: []string{"agent-a"}},
	} {
		tok, hash, err := server.NewToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, e.Created = hash, testNow.Add(-48*time.Hour)
		if err := f.Add(e); err != nil {
			t.Fatalf("Add(%s): %v", e.Name, err)
		}
		tokens[e.Name] = tok
	}
	if err := f.Add(server.TokenEntry{Name: pGateway, MTLSSubject: "gateway.test", Created: testNow.Add(-time.Hour),
		Scopes: []server.Scope{server.ScopeHandoffWrite, server.ScopeLedgerRead}, Agents: []string{"agent-a"}}); err != nil {
		t.Fatal(err)
	}
	return f, tokens
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: testNow.Add(-24 * time.Hour), NotAfter: testNow.Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) issue(t *testing.T, cn string, notBefore, notAfter time.Time, server bool) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
