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
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ledgerbackend"
)

// ServerOptions configure RunServer.
type ServerOptions struct {
	N       int            // documents per measurement (default 1000)
	Clients []int          // concurrent clients (default 1, 8, 64)
	Format  handoff.Format // "" = governed/1
	Dir     string         // scratch folder on the disk to measure (default: a temp dir)
	Stage   func(string)
}

// ServerResult compares, for each number of clients, submitting over
// loopback HTTP to an in-process "govledger serve" with the direct record
// path and raw bbolt with as many writers, measured one after another in
// one run on the same disk.
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
	RawBboltPerSec float64 `json:"raw_bbolt_per_sec"`
	RecordPerSec   float64 `json:"record_per_sec"`
	HTTPPerSec     float64 `json:"http_per_sec"`
	HTTPVsRecord   float64 `json:"http_vs_record"`
	HTTPVsRawBbolt float64 `json:"http_vs_raw_bbolt"`
	RecordP50Ms    float64 `json:"record_p50_ms"`
	RecordP99Ms    float64 `json:"record_p99_ms"`
	HTTPP50Ms      float64 `json:"http_p50_ms"`
	HTTPP99Ms      float64 `json:"http_p99_ms"`
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
	res := &ServerResult{Schema: "govledger.bench-server/v1", Format: string(o.Format), N: o.N}
	base := 0
	docs := func() [][]byte {
		out := make([][]byte, o.N)
		now := time.Now().UTC()
		total := 0
		for i := range out {
			out[i] = g.doc(base+i, now)
			total += len(out[i])
		}
		base += o.N
		res.AvgPayloadBytes = total / o.N
		return out
	}
	for i, c := range o.Clients {
		if c <= 0 {
			return nil, fmt.Errorf("bench: %d clients", c)
		}
		run := ServerRun{Clients: c}
		stage(fmt.Sprintf("raw bbolt, %d writers", c))
		d, err := perf.RawBboltAppend(filepath.Join(dir, fmt.Sprintf("raw-%d.db", i)), docs(), c)
		if err != nil {
			return nil, err
		}
		run.RawBboltPerSec = rate(o.N, d)

		stage(fmt.Sprintf("record, %d writers", c))
		d, lat, err := recordLatency(ctx, filepath.Join(dir, fmt.Sprintf("record-%d.db", i)), g.cfg, docs(), c)
		if err != nil {
			return nil, err
		}
		run.RecordPerSec = rate(o.N, d)
		run.RecordP50Ms, run.RecordP99Ms = percentile(lat, 50), percentile(lat, 99)

		stage(fmt.Sprintf("HTTP, %d clients", c))
		d, lat, err = serveLatency(ctx, filepath.Join(dir, fmt.Sprintf("serve-%d.db", i)), g.cfg, docs(), c)
		if err != nil {
			return nil, err
		}
		run.HTTPPerSec = rate(o.N, d)
		run.HTTPP50Ms, run.HTTPP99Ms = percentile(lat, 50), percentile(lat, 99)
		run.HTTPVsRecord = ratio(run.HTTPPerSec, run.RecordPerSec)
		run.HTTPVsRawBbolt = ratio(run.HTTPPerSec, run.RawBboltPerSec)
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

// recordLatency is the direct path: govern.Record from writers goroutines
// on an in-process ledger (group commit).
func recordLatency(ctx context.Context, path string, cfg *govern.Config, docs [][]byte, writers int) (time.Duration, []time.Duration, error) {
	l, err := ledger.Open(path, nil)
	if err != nil {
		return 0, nil, err
	}
	defer l.Close()
	if _, err := l.Append(ctx, &ledger.Request{Snapshots: snapshots(cfg)}); err != nil {
		return 0, nil, err
	}
	return drive(len(docs), writers, func(i int) error {
		p, err := govern.ReadPayload(bytes.NewReader(docs[i]), cfg.Params.MaxPayload)
		if err != nil {
			return err
		}
		out, err := govern.Record(ctx, l, cfg, "bench", p)
		if err == nil && out.Decision.Decision != "accepted" {
			err = fmt.Errorf("bench: document %d rejected: %v", i, out.Decision.Reasons)
		}
		return err
	})
}

func snapshots(cfg *govern.Config) []ledger.Snapshot {
	return []ledger.Snapshot{{What: "manifest", Bytes: cfg.Registry.Snapshot}, {What: "lock", Bytes: cfg.LockBytes}}
}

// serveLatency submits over loopback HTTP, from clients goroutines with
// keep-alive connections, to a server.Server over ledgerbackend in this
// process, each document with its own Idempotency-Key as the example
// clients send them.
func serveLatency(ctx context.Context, path string, cfg *govern.Config, docs [][]byte, clients int) (time.Duration, []time.Duration, error) {
	l, err := ledger.Open(path, nil)
	if err != nil {
		return 0, nil, err
	}
	defer l.Close()
	be, err := ledgerbackend.New(l, ledgerbackend.Options{
		Load: func() (*ledgerbackend.Policy, error) {
			return &ledgerbackend.Policy{Registry: cfg.Registry, Lock: cfg.Lock, LockBytes: cfg.LockBytes}, nil
		},
		Params: cfg.Params, Root: cfg.Root,
	})
	if err != nil {
		return 0, nil, err
	}
	if _, err := be.Reload(ctx, "bench"); err != nil { // snapshots in force before the clock starts
		return 0, nil, err
	}
	token, hash, err := server.NewToken(rand.Reader)
	if err != nil {
		return 0, nil, err
	}
	tokens := server.NewTokenStore(&server.TokensFile{Version: server.TokensVersion, Tokens: []server.TokenEntry{{
		Name: "bench", Hash: hash, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{server.AnyAgent}, Created: time.Now()}}}, nil)
	srv, err := server.New(server.Config{Backend: be, Tokens: tokens, QueueDepth: be.QueueDepth})
	if err != nil {
		return 0, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()

	q := url.Values{}
	if cfg.Params.From != "" {
		q.Set("from", cfg.Params.From)
		q.Set("to", cfg.Params.To)
	}
	target := "http://" + ln.Addr().String() + "/v1/handoffs"
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	return drive(len(docs), clients, func(i int) error {
		req, err := http.NewRequestWithContext(ctx, "POST", target, bytes.NewReader(docs[i]))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != http.StatusCreated || !bytes.Contains(body, []byte(`"decision":"accepted"`))) {
			err = fmt.Errorf("bench: document %d: %d %s", i, resp.StatusCode, body)
		}
		return err
	})
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
