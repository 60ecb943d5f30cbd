package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/server"
)

// defaultTokensFile is where token and serve keep principals.
const defaultTokensFile = "govledger-tokens.json"

// tokensFlag is --tokens of each token subcommand.
func tokensFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "tokens", Value: defaultTokensFile,
		Usage: "tokens file, holding only the hashes of tokens (env GOVLEDGER_TOKENS)", Destination: dst}
}

// tokensPath applies GOVLEDGER_TOKENS (through the injected environment)
// when --tokens was not given.
func tokensPath(c *cli.Context, g *globals, flag string) string {
	if !c.IsSet("tokens") {
		if v := g.getenv("GOVLEDGER_TOKENS"); v != "" {
			return v
		}
	}
	return flag
}

func tokenCommand(g *globals) *cli.Command {
	cmd := &cli.Command{
		Name:  "token",
		Usage: "issue, list and revoke the bearer tokens of govledger serve",
		Description: `A token is a principal's name, its scopes and, for handoff:write, the source
agents it may submit handoffs for. The tokens file stores only each token's
SHA-256; the token itself is printed once, by create. A running server reads
the file again on SIGHUP or POST /v1/reload.

Scopes: handoff:write (submit and validate; needs --agents), ledger:read
(entries, proofs, blocks, checkpoints, events), payload:read (documents' bytes;
with ledger:read also the export), operator (unblock, redact, reload).

Examples:
  govledger token create --scope handoff:write --agents domain-05-product ci-product
  govledger token list
  govledger token revoke ci-product`,
		Subcommands: []*cli.Command{tokenCreateCommand(g), tokenListCommand(g), tokenRevokeCommand(g)},
		Action: func(c *cli.Context) error {
			return usageErr("token: name a subcommand: create, list or revoke")
		},
	}
	for _, sub := range cmd.Subcommands {
		action, name := sub.Action, "token "+sub.Name
		sub.Action = func(c *cli.Context) error { return commandErr(name, action(c)) }
	}
	return cmd
}

// commandErr makes every error of a command start with the command's
// name ("token create: ..."), keeping its exit class: a user who typed
// "token create" is told which command refused, never a bare "create:" or
// a message naming no command (issue 25).
func commandErr(name string, err error) error {
	if err == nil || errors.Is(err, errFound) || strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return &exitError{code: exitCode(classify(err)), err: fmt.Errorf("%s: %w", name, err)}
}

type tokenCreateResult struct {
	Schema      string         `json:"schema"`
	Name        string         `json:"name"`
	Token       string         `json:"token,omitzero"`
	MTLSSubject string         `json:"mtls_subject,omitzero"`
	Scopes      []server.Scope `json:"scopes"`
	Agents      []string       `json:"agents,omitzero"`
	Expires     time.Time      `json:"expires,omitzero"`
	File        string         `json:"file"`
}

func tokenCreateCommand(g *globals) *cli.Command {
	var file, subject string
	return &cli.Command{
		Name:      "create",
		Usage:     "issue a token (printed once) and store its hash",
		ArgsUsage: "NAME",
		Description: `create adds NAME to the tokens file and prints the new token on standard
output, once: keep it in the client's secret store (GOVLEDGER_TOKEN for the
example clients). NAME is recorded as the submitter of every entry the token
writes. With --mtls-subject, the entry is for a client certificate whose
subject common name is CN, and no token is issued.

Examples:
  govledger token create --scope handoff:write --agents domain-05-product ci-product
  govledger token create --scope ledger:read --scope payload:read --expires 720h auditor
  govledger token create --scope handoff:write --agents '*' --mtls-subject gateway.internal gateway`,
		Flags: []cli.Flag{
			tokensFlag(&file),
			&cli.StringSliceFlag{Name: "scope", Usage: "scope to grant (repeat, or comma-separate): handoff:write, ledger:read, payload:read, operator"},
			&cli.StringSliceFlag{Name: "agents", Usage: "with handoff:write: the source agents it may submit for (comma-separated), or '*' for any"},
			&cli.DurationFlag{Name: "expires", Usage: "the token stops working after this long (e.g. 720h; 0: never)"},
			&cli.StringFlag{Name: "mtls-subject", Usage: "a client certificate subject CN instead of a bearer token", Destination: &subject},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("token create: want exactly one NAME")
			}
			name := c.Args().First()
			if err := server.CheckTokenName(name); err != nil {
				return usageErr("token create: %v", err)
			}
			path := tokensPath(c, g, file)
			var scopes []server.Scope
			for _, s := range c.StringSlice("scope") {
				sc := server.Scope(strings.TrimSpace(s))
				if !slices.Contains(server.Scopes, sc) {
					return usageErr("token create: --scope %q: want handoff:write, ledger:read, payload:read or operator", s)
				}
				if !slices.Contains(scopes, sc) {
					scopes = append(scopes, sc)
				}
			}
			if len(scopes) == 0 {
				return usageErr("token create: --scope is required")
			}
			var agents []string
			for _, a := range c.StringSlice("agents") {
				if a = strings.TrimSpace(a); a != "" {
					agents = append(agents, a)
				}
			}
			if d := c.Duration("expires"); d < 0 {
				return usageErr("token create: --expires must not be negative")
			}
			now := g.clock()().UTC().Truncate(time.Second)
			e := server.TokenEntry{Name: name, MTLSSubject: subject, Scopes: scopes, Agents: agents, Created: now}
			if d := c.Duration("expires"); d > 0 {
				e.Expires = now.Add(d)
			}
			var token string
			if subject == "" {
				var err error
				if token, e.Hash, err = server.NewToken(rand.Reader); err != nil {
					return internalErr(err)
				}
			}
			if err := editTokens(c.Context, path, true, "token create", func(f *server.TokensFile) error {
				if err := f.Add(e); err != nil {
					return inputErr(fmt.Errorf("token create: %s: %w", path, err))
				}
				return nil
			}); err != nil {
				return err
			}
			res := tokenCreateResult{Schema: "govledger.token-create/v1", Name: name, Token: token, MTLSSubject: subject,
				Scopes: scopes, Agents: agents, Expires: e.Expires, File: path}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			if token != "" {
				fmt.Fprintln(g.stdout, token)
				fmt.Fprintf(g.stderr, "token %s (%s) stored as a hash in %s; it is not shown again\n", name, describeGrant(scopes, agents), path)
			} else {
				fmt.Fprintf(g.stdout, "certificate subject %q is principal %s (%s) in %s\n", subject, name, describeGrant(scopes, agents), path)
			}
			return nil
		},
	}
}

func describeGrant(scopes []server.Scope, agents []string) string {
	var ss []string
	for _, s := range scopes {
		ss = append(ss, string(s))
	}
	d := "scopes " + strings.Join(ss, ",")
	if len(agents) > 0 {
		d += "; agents " + strings.Join(agents, ",")
	}
	return d
}

// editTokens applies edit to the tokens file under its lock
// (server.EditTokensFile), so concurrent create and revoke lose nothing.
// The errors edit returns are given back as they are; a missing,
// unreadable, malformed or too open file is an input error, a failed write
// an internal one.
func editTokens(ctx context.Context, path string, create bool, op string, edit func(*server.TokensFile) error) error {
	var editErr error
	err := server.EditTokensFile(ctx, path, create, func(f *server.TokensFile) error {
		editErr = edit(f)
		return editErr
	})
	switch {
	case err == nil:
		return nil
	case editErr != nil:
		return editErr
	case errors.Is(err, fs.ErrNotExist) && !create:
		return inputErr(fmt.Errorf("tokens file %s does not exist: run 'govledger token create' first", path))
	case errors.Is(err, server.ErrFilePermissions), errors.Is(err, server.ErrTokensFile):
		return inputErr(fmt.Errorf("%s: %w", op, err))
	}
	return internalErr(fmt.Errorf("%s: writing %s: %w", op, path, err))
}

// readTokens reads the tokens file; a missing one is empty when create is
// set. Every other failure is an input error naming the file and line.
func readTokens(path string, create bool) (*server.TokensFile, error) {
	f, err := server.ReadTokensFile(path)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, fs.ErrNotExist) && create:
		return &server.TokensFile{Version: server.TokensVersion, Tokens: []server.TokenEntry{}}, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, inputErr(fmt.Errorf("tokens file %s does not exist: run 'govledger token create' first", path))
	}
	return nil, inputErr(err)
}

type tokenListResult struct {
	Schema string          `json:"schema"`
	File   string          `json:"file"`
	Tokens []tokenListItem `json:"tokens"`
}

type tokenListItem struct {
	Name        string         `json:"name"`
	Scopes      []server.Scope `json:"scopes"`
	Agents      []string       `json:"agents,omitzero"`
	Bearer      bool           `json:"bearer"` // a token was issued
	MTLSSubject string         `json:"mtls_subject,omitzero"`
	Created     time.Time      `json:"created"`
	Expires     time.Time      `json:"expires,omitzero"`
	Expired     bool           `json:"expired"`
}

func tokenListCommand(g *globals) *cli.Command {
	var file string
	return &cli.Command{
		Name:  "list",
		Usage: "list the tokens file's principals (never the tokens)",
		Description: `list shows each principal's name, scopes, agents, credential and expiry.

Examples:
  govledger token list
  govledger token list --tokens /etc/govledger/tokens.json -o json`,
		Flags: []cli.Flag{tokensFlag(&file)},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("token list: takes no arguments")
			}
			path := tokensPath(c, g, file)
			f, err := readTokens(path, false)
			if err != nil {
				return err
			}
			now := g.clock()()
			res := tokenListResult{Schema: "govledger.token-list/v1", File: path, Tokens: []tokenListItem{}}
			for _, e := range f.Tokens {
				res.Tokens = append(res.Tokens, tokenListItem{Name: e.Name, Scopes: e.Scopes, Agents: e.Agents, Bearer: e.Hash != "",
					MTLSSubject: e.MTLSSubject, Created: e.Created, Expires: e.Expires, Expired: !e.Expires.IsZero() && !now.Before(e.Expires)})
			}
			slices.SortFunc(res.Tokens, func(a, b tokenListItem) int { return strings.Compare(a.Name, b.Name) })
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCOPES\tAGENTS\tCREDENTIAL\tCREATED\tEXPIRES")
			for _, t := range res.Tokens {
				var ss []string
				for _, s := range t.Scopes {
					ss = append(ss, string(s))
				}
				cred := []string{}
				if t.Bearer {
					cred = append(cred, "token")
				}
				if t.MTLSSubject != "" {
					cred = append(cred, "mtls:"+t.MTLSSubject)
				}
				exp := "never"
				if !t.Expires.IsZero() {
					exp = t.Expires.Format(time.RFC3339)
					if t.Expired {
						exp += " (expired)"
					}
				}
				agents := strings.Join(t.Agents, ",")
				if agents == "" {
					agents = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, strings.Join(ss, ","), agents, strings.Join(cred, "+"),
					t.Created.Format(time.RFC3339), exp)
			}
			return tw.Flush()
		},
	}
}

type tokenRevokeResult struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	File   string `json:"file"`
}

func tokenRevokeCommand(g *globals) *cli.Command {
	var file string
	return &cli.Command{
		Name:      "revoke",
		Usage:     "remove a principal from the tokens file",
		ArgsUsage: "NAME",
		Description: `revoke deletes NAME's entry. A running server notices the change within
--tokens-poll (500ms; SIGHUP or POST /v1/reload re-read the file at once),
stops accepting the token and ends its open streams.

Examples:
  govledger token revoke ci-product
  govledger token revoke --tokens /etc/govledger/tokens.json auditor`,
		Flags: []cli.Flag{tokensFlag(&file)},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("token revoke: want exactly one NAME")
			}
			name, path := c.Args().First(), tokensPath(c, g, file)
			if err := editTokens(c.Context, path, false, "token revoke", func(f *server.TokensFile) error {
				if !f.Remove(name) {
					return inputErr(fmt.Errorf("token revoke: no principal %q in %s", name, path))
				}
				return nil
			}); err != nil {
				return err
			}
			if g.output == "json" {
				return writeJSON(g.stdout, tokenRevokeResult{Schema: "govledger.token-revoke/v1", Name: name, File: path})
			}
			fmt.Fprintf(g.stdout, "revoked %s in %s (a running server drops it on SIGHUP or POST /v1/reload)\n", name, path)
			return nil
		},
	}
}
