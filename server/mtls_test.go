package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

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

// TestMutualTLS: a client certificate's subject CN names the principal
// through the tokens file's mtls_subject; expired or foreign certificates
// fail the handshake; a bearer token still works without a certificate.
func TestMutualTLS(t *testing.T) {
	ca, other := newCA(t, "govledger test CA"), newCA(t, "someone else's CA")
	srvCert := ca.issue(t, "127.0.0.1", testNow.Add(-time.Hour), testNow.Add(time.Hour), true)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	clock := func() time.Time { return testNow }
	h := startWith(t, nil, func(ctx context.Context, s *server.Server, ln net.Listener) error {
		return s.ServeTLS(ctx, ln, server.TLSConfig(srvCert, pool, clock))
	})
	base := "https://" + h.addr
	client := func(cert *tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: pool, Time: clock}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	gateway := ca.issue(t, "gateway.test", testNow.Add(-time.Hour), testNow.Add(time.Hour), false)
	expired := ca.issue(t, "gateway.test", testNow.Add(-48*time.Hour), testNow.Add(-24*time.Hour), false)
	stranger := ca.issue(t, "stranger.test", testNow.Add(-time.Hour), testNow.Add(time.Hour), false)
	foreign := other.issue(t, "gateway.test", testNow.Add(-time.Hour), testNow.Add(time.Hour), false)

	post := func(c *http.Client, body, token string) (*http.Response, string, error) {
		hr, _ := http.NewRequest("POST", base+"/v1/handoffs", strings.NewReader(body))
		if token != "" {
			hr.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := c.Do(hr)
		if err != nil {
			return nil, "", err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b), nil
	}
	res, body, err := post(client(&gateway), docAB, "")
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("gateway certificate: %v %v %s", err, res, body)
	}
	if e := h.fake.entry(1); e["submitter"] != pGateway {
		t.Fatalf("submitter %v, want %s (the certificate's principal)", e["submitter"], pGateway)
	}
	if res, body, _ := post(client(&gateway), docBA, ""); res.StatusCode != 403 || !strings.Contains(body, server.CodeForbiddenSource) {
		t.Fatalf("gateway for agent-b: %d %s", res.StatusCode, body)
	}
	if res, body, _ := post(client(&stranger), docAB, ""); res.StatusCode != 401 {
		t.Fatalf("certificate with no tokens file entry: %d %s", res.StatusCode, body)
	}
	if res, _, err := post(client(&expired), docAB, ""); err == nil {
		t.Errorf("expired certificate: handshake succeeded (%d)", res.StatusCode)
	}
	// A client offers only a certificate from a CA the server names, so
	// one from another CA is not even sent: no principal, 401.
	if res, _, err := post(client(&foreign), docAB, ""); err == nil && res.StatusCode != 401 {
		t.Errorf("foreign CA certificate: %d, want a failed handshake or 401", res.StatusCode)
	}
	if res, body, err := post(client(nil), docAB, h.tokens[pAll]); err != nil || res.StatusCode != 201 {
		t.Fatalf("bearer token over TLS without a certificate: %v %v %s", err, res, body)
	}
	if res, _, _ := post(client(nil), docAB, ""); res.StatusCode != 401 {
		t.Fatalf("no certificate, no token: %d", res.StatusCode)
	}
	if n := h.fake.count(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
}

// TestCertificateIdentity: the identity rules take the one name of their
// kind, refuse several (no "last CN wins") and none, and every rule needs
// the clientAuth extended key usage (no EKU extension at all is refused).
func TestCertificateIdentity(t *testing.T) {
	uri := func(s string) *url.URL { u, _ := url.Parse(s); return u }
	cnAttr := func(v string) pkix.AttributeTypeAndValue {
		return pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: v}
	}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	for _, c := range []struct {
		what string
		cert x509.Certificate
		rule string
		want string // "" for a refusal
	}{
		{"one CN", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("gw")}}, ExtKeyUsage: client}, "", "gw"},
		{"one CN, rule cn", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("gw")}}, ExtKeyUsage: client}, server.IdentityCN, "gw"},
		{"two CNs", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("reader"), cnAttr("operator")}}, ExtKeyUsage: client}, "", ""},
		{"no CN", x509.Certificate{ExtKeyUsage: client}, "", ""},
		{"no EKU", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("gw")}}}, "", ""},
		{"serverAuth only", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("gw")}}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, "", ""},
		{"any EKU", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("gw")}}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}, "", ""},
		{"URI SAN", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("cn-ignored")}}, URIs: []*url.URL{uri("spiffe://example.org/gw")}, ExtKeyUsage: client}, server.IdentityURI, "spiffe://example.org/gw"},
		{"two URI SANs", x509.Certificate{URIs: []*url.URL{uri("spiffe://a/x"), uri("spiffe://a/y")}, ExtKeyUsage: client}, server.IdentityURI, ""},
		{"no URI SAN", x509.Certificate{Subject: pkix.Name{Names: []pkix.AttributeTypeAndValue{cnAttr("gw")}}, ExtKeyUsage: client}, server.IdentityURI, ""},
		{"DNS SAN", x509.Certificate{DNSNames: []string{"gw.internal"}, ExtKeyUsage: client}, server.IdentityDNS, "gw.internal"},
		{"two DNS SANs", x509.Certificate{DNSNames: []string{"a.internal", "b.internal"}, ExtKeyUsage: client}, server.IdentityDNS, ""},
		{"unknown rule", x509.Certificate{DNSNames: []string{"gw.internal"}, ExtKeyUsage: client}, "email", ""},
	} {
		got, err := server.CertificateIdentity(&c.cert, c.rule)
		if got != c.want || (c.want == "") != (err != nil) || (err != nil && !errors.Is(err, server.ErrUnauthenticated)) {
			t.Errorf("%s: CertificateIdentity = %q, %v; want %q", c.what, got, err, c.want)
		}
	}
}

// TestMutualTLSNoEKU: over a real handshake, a certificate of the trusted
// CA without the extended key usage extension (which Go's verification
// accepts as "any use") authenticates nobody: 401.
func TestMutualTLSNoEKU(t *testing.T) {
	ca := newCA(t, "govledger test CA")
	srvCert := ca.issue(t, "127.0.0.1", testNow.Add(-time.Hour), testNow.Add(time.Hour), true)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	clock := func() time.Time { return testNow }
	h := startWith(t, nil, func(ctx context.Context, s *server.Server, ln net.Listener) error {
		return s.ServeTLS(ctx, ln, server.TLSConfig(srvCert, pool, clock))
	})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "gateway.test"},
		NotBefore: testNow.Add(-time.Hour), NotAfter: testNow.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	noEKU := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Time: clock, Certificates: []tls.Certificate{noEKU}}}}
	res, err := c.Post("https://"+h.addr+"/v1/handoffs", "application/json", strings.NewReader(docAB))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || !strings.Contains(string(body), "clientAuth") {
		t.Fatalf("certificate without EKU: %d %s, want 401 naming clientAuth", res.StatusCode, body)
	}
	if n := h.fake.count(); n != 0 {
		t.Fatalf("%d entries, want 0", n)
	}
}
