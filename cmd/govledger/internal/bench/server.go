package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/internal/perf"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/forward"
	"github.com/govledger/govledger/server/ledgerbackend"
	"github.com/jackc/pgx/v5"
)

// ServerOptions configure RunServer.
type ServerOptions struct {
	N       int            // documents per measurement (default 1000)
	Clients []int          // concurrent clients (default 1, 8, 64)
	Format  handoff.Format // "" = governed/1
	Dir     string         // scratch folder on the disk to measure (default: a temp dir)
	// Postgres, when set, is a postgres:// URL of a database in which the
	// bench may CREATE and DROP databases: each number of clients then
	// also submits over HTTP to one, and to two, in-process servers whose
	// ledger is a fresh PostgreSQL database (two replicas share one).
	Postgres string
	Stage    func(string)
}

// ServerResult compares, for each number of clients, submitting over
// loopback HTTP to an in-process "govledger serve" with the direct record
// path and with raw bbolt written by as many writers sharing commits (one
// committer draining the queue into one Update: perf.RawBboltGroupAppend),
// the three taking turns in one run on the same disk.
type ServerResult struct {
	Schema          string      `json:"schema"`
	Format          string      `json:"format"`
	N               int         `json:"n"`
	AvgPayloadBytes int         `json:"avg_payload_bytes"`
	Runs            []ServerRun `json:"runs"`
}

// ServerRun is one number of clients. Rates are per second; latencies are
// per document, in milliseconds.
type ServerRun struct {
	Clients        int     `json:"clients"`
	RawBboltPerSec float64 `json:"raw_bbolt_group_commit_per_sec"` // as many writers, one committer draining the queue into one Update
	RecordPerSec   float64 `json:"record_per_sec"`
	HTTPPerSec     float64 `json:"http_per_sec"`
	HTTPVsRecord   float64 `json:"http_vs_record"`
	HTTPVsRawBbolt float64 `json:"http_vs_raw_bbolt_group_commit"`
	RecordP50Ms    float64 `json:"record_p50_ms"`
	RecordP99Ms    float64 `json:"record_p99_ms"`
	HTTPP50Ms      float64 `json:"http_p50_ms"`
	HTTPP99Ms      float64 `json:"http_p99_ms"`
	// With ServerOptions.Postgres: HTTP to one and to two replicas on one
	// PostgreSQL database, and each against HTTP to the bbolt server.
	PG1PerSec  float64 `json:"pg_1_replica_per_sec,omitzero"`
	PG2PerSec  float64 `json:"pg_2_replicas_per_sec,omitzero"`
	PG1VsBbolt float64 `json:"pg_1_replica_vs_bbolt_http,omitzero"`
	PG2VsBbolt float64 `json:"pg_2_replicas_vs_bbolt_http,omitzero"`
	PG2P50Ms   float64 `json:"pg_2_replicas_p50_ms,omitzero"`
	PG2P99Ms   float64 `json:"pg_2_replicas_p99_ms,omitzero"`
	// Entries per commit (group size) of one and of two replicas, and the
	// commits two replicas built again after the other replica moved the
	// head first, per commit stored.
	PG1EntriesPerCommit   float64 `json:"pg_1_replica_entries_per_commit,omitzero"`
	PG2EntriesPerCommit   float64 `json:"pg_2_replicas_entries_per_commit,omitzero"`
	PG2ConflictsPerCommit float64 `json:"pg_2_replicas_conflicts_per_commit"`
}

// RunServer performs the measurements. Every document is expected to be
// answered 201 (accepted); anything else fails the run.
func RunServer(ctx context.Context, o ServerOptions) (*ServerResult, error) {
	if o.N <= 0 {
		o.N = 1000
	}
	if len(o.Clients) == 0 {
		o.Clients = []int{1, 8, 64}
	}
	if o.Format == "" {
		o.Format = handoff.Governed
	}
	stage := o.Stage
	if stage == nil {
		stage = func(string) {}
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "govledger-bench-server-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	g, err := newGenerator(dir, o.Format)
	if err != nil {
		return nil, err
	}
	res := &ServerResult{Schema: "govledger.bench-server/v2", Format: string(o.Format), N: o.N}
	base := 0
	docs := func(n int) [][]byte {
		out := make([][]byte, n)
		now := time.Now().UTC()
		total := 0
		for i := range out {
			out[i] = g.doc(base+i, now)
			total += len(out[i])
		}
		base += n
		res.AvgPayloadBytes = total / max(n, 1)
		return out
	}
	const rounds = 4 // the three paths take turns, so a noisy moment hits them alike
	for i, c := range o.Clients {
		if c <= 0 {
			return nil, fmt.Errorf("bench: %d clients", c)
		}
		stage(fmt.Sprintf("%d clients: raw bbolt, record and HTTP, %d rounds each", c, rounds))
		rec, err := newRecorder(ctx, filepath.Join(dir, fmt.Sprintf("record-%d.db", i)), g.cfg)
		if err != nil {
			return nil, err
		}
		srv, err := newServed(ctx, filepath.Join(dir, fmt.Sprintf("serve-%d.db", i)), g.cfg, c)
		if err != nil {
			rec.close()
			return nil, err
		}
		var pg1, pg2 []*served
		if o.Postgres != "" {
			if pg1, err = newPGServed(ctx, o.Postgres, fmt.Sprintf("gl_bench_%d_%d_1", os.Getpid(), i), 1, g.cfg, c); err == nil {
				pg2, err = newPGServed(ctx, o.Postgres, fmt.Sprintf("gl_bench_%d_%d_2", os.Getpid(), i), 2, g.cfg, c)
			}
			if err != nil {
				closeAll(pg1)
				rec.close()
				srv.close()
				return nil, err
			}
		}
		var raw, dRec, dHTTP, dPG1, dPG2 time.Duration
		var st1, st2 ledger.Stats // PostgreSQL commits during the measurements
		var latRec, latHTTP, latPG2 []time.Duration
		n := 0
		for r := range rounds {
			m := o.N / rounds
			if r == rounds-1 {
				m = o.N - n
			}
			n += m
			all := docs(m * 5)
			d, err := perf.RawBboltGroupAppend(filepath.Join(dir, fmt.Sprintf("raw-%d-%d.db", i, r)), all[:m], c)
			if err == nil {
				raw += d
				d, lat, err2 := drive(m, c, func(j int) error { return rec.submit(all[m+j]) })
				dRec, latRec, err = dRec+d, append(latRec, lat...), err2
			}
			if err == nil {
				d, lat, err2 := drive(m, c, func(j int) error { return srv.submit(all[2*m+j]) })
				dHTTP, latHTTP, err = dHTTP+d, append(latHTTP, lat...), err2
			}
			if err == nil && pg1 != nil {
				var d time.Duration
				before := stats(pg1)
				d, _, err = drive(m, c, func(j int) error { return pg1[0].submit(all[3*m+j]) })
				dPG1, st1 = dPG1+d, addStats(st1, stats(pg1), before)
				if err == nil {
					var lat []time.Duration
					before := stats(pg2)
					d, lat, err = drive(m, c, func(j int) error { return pg2[j%2].submit(all[4*m+j]) })
					dPG2, latPG2, st2 = dPG2+d, append(latPG2, lat...), addStats(st2, stats(pg2), before)
				}
			}
			if err != nil {
				rec.close()
				srv.close()
				closeAll(pg1)
				closeAll(pg2)
				return nil, err
			}
		}
		rec.close()
		srv.close()
		closeAll(pg1)
		closeAll(pg2)
		run := ServerRun{Clients: c, RawBboltPerSec: rate(o.N, raw), RecordPerSec: rate(o.N, dRec), HTTPPerSec: rate(o.N, dHTTP)}
		run.RecordP50Ms, run.RecordP99Ms = percentile(latRec, 50), percentile(latRec, 99)
		run.HTTPP50Ms, run.HTTPP99Ms = percentile(latHTTP, 50), percentile(latHTTP, 99)
		run.HTTPVsRecord = ratio(run.HTTPPerSec, run.RecordPerSec)
		run.HTTPVsRawBbolt = ratio(run.HTTPPerSec, run.RawBboltPerSec)
		if pg1 != nil {
			run.PG1PerSec, run.PG2PerSec = rate(o.N, dPG1), rate(o.N, dPG2)
			run.PG1VsBbolt, run.PG2VsBbolt = ratio(run.PG1PerSec, run.HTTPPerSec), ratio(run.PG2PerSec, run.HTTPPerSec)
			run.PG2P50Ms, run.PG2P99Ms = percentile(latPG2, 50), percentile(latPG2, 99)
			run.PG1EntriesPerCommit = ratio(float64(st1.Entries), float64(st1.Commits))
			run.PG2EntriesPerCommit = ratio(float64(st2.Entries), float64(st2.Commits))
			run.PG2ConflictsPerCommit = ratio(float64(st2.Conflicts), float64(st2.Commits))
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// drive calls fn for every index 0..n-1 from workers goroutines and
// returns the wall time and each call's latency.
func drive(n, workers int, fn func(i int) error) (time.Duration, []time.Duration, error) {
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				err := fn(i)
				lat[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), lat, firstErr
}

// recorder is the direct path: govern.Record on an in-process ledger,
// called from as many goroutines as there are clients (group commit).
type recorder struct {
	ctx context.Context
	l   *ledger.Ledger
	cfg *govern.Config
}

func newRecorder(ctx context.Context, path string, cfg *govern.Config) (*recorder, error) {
	l, err := bolt.Open(path, nil)
	if err != nil {
		return nil, err
	}
	if _, err := l.Append(ctx, &ledger.Request{Snapshots: snapshots(cfg)}); err != nil {
		l.Close()
		return nil, err
	}
	return &recorder{ctx: ctx, l: l, cfg: cfg}, nil
}

func (r *recorder) submit(doc []byte) error {
	p, err := govern.ReadPayload(bytes.NewReader(doc), r.cfg.Params.MaxPayload)
	if err != nil {
		return err
	}
	out, err := govern.Record(r.ctx, r.l, r.cfg, "bench", p)
	if err == nil && out.Decision.Decision != "accepted" {
		err = fmt.Errorf("bench: document rejected: %v", out.Decision.Reasons)
	}
	return err
}

func (r *recorder) close() { r.l.Close() }

func snapshots(cfg *govern.Config) []ledger.Snapshot {
	return []ledger.Snapshot{{What: "manifest", Bytes: cfg.Registry.Snapshot}, {What: "lock", Bytes: cfg.LockBytes}}
}

// served submits over loopback HTTP, with keep-alive connections, to a
// server.Server over ledgerbackend in this process, each document with its
// own Idempotency-Key as the example clients send them.
type served struct {
	ctx    context.Context
	l      *ledger.Ledger
	keys   string // idempotency key prefix: replicas of one ledger must not share keys
	drop   func() // after close: drop the ledger's database (PostgreSQL)
	stop   func()
	served chan error
	hc     *http.Client
	tr     *http.Transport
	target string
	token  string
	n      atomic.Int64
	// On PostgreSQL: the replica's campaign for the writer role and the
	// listener of the forwarding channel.
	role    *postgres.Role
	fwd     net.Listener
	fwdStop func()
}

func newServed(ctx context.Context, path string, cfg *govern.Config, clients int) (*served, error) {
	l, err := bolt.Open(path, nil)
	if err != nil {
		return nil, err
	}
	return serveLedger(ctx, l, "bench", cfg, clients)
}

// newPGServed creates database name beside admin's (a postgres:// URL)
// and starts replicas in-process servers on it, each over its own
// driver; closing the first replica drops the database.
func newPGServed(ctx context.Context, admin, name string, replicas int, cfg *govern.Config, clients int) ([]*served, error) {
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("bench: --postgres wants a postgres:// URL")
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("bench: postgres %s: %w", postgres.Redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("bench: postgres: create database %s: %w", name, err)
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}
	u.Path = "/" + name
	var out []*served
	for r := range replicas {
		d, err := postgres.Open(ctx, u.String(), &postgres.Options{MaxConns: int32(min(max(clients, 4), 32))})
		var l *ledger.Ledger
		if err == nil {
			if l, err = ledger.New(d, nil); err != nil {
				d.Close()
			}
		}
		var s *served
		if err == nil {
			s, err = serveReplica(ctx, l, d, fmt.Sprintf("replica%d", r), cfg, max(clients/replicas, 1))
		}
		if err != nil {
			closeAll(out)
			drop()
			return nil, fmt.Errorf("bench: postgres replica %d: %w", r+1, err)
		}
		out = append(out, s)
	}
	out[0].drop = drop
	// The replicas agree on the writer before the clock starts.
	for end := time.Now().Add(30 * time.Second); ; {
		held, named := 0, 0
		for _, s := range out {
			if _, self, ok := s.role.Writer(); ok && self {
				held++
			} else if ok {
				named++
			}
		}
		if held == 1 && named == len(out)-1 {
			break
		}
		if time.Now().After(end) {
			closeAll(out)
			return nil, fmt.Errorf("bench: postgres: the %d replicas did not agree on a writer in 30s", len(out))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return out, nil
}

// serveReplica is serveLedger for a replica on PostgreSQL: it campaigns
// for the writer role, listens for the submissions the other replicas
// forward while it holds it, and forwards its own otherwise.
func serveReplica(ctx context.Context, l *ledger.Ledger, d *postgres.Driver, keys string, cfg *govern.Config, clients int) (*served, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return nil, err
	}
	role, err := d.Campaign(ln.Addr().String(), nil)
	if err != nil {
		ln.Close()
		l.Close()
		return nil, err
	}
	s := &served{ctx: ctx, l: l, keys: keys, role: role, fwd: ln}
	if err := s.start(cfg, clients); err != nil {
		role.Close()
		ln.Close()
		l.Close()
		return nil, err
	}
	return s, nil
}

// stats sums the ledger counters of replicas.
func stats(replicas []*served) ledger.Stats {
	var s ledger.Stats
	for _, r := range replicas {
		t := r.l.Stats()
		s.Commits, s.Entries, s.Conflicts = s.Commits+t.Commits, s.Entries+t.Entries, s.Conflicts+t.Conflicts
	}
	return s
}

// addStats adds the counters' growth from before to after to sum.
func addStats(sum, after, before ledger.Stats) ledger.Stats {
	sum.Commits += after.Commits - before.Commits
	sum.Entries += after.Entries - before.Entries
	sum.Conflicts += after.Conflicts - before.Conflicts
	return sum
}

// closeAll closes every server of ss, then drops their database.
func closeAll(ss []*served) {
	for i := len(ss) - 1; i >= 0; i-- {
		ss[i].close()
	}
}

func serveLedger(ctx context.Context, l *ledger.Ledger, keys string, cfg *govern.Config, clients int) (*served, error) {
	s := &served{ctx: ctx, l: l, keys: keys}
	if err := s.start(cfg, clients); err != nil {
		l.Close()
		return nil, err
	}
	return s, nil
}

func (s *served) start(cfg *govern.Config, clients int) error {
	be, err := ledgerbackend.New(s.l, ledgerbackend.Options{
		Load: func() (*ledgerbackend.Policy, error) {
			return &ledgerbackend.Policy{Registry: cfg.Registry, Lock: cfg.Lock, LockBytes: cfg.LockBytes}, nil
		},
		Params: cfg.Params, Root: cfg.Root,
	})
	if err != nil {
		return err
	}
	if _, err := be.Reload(s.ctx, "bench"); err != nil { // snapshots in force before the clock starts
		return err
	}
	var api server.Backend = be
	if s.role != nil {
		role := forward.RoleFunc(func() (string, []byte, bool, bool) {
			w, self, ok := s.role.Writer()
			return w.Addr, w.Secret, self, ok
		})
		api = forward.New(be, role, nil)
		hs := &http.Server{Handler: forward.NewHandler(be, role)}
		go hs.Serve(s.fwd)
		s.fwdStop = func() { hs.Close(); s.role.Close() }
	}
	token, hash, err := server.NewToken(rand.Reader)
	if err != nil {
		return err
	}
	tokens := server.NewTokenStore(&server.TokensFile{Version: server.TokensVersion, Tokens: []server.TokenEntry{{
		Name: "bench", Hash: hash, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{server.AnyAgent}, Created: time.Now()}}}, nil)
	srv, err := server.New(server.Config{Backend: api, Tokens: tokens, QueueDepth: be.QueueDepth})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(s.ctx)
	s.stop, s.served, s.token = stop, make(chan error, 1), token
	go func() { s.served <- srv.Serve(sctx, ln) }()
	q := url.Values{}
	if cfg.Params.From != "" {
		q.Set("from", cfg.Params.From)
		q.Set("to", cfg.Params.To)
	}
	s.target = "http://" + ln.Addr().String() + "/v1/handoffs"
	if len(q) > 0 {
		s.target += "?" + q.Encode()
	}
	s.tr = &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients}
	s.hc = &http.Client{Transport: s.tr, Timeout: time.Minute}
	return nil
}

func (s *served) submit(doc []byte) error {
	req, err := http.NewRequestWithContext(s.ctx, "POST", s.target, bytes.NewReader(doc))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Idempotency-Key", s.keys+"-"+strconv.FormatInt(s.n.Add(1), 10))
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil && (resp.StatusCode != http.StatusCreated || !bytes.Contains(body, []byte(`"decision":"accepted"`))) {
		err = fmt.Errorf("bench: %d %s", resp.StatusCode, body)
	}
	return err
}

func (s *served) close() {
	s.tr.CloseIdleConnections()
	s.stop()
	<-s.served
	if s.fwdStop != nil {
		s.fwdStop()
	}
	s.l.Close()
	if s.drop != nil {
		s.drop()
	}
}

// percentile returns the p-th percentile of ds in milliseconds.
func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = min(max(i-1, 0), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}
