package server

import (
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"slices"
)

// Rules naming the principal of a verified client certificate
// (Config.ClientIdentity). The name found is looked up as a tokens file
// entry's mtls_subject.
const (
	IdentityCN  = "cn"  // the subject's common name; a subject with several CNs is refused
	IdentityURI = "uri" // the one URI subject alternative name (e.g. a SPIFFE ID)
	IdentityDNS = "dns" // the one DNS subject alternative name
)

// IdentityRules lists the values Config.ClientIdentity takes.
var IdentityRules = []string{IdentityCN, IdentityURI, IdentityDNS}

var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// CertificateIdentity returns the principal name of a verified client
// certificate under rule ("" is IdentityCN). The certificate must carry
// the extended key usage clientAuth (a certificate without the extension,
// which Go's verification lets through as "any use", is refused) and
// exactly one name of the rule's kind: several CNs, or several SANs of
// the kind, are ambiguous and refused rather than one picked. Errors wrap
// ErrUnauthenticated.
func CertificateIdentity(c *x509.Certificate, rule string) (string, error) {
	if !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return "", fmt.Errorf("%w: client certificate %q lacks the clientAuth extended key usage", ErrUnauthenticated, c.Subject.String())
	}
	var names []string
	switch rule {
	case "", IdentityCN:
		for _, a := range c.Subject.Names {
			if a.Type.Equal(oidCommonName) {
				if s, ok := a.Value.(string); ok {
					names = append(names, s)
				} else {
					return "", fmt.Errorf("%w: client certificate subject CN is not a string", ErrUnauthenticated)
				}
			}
		}
	case IdentityURI:
		for _, u := range c.URIs {
			names = append(names, u.String())
		}
	case IdentityDNS:
		names = c.DNSNames
	default:
		return "", fmt.Errorf("%w: unknown client identity rule %q", ErrUnauthenticated, rule)
	}
	if rule == "" {
		rule = IdentityCN
	}
	switch len(names) {
	case 1:
		if names[0] == "" {
			return "", fmt.Errorf("%w: client certificate %q has an empty %s", ErrUnauthenticated, c.Subject.String(), rule)
		}
		return names[0], nil
	case 0:
		return "", fmt.Errorf("%w: client certificate %q has no %s name (identity rule %s)", ErrUnauthenticated, c.Subject.String(), rule, rule)
	}
	return "", fmt.Errorf("%w: client certificate %q has %d %s names %q: ambiguous, refused", ErrUnauthenticated, c.Subject.String(), len(names), rule, names)
}
