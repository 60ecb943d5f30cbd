package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeMutualTLS serves HTTPS with --tls-cert/--tls-key and
// --client-ca: a client certificate whose CN is a tokens-file
// mtls_subject is that principal (recorded as the submitter); without a
// certificate a bearer token still works; neither is 401; a certificate
// from another CA fails the handshake.
func TestServeMutualTLS(t *testing.T) {
	e := newServeEnv(t, "registry")
	now := time.Now()
	ca, caKey := makeCert(t, "govledger test CA", nil, nil, now, true)
	other, otherKey := makeCert(t, "another CA", nil, nil, now, true)
	srvCert, srvKey := makeCert(t, "127.0.0.1", ca, caKey, now, false)
	cliCert, cliKey := makeCert(t, "gateway.internal", ca, caKey, now, false)
	strayCert, strayKey := makeCert(t, "gateway.internal", other, otherKey, now, false)
	write := func(name string, blocks ...*pem.Block) string {
		var b bytes.Buffer
		for _, bl := range blocks {
			pem.Encode(&b, bl)
		}
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := e.start("--tls-cert", write("server.pem", certPEM(srvCert)), "--tls-key", write("server.key", keyPEM(t, srvKey)),
		"--client-ca", write("ca.pem", certPEM(ca)))
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("listening on %s, want https", s.url)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	client := func(cert *x509.Certificate, key *ecdsa.PrivateKey) *http.Client {
		tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if cert != nil {
			// Offered whatever CAs the server names, as a hostile client would.
			tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return &tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key}, nil
			}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	post := func(c *http.Client, token string) (int, string, error) {
		req, _ := http.NewRequest("POST", s.url+"/v1/handoffs", bytes.NewReader(demoDoc(t, "01-product-to-analysis.json")))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	status, body, err := post(client(cliCert, cliKey), "")
	if err != nil || status != 201 {
		t.Fatalf("with the gateway certificate: %d %v %s", status, err, body)
	}
	get, _ := http.NewRequest("GET", s.url+"/v1/entries?limit=1", nil)
	resp, err := client(cliCert, cliKey).Do(get)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"submitter":"gateway"`) {
		t.Fatalf("the certificate's principal is not the submitter: %s", b)
	}
	if status, body, err := post(client(nil, nil), e.tok["writer"]); err != nil || status != 201 {
		t.Fatalf("bearer token over TLS without a certificate: %d %v %s", status, err, body)
	}
	if status, body, err := post(client(nil, nil), ""); err != nil || status != 401 || !strings.Contains(body, "UNAUTHENTICATED") {
		t.Fatalf("neither certificate nor token: %d %v %s", status, err, body)
	}
	// A certificate from another CA fails the handshake.
	if status, body, err := post(client(strayCert, strayKey), ""); err == nil {
		t.Fatalf("a certificate from another CA was accepted: %d %s", status, body)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
}

// makeCert returns a certificate for cn signed by parent (self-signed
// when parent is nil; a CA when ca is set), valid around now.
func makeCert(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, now time.Time, ca bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		tmpl.ExtKeyUsage, tmpl.IPAddresses = nil, nil
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func certPEM(c *x509.Certificate) *pem.Block { return &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw} }

func keyPEM(t *testing.T, k *ecdsa.PrivateKey) *pem.Block {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
}
