package postgres

import (
	"net"
	"net/url"
	"strings"
)

// IsDSN reports whether s names a PostgreSQL database as a URL: it starts
// with postgres:// or postgresql:// (the schemes libpq accepts). A command
// line's --db uses it to choose this driver over a bbolt file.
func IsDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns dsn with its secrets replaced by "xxxxx": the password of
// the URL's user information and the values of the password, sslpassword
// and sslkey query parameters. Messages and logs that name a database use
// it. A string that does not parse as a URL is reduced to its scheme.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		if IsDSN(dsn) { // several hosts, or unparsable: the servers only
			return dsn[:strings.Index(dsn, "://")+3] + HostPort(dsn) + "/…"
		}
		return "(a database)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			switch strings.ToLower(k) {
			case "password", "sslpassword", "sslkey":
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// HostPort returns the host:port a postgres:// URL connects to (several,
// comma-separated, when it names several), the way an error names the
// server without the rest of the URL. libpq's defaults fill what the URL
// leaves out: localhost and 5432.
func HostPort(dsn string) string {
	if !IsDSN(dsn) {
		return "(not a postgres:// URL)"
	}
	// url.Parse refuses several hosts: cut the authority out by hand.
	hosts := dsn[strings.Index(dsn, "://")+3:]
	if i := strings.IndexAny(hosts, "/?"); i >= 0 {
		hosts = hosts[:i]
	}
	if i := strings.LastIndex(hosts, "@"); i >= 0 {
		hosts = hosts[i+1:]
	}
	var out []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			h = "localhost"
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "5432")
		}
		out = append(out, h)
	}
	return strings.Join(out, ",")
}
