package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/urfave/cli/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/time/rate"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/internal/fileperm"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/forward"
	"github.com/govledger/govledger/server/ledgerbackend"
	"github.com/govledger/govledger/server/ui"
)

func serveCommand(g *globals) *cli.Command {
	var tokens string
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the ledger over HTTP: submit handoffs, read entries, proofs and events",
		Description: `serve opens the ledger (--db) for writing and answers the HTTP API under /v1 on
--addr, deciding every handoff against --manifest and --lock as record does.
Callers authenticate with bearer tokens from the tokens file (--tokens; see
"govledger token") or, with --client-ca, a client certificate. A write is
answered once its entry is durable, or with an RFC 9457 problem saying nothing
was written. The routes are described by GET /openapi.json; the audit viewer
is under /ui/ (--ui=false turns it off).

Signals: SIGHUP re-reads the tokens file, the manifest and the lock (a changed
manifest or lock is recorded as a snapshot entry); the tokens file is also
re-read when it changes (--tokens-poll), and the open streams of a revoked,
expired or logged-out principal end; SIGTERM or SIGINT stops
accepting, lets requests in flight finish, then closes the ledger. Logs are
JSON lines on standard error; the first says "listening" with the address.
If a commit fails, the server drains and exits 3: restart it (opening the
ledger again settles what the failed commit wrote).

Examples:
  govledger token create --scope handoff:write --agents domain-05-product ci
  govledger serve --addr 127.0.0.1:8080
  govledger serve --addr :8443 --tls-cert server.pem --tls-key server.key --client-ca clients.pem
  govledger serve --key ledger.key --rate 50 --max-age 1h
  govledger serve --key ledger.key --witness-policy audit.policy --witness-dir witness --witness-mode fail-closed
  govledger serve --key ledger.key --witness-policy audit.policy --witness-dir witness --witness-qpd 1440
  govledger --db postgres://govledger@db.internal/ledger serve --addr :8080 --forward-addr 10.0.0.5:8081`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", Usage: "address to listen on (port 0: any free port, logged)"},
			&cli.StringFlag{Name: "forward-addr", Usage: "replicas on one PostgreSQL --db: campaign for the writer role and listen here (host:port the other replicas reach, on a private network) for the submissions they forward to the writer; without it each replica commits its own (see docs/guides/replicas.md)"},
			tokensFlag(&tokens),
			&cli.StringFlag{Name: "key", Usage: "checkpoint signer key file (see keygen): enables /v1/checkpoint and signed proofs"},
			&cli.StringFlag{Name: "key-name", Usage: "note key name for an OpenSSH key (default: the ledger origin)"},
			&cli.BoolFlag{Name: "tiles", Value: true, Usage: "serve the C2SP tlog-tiles read API: checkpoint and hash tiles public, entry bundles with ledger:read (see docs/tiles.md)"},
			&cli.StringFlag{Name: "tiles-prefix", Usage: "path the tlog-tiles API is served under (\"\": PREFIX/checkpoint is /checkpoint; e.g. /log)"},
			&cli.StringFlag{Name: "publish-to", Usage: "also publish the ledger into this folder as a static tlog-tiles log, at start and after commits (needs --key; see publish); with --witness-policy, each checkpoint the witnesses' quorum cosigned"},
			&cli.StringFlag{Name: "witness-policy", Usage: "tlog-policy file: submit each checkpoint to its witnesses (those with a URL), serve the newest one its quorum cosigned at PREFIX/checkpoint (needs --key; see docs/witnessing.md)"},
			&cli.StringFlag{Name: "witness-dir", Usage: "with --witness-policy: keep every cosigned checkpoint in this folder (SIZE.checkpoint)"},
			&cli.DurationFlag{Name: "witness-timeout", Value: 10 * time.Second, Usage: "with --witness-policy: time allowed for each witness request"},
			&cli.StringFlag{Name: "witness-mode", Value: witnessFailOpen, Usage: "with --witness-policy: fail-open (serve the log-signed checkpoint until one is cosigned; writes answered once durable) or fail-closed (serve only cosigned checkpoints; a write is answered once a cosigned checkpoint covers it, else 503 NOT_WITNESSED after --witness-ack-timeout)"},
			&cli.IntFlag{Name: "witness-qpd", Value: 86400, Usage: "with --witness-policy: the declared rate, add-checkpoint requests per witness per day (the qpd of a witness network's log list; 86400: at most one a second, 1440: one a minute)"},
			&cli.DurationFlag{Name: "witness-ack-timeout", Value: 10 * time.Second, Usage: "with --witness-mode fail-closed: how long a write waits for a cosigned checkpoint covering it before 503 NOT_WITNESSED (less than --write-timeout)"},
			&cli.BoolFlag{Name: "publish-entries", Usage: "with --publish-to: also write the entry bundles (makes every entry public)"},
			&cli.BoolFlag{Name: "public-entries", Usage: "serve the tlog-tiles entry bundles without a token (they name agents, decisions and reasons)"},
			&cli.BoolFlag{Name: "ui", Value: true, Usage: "serve the audit viewer under /ui/ (--ui=false: the API only)"},
			&cli.StringFlag{Name: "verifier-key", Usage: "the viewer's checkpoint verifier key (file or literal, see keygen) for its in-browser proof check (default: the key --key signs with)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve HTTPS with this certificate (PEM; with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "private key of --tls-cert (PEM)"},
			&cli.StringFlag{Name: "client-ca", Usage: "CA certificates (PEM) whose client certificates authenticate (mutual TLS; needs --tls-cert)"},
			&cli.StringFlag{Name: "client-identity", Value: server.IdentityCN, Usage: "which name of a client certificate is its principal (the tokens file's mtls_subject): cn, uri or dns (the one subject CN, URI SAN or DNS SAN; clientAuth EKU required)"},
			&cli.StringFlag{Name: "root", Value: ".", Usage: "folder that relative paths in documents resolve against (they may not leave it)"},
			&cli.BoolFlag{Name: "strict", Usage: "treat format fallbacks (vbw/1 markdown) as errors"},
			&cli.DurationFlag{Name: "max-age", Value: govern.DefaultMaxAge, Usage: "reject handoffs whose timestamp is older (STALE); 0 disables"},
			&cli.Int64Flag{Name: "max-payload", Value: govern.DefaultMaxPayload, Usage: "record larger documents as PAYLOAD_TOO_LARGE, hash and size only"},
			&cli.Int64Flag{Name: "max-body", Value: server.DefaultMaxBody, Usage: "bytes of one request body: 413 beyond"},
			&cli.Int64Flag{Name: "max-batch-body", Value: server.DefaultMaxBatchBody, Usage: "bytes of a batch body: 413 beyond"},
			&cli.IntFlag{Name: "max-batch-items", Value: server.DefaultMaxBatchItems, Usage: "documents in one batch: 413 beyond"},
			&cli.Float64Flag{Name: "rate", Usage: "requests per second per principal (0: no limit): 429 beyond"},
			&cli.IntFlag{Name: "burst", Usage: "requests a principal may send at once above --rate (default: the rate)"},
			&cli.IntFlag{Name: "max-in-flight", Value: server.DefaultMaxInFlight, Usage: "writes handled at once, and reads separately: 503 beyond"},
			&cli.DurationFlag{Name: "verify-every", Value: 24 * time.Hour, Usage: "verify the whole ledger at start-up and then this often, for the viewer's overview, the log and metrics (0: never)"},
			&cli.IntFlag{Name: "max-streams", Value: server.DefaultMaxStreams, Usage: "open event streams and exports: 503 beyond"},
			&cli.IntFlag{Name: "max-in-flight-per-principal", Value: server.DefaultMaxInFlightPerPrincipal, Usage: "one principal's writes handled at once, and its reads separately: 429 beyond"},
			&cli.IntFlag{Name: "max-streams-per-principal", Value: server.DefaultMaxStreamsPerPrincipal, Usage: "one principal's open event streams, exports and evidence slices: 429 beyond"},
			&cli.IntFlag{Name: "max-sessions-per-principal", Value: ui.DefaultMaxSessionsPerPrincipal, Usage: "one principal's viewer sessions: a login beyond ends its own oldest"},
			&cli.Int64Flag{Name: "min-body-rate", Value: server.DefaultMinBodyRate, Usage: "bytes per second a request body must average after its first 5s: 408 below (0: no minimum)"},
			&cli.IntFlag{Name: "max-conns", Value: server.DefaultMaxConns, Usage: "connections held open (lowered to fit the file descriptor limit): the oldest idle is closed beyond, 503 when all are busy"},
			&cli.IntFlag{Name: "max-idle-conns", Value: server.DefaultMaxIdleConns, Usage: "idle connections (keep-alive, or before their first request): the oldest is closed beyond"},
			&cli.DurationFlag{Name: "tokens-poll", Value: server.DefaultTokensPoll, Usage: "how often the tokens file is checked for changes, reloaded when it changed (0: only on SIGHUP or POST /v1/reload)"},
			&cli.IntFlag{Name: "max-queue", Value: ledgerbackend.DefaultMaxQueue, Usage: "documents waiting for a commit: 503 beyond"},
			&cli.Int64Flag{Name: "max-parse-bytes", Value: ledgerbackend.DefaultMaxParseBytes, Usage: "bytes of documents parsed at once, server-wide: a document waits up to 2s for room, then 503 (see docs/parsing-limits.md)"},
			&cli.DurationFlag{Name: "read-header-timeout", Value: server.DefaultReadHeaderTimeout, Usage: "a client must send its headers within this"},
			&cli.DurationFlag{Name: "read-timeout", Value: server.DefaultReadTimeout, Usage: "a client must send its whole request within this"},
			&cli.DurationFlag{Name: "write-timeout", Value: server.DefaultWriteTimeout, Usage: "an answer must be written within this (streams: per event)"},
			&cli.DurationFlag{Name: "idle-timeout", Value: server.DefaultIdleTimeout, Usage: "idle keep-alive connections are closed after this"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: server.DefaultShutdownTimeout, Usage: "on SIGTERM, how long requests in flight may take to finish"},
			asFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("serve takes no arguments")
			}
			return runServe(c, g, tokensPath(c, g, tokens))
		},
	}
}

// sharedPoll is how often the event streams of a server on a store other
// replicas write (PostgreSQL) read the head for their entries: 0 for a
// file, which only this process writes.
func sharedPoll(db string) time.Duration {
	if postgres.IsDSN(db) {
		return 250 * time.Millisecond
	}
	return 0
}

// serveTLS reads the TLS flags: nil without --tls-cert.
func serveTLS(c *cli.Context) (*tls.Config, error) {
	cert, key, ca := c.String("tls-cert"), c.String("tls-key"), c.String("client-ca")
	switch {
	case cert == "" && key == "" && ca == "":
		return nil, nil
	case cert == "" || key == "":
		return nil, usageErr("serve: --tls-cert and --tls-key go together")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, inputErr(fmt.Errorf("serve: --tls-cert/--tls-key: %w", err))
	}
	var pool *x509.CertPool
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, inputErr(fmt.Errorf("serve: --client-ca: %w", err))
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, inputErr(fmt.Errorf("serve: --client-ca %s: no PEM certificate in it", ca))
		}
	}
	return server.TLSConfig(pair, pool, nil), nil
}

// checkServeFiles refuses a ledger file that group or others may read or
// write, or whose folder (where the ledger, its .serve sidecar and the
// copies of compaction live) they may write; the tokens file is checked
// as it is read (server.ReadTokensFile) and the signer key by
// checkpoint.LoadSigner.
func checkServeFiles(db string) error {
	if postgres.IsDSN(db) {
		return nil
	}
	if err := fileperm.PrivatePath(db); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("serve: ledger %w", err)
	}
	if err := fileperm.Dir(db); err != nil {
		return fmt.Errorf("serve: ledger %w", err)
	}
	return nil
}

func runServe(c *cli.Context, g *globals, tokensFile string) error {
	log := slog.New(slog.NewJSONHandler(g.stderr, nil))
	params := policy.Params{Strict: c.Bool("strict"), MaxAge: int64(c.Duration("max-age")), MaxPayload: c.Int64("max-payload")}
	if params.MaxAge < 0 || params.MaxPayload <= 0 {
		return usageErr("serve: --max-age must not be negative and --max-payload must be positive")
	}
	if c.Float64("rate") < 0 || c.Int("burst") < 0 || c.Int("max-queue") <= 0 || c.Int64("max-parse-bytes") <= 0 {
		return usageErr("serve: --rate and --burst must not be negative, --max-queue and --max-parse-bytes must be positive")
	}
	tc, err := serveTLS(c)
	if err != nil {
		return err
	}
	store, err := server.OpenTokenStore(tokensFile, nil)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return inputErr(fmt.Errorf("tokens file %s does not exist: run 'govledger token create' first", tokensFile))
		}
		return inputErr(err)
	}
	if err := checkServeFiles(g.db); err != nil {
		return inputErr(err)
	}
	load := ledgerbackend.LoadFiles(g.manifest, g.lock)
	if _, err := load(); err != nil { // before the ledger is created
		return inputErr(err)
	}
	l, err := openDB(context.Background(), g, openServe) // every page checked once, at start-up
	if err != nil {
		return err
	}
	defer l.Close()
	var signer note.Signer
	if k := c.String("key"); k != "" {
		if signer, err = loadSigner(k, c.String("key-name"), l.Origin()); err != nil {
			return err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := server.NewMetrics(reg)
	if err == nil {
		err = registerCommitMetrics(reg, l)
	}
	if err != nil {
		return internalErr(err)
	}
	// Whoever starts the server with these files is the operator: on a
	// ledger with no policy in force, New records theirs as submitted by
	// --as (GOVLEDGER_AS, else the OS user), as SIGHUP's reloads are.
	operator, err := submitter(c, g)
	if err != nil {
		return err
	}
	be, err := ledgerbackend.New(l, ledgerbackend.Options{Load: load, Params: params, Root: c.String("root"),
		Signer: signer, Metrics: metrics, MaxQueue: c.Int("max-queue"), Operator: operator, Poll: sharedPoll(g.db),
		MaxParseBytes: c.Int64("max-parse-bytes")})
	if err != nil {
		return inputErr(err)
	}
	if note := be.Note(); note != "" {
		log.Warn(note)
	}
	api, stopForward, err := serveForward(c, g, l, be, log, reg)
	if err != nil {
		return err
	}
	defer stopForward()
	minRate := c.Int64("min-body-rate")
	if minRate == 0 {
		minRate = -1 // no minimum
	}
	poll := c.Duration("tokens-poll")
	if poll == 0 {
		poll = -1
	}
	maxConns, maxIdle := c.Int("max-conns"), c.Int("max-idle-conns")
	if c.Int("max-in-flight-per-principal") <= 0 || c.Int("max-streams-per-principal") <= 0 || c.Int("max-sessions-per-principal") <= 0 ||
		minRate < -1 || maxConns <= 0 || maxIdle <= 0 || poll < -1 {
		return usageErr("serve: the --max-*-per-principal, --max-conns and --max-idle-conns must be positive; --min-body-rate and --tokens-poll must not be negative")
	}
	if fit := fdConnLimit(); fit > 0 && maxConns > fit {
		log.Warn("--max-conns lowered to fit the file descriptor limit", "max_conns", maxConns, "lowered_to", fit)
		maxConns = fit
	}
	maxIdle = min(maxIdle, maxConns)
	cfg := server.Config{
		Backend: api, Tokens: store, Logger: log, Metrics: metrics, QueueDepth: be.QueueDepth,
		MaxBody: c.Int64("max-body"), MaxBatchBody: c.Int64("max-batch-body"), MaxBatchItems: c.Int("max-batch-items"),
		Rate: rate.Limit(c.Float64("rate")), Burst: c.Int("burst"),
		MaxInFlight: c.Int("max-in-flight"), MaxStreams: c.Int("max-streams"),
		MaxInFlightPerPrincipal: min(c.Int("max-in-flight-per-principal"), c.Int("max-in-flight")),
		MaxStreamsPerPrincipal:  min(c.Int("max-streams-per-principal"), c.Int("max-streams")),
		MinBodyRate:             minRate, MaxConns: maxConns, MaxIdleConns: maxIdle,
		TokensFile: tokensFile, TokensPoll: poll,
		ClientIdentity:    c.String("client-identity"),
		ReadHeaderTimeout: c.Duration("read-header-timeout"), ReadTimeout: c.Duration("read-timeout"),
		WriteTimeout: c.Duration("write-timeout"), IdleTimeout: c.Duration("idle-timeout"),
		ShutdownTimeout: c.Duration("shutdown-timeout"),
		Heartbeat:       server.DefaultHeartbeat, MaxHeaderBytes: server.DefaultMaxHeaderBytes, RetryAfter: server.DefaultRetryAfter,
	}
	every := c.Duration("verify-every")
	if every < 0 {
		return usageErr("serve: --verify-every must not be negative")
	}
	var verifier *serveVerifier
	if every > 0 {
		if verifier, err = newServeVerifier(l, log, reg); err != nil {
			return internalErr(err)
		}
	}
	vctx, vcancel := context.WithCancel(c.Context)
	vdone := make(chan struct{})
	if verifier != nil {
		go func() { defer close(vdone); verifier.run(vctx, every) }()
	} else {
		close(vdone)
	}
	// The verification reads the ledger: it ends before the ledger closes.
	stopVerify := func() { vcancel(); <-vdone }
	defer stopVerify()
	if c.String("publish-to") != "" && signer == nil {
		return usageErr("serve: --publish-to needs --key (the checkpoint is signed)")
	}
	if c.Bool("publish-entries") && c.String("publish-to") == "" {
		return usageErr("serve: --publish-entries needs --publish-to")
	}
	if c.Bool("tiles") {
		cfg.Tiles = &server.TilesConfig{Prefix: c.String("tiles-prefix"), PublicEntries: c.Bool("public-entries")}
	} else if c.IsSet("tiles-prefix") || c.Bool("public-entries") {
		return usageErr("serve: --tiles-prefix and --public-entries need --tiles")
	}
	if c.Bool("ui") {
		vk := c.String("verifier-key")
		if b, err := os.ReadFile(vk); vk != "" && err == nil {
			vk = strings.TrimSpace(string(b))
		}
		if derived, ok := checkpoint.VerifierKeyOf(signer); vk == "" && ok {
			// Without --verifier-key the viewer checks proofs against
			// the key the server signs with: a proof never fails for
			// want of configuration. --verifier-key still pins another
			// (the key a reviewer was given out of band).
			vk = derived
		}
		uc := ui.Config{Backend: be, Tokens: store, VerifierKey: vk, VerifierName: c.String("key-name"),
			MaxSessionsPerPrincipal: c.Int("max-sessions-per-principal")}
		if verifier != nil {
			uc.LastVerify = verifier.Last
		}
		viewer, err := ui.New(uc)
		if err != nil {
			return usageErr("serve: --verifier-key: %v", err)
		}
		cfg.UI = viewer
	}
	stopWitnessing := func() {}
	var witnessed *witnessing // nil without --witness-policy
	if pf := c.String("witness-policy"); pf != "" {
		if signer == nil {
			return usageErr("serve: --witness-policy needs --key (witnesses cosign the log's signed checkpoints)")
		}
		policy, err := loadPolicy(pf)
		if err != nil {
			return err
		}
		wc, err := witnessFlags(c, policy, cfg.WriteTimeout)
		if err != nil {
			return err
		}
		if wc.closed && cfg.Tiles == nil {
			return usageErr("serve: --witness-mode fail-closed needs --tiles: the cosigned checkpoint is served at PREFIX/checkpoint and /v1/checkpoint through it")
		}
		wctx, wcancel := context.WithCancel(c.Context)
		w, wait, err := startWitnessing(wctx, log, reg, l, be, signer, wc)
		if err != nil {
			wcancel()
			return err
		}
		stopWitnessing = func() { wcancel(); wait() }
		witnessed = w
		if cfg.Tiles != nil {
			cfg.Tiles.Checkpoint = w.Checkpoint
			cfg.Tiles.CosignedOnly = wc.closed
		}
		if wc.closed {
			cfg.Acknowledge = w.Acknowledge
		}
		cfg.Degraded = w.Degraded
	} else {
		for _, f := range []string{"witness-dir", "witness-mode", "witness-qpd", "witness-ack-timeout", "witness-timeout"} {
			if c.IsSet(f) {
				return usageErr("serve: --%s needs --witness-policy", f)
			}
		}
	}
	defer func() { stopWitnessing() }()
	srv, err := server.New(cfg)
	if err != nil {
		return usageErr("serve: %v", err)
	}
	ln, err := net.Listen("tcp", c.String("addr"))
	if err != nil {
		return internalErr(fmt.Errorf("serve: %w", err))
	}
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				rctx, rcancel := context.WithTimeout(ctx, time.Minute)
				vs, err := srv.Reload(rctx, operator)
				rcancel()
				if err != nil {
					log.Error("reload on SIGHUP failed; the previous tokens, manifest and lock stay in force", "error", err.Error())
					continue
				}
				seqs := make([]uint64, len(vs))
				for i, v := range vs {
					seqs[i] = v.Seq
				}
				log.Info("reloaded on SIGHUP", "snapshot_seqs", seqs)
			case <-be.Failed():
				log.Error("a commit failed: draining, then exiting; restart the server to reopen the ledger", "error", be.Err().Error())
				cancel()
				return
			}
		}
	}()
	scheme := "http"
	if tc != nil {
		scheme = "https"
	}
	// Before "listening": a command that finds the ledger locked from
	// then on can name the server.
	removeSidecar := func() {}
	if !postgres.IsDSN(g.db) { // a database, not a file: no lock to name the server in
		if removeSidecar, err = writeSidecar(g.db, scheme+"://"+ln.Addr().String()); err != nil {
			return internalErr(err)
		}
	}
	defer removeSidecar()
	stopPublisher := func() {}
	if dir := c.String("publish-to"); dir != "" {
		pctx, pcancel := context.WithCancel(ctx)
		wait := startPublisher(pctx, log, l, be, signer, dir, c.Bool("publish-entries"), witnessed)
		stopPublisher = func() { pcancel(); wait() }
	}
	defer func() { stopPublisher() }() // an early return
	log.Info("listening", "addr", ln.Addr().String(), "url", scheme+"://"+ln.Addr().String(), "pid", os.Getpid(),
		"db", g.dbName(), "origin", l.Origin(), "manifest", g.manifest, "lock", g.lock, "tokens", tokensFile,
		"mtls", tc != nil && tc.ClientCAs != nil, "checkpoints", signer != nil, "limits", cfg.String())
	if tc != nil {
		err = srv.ServeTLS(ctx, ln, tc)
	} else {
		err = srv.Serve(ctx, ln)
	}
	stopVerify()
	stopWitnessing()
	stopWitnessing = func() {}
	stopPublisher() // before the ledger closes under it
	stopPublisher = func() {}
	cerr := l.Close() // waits for appends still queued
	switch {
	case be.Err() != nil:
		return internalErr(fmt.Errorf("serve: a commit failed, outcome unknown (run 'govledger verify', then restart): %w", be.Err()))
	case err != nil:
		return internalErr(err)
	case cerr != nil:
		return internalErr(fmt.Errorf("serve: closing the ledger: %w", cerr))
	}
	log.Info("stopped: requests drained, ledger closed")
	return nil
}

// serveForward starts, with --forward-addr, the replica's campaign for
// the writer role and its forwarding channel, and returns the backend the
// API serves: be with submissions forwarded to the writer (server/forward).
// Without the flag it returns be.
func serveForward(c *cli.Context, g *globals, l *ledger.Ledger, be *ledgerbackend.Backend, log *slog.Logger,
	reg prometheus.Registerer) (server.Backend, func(), error) {
	addr := c.String("forward-addr")
	if addr == "" {
		return be, func() {}, nil
	}
	d, ok := l.Driver().(*postgres.Driver)
	if !ok || !postgres.IsDSN(g.db) {
		return nil, nil, usageErr("serve: --forward-addr needs a PostgreSQL --db (replicas sharing one database)")
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
		return nil, nil, usageErr("serve: --forward-addr %q: want host:port with the address the other replicas reach (not a wildcard)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, internalErr(fmt.Errorf("serve: --forward-addr: %w", err))
	}
	r, err := d.Campaign(ln.Addr().String(), nil)
	if err != nil {
		ln.Close()
		return nil, nil, internalErr(fmt.Errorf("serve: writer role: %w", err))
	}
	role := forward.RoleFunc(func() (string, []byte, bool, bool) {
		w, self, ok := r.Writer()
		return w.Addr, w.Secret, self, ok
	})
	hs := &http.Server{Handler: forward.NewHandler(be, role), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fb := forward.New(be, role, nil)
	if err := registerForwardMetrics(reg, fb, r); err != nil {
		ln.Close()
		r.Close()
		return nil, nil, internalErr(err)
	}
	go hs.Serve(ln)
	log.Info("forwarding channel", "forward_addr", ln.Addr().String())
	stop := func() {
		// Forwards in flight finish; the replicas then find no writer
		// until another takes the role, and commit their own.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
		r.Close()
	}
	return fb, stop, nil
}
