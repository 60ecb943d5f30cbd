// Package pgtest starts real PostgreSQL servers for tests: the machine's
// PostgreSQL 15 (initdb, pg_ctl) in a temporary folder, listening on a free
// 127.0.0.1 port and on a Unix socket inside that folder.
//
// PostgreSQL refuses to run as root, and CI runs tests as root: when the
// test process is root, the server's files belong to the unprivileged user
// "nobody" and initdb, pg_ctl and postgres run with its uid and gid.
//
// A missing PostgreSQL is a test failure naming the package to install,
// never a skip. Start gives a test its own server, stopped (pg_ctl stop -m
// fast) when the test ends. Main runs one server for a whole test binary
// (started by the first test that asks for it) and NewDB gives each test a
// fresh database on it.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/govledger/govledger/internal/testenv"
)

// BinDir is where Debian installs PostgreSQL 15's server programs.
const BinDir = "/usr/lib/postgresql/15/bin"

// InstallHint is the remedy a missing server's skip or failure names.
const InstallHint = "apt-get install postgresql (or run .ci/run, which installs it)"

// errMissing marks a start that failed because PostgreSQL 15 is not
// installed: the test skips, or fails under CI (internal/testenv).
var errMissing = errors.New("PostgreSQL 15 is not installed")

// fail ends t for err: through testenv.Missing when PostgreSQL is missing,
// with t.Fatal otherwise.
func fail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, errMissing) {
		testenv.Missing(t, "PostgreSQL 15 ("+BinDir+")", InstallHint, err)
	}
	t.Fatal(err)
}

// RunAs is the user the server runs as when the tests run as root.
const RunAs = "nobody"

// Server is one running PostgreSQL cluster.
type Server struct {
	Dir  string // the folder holding data/ and the socket
	Port int    // its 127.0.0.1 port
	cred *syscall.Credential
	logf string

	mu      sync.Mutex
	stopped bool
	dbs     atomic.Int64
}

// Start initialises and starts a server in a temporary folder of t; it is
// stopped when t ends. When PostgreSQL is missing it skips t, or fails it
// when CI is set (internal/testenv).
func Start(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	s, err := start(dir)
	if err != nil {
		fail(t, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// start runs initdb and pg_ctl start in dir.
func start(dir string) (*Server, error) {
	for _, p := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(BinDir, p)); err != nil {
			return nil, fmt.Errorf("pgtest: %s: %v: %w", filepath.Join(BinDir, p), err, errMissing)
		}
	}
	s := &Server{Dir: dir, logf: filepath.Join(dir, "server.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup(RunAs)
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root needs the user %q to run PostgreSQL as: %v", RunAs, err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
		// The user must reach dir: open dir and its parent (t.TempDir
		// makes both 0700) for traversal only.
		for i, d := 0, dir; i < 2 && d != os.TempDir() && d != "/"; i, d = i+1, filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o011 != 0o011 {
				if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
					return nil, fmt.Errorf("pgtest: %v", err)
				}
			}
		}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			return nil, fmt.Errorf("pgtest: %v", err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
		"--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	// A port found free may be taken before the server binds it: try a
	// few.
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		if last = s.pgctl("start"); last == nil {
			return s, nil
		}
	}
	return nil, last
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run runs a PostgreSQL program as the server's user and returns its
// combined output.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(BinDir, prog), args...)
	cmd.Dir = s.Dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// pgctl runs pg_ctl start, restart or stop (with -m mode for the last
// two) and waits for it to finish.
func (s *Server) pgctl(action string, mode ...string) error {
	args := []string{action, "-D", filepath.Join(s.Dir, "data"), "-w", "-t", "60", "-l", s.logf}
	if action != "stop" {
		args = append(args, "-o", strings.Join([]string{
			"-c listen_addresses=127.0.0.1",
			"-c port=" + strconv.Itoa(s.Port),
			"-c unix_socket_directories=" + s.Dir,
			"-c max_connections=200",
			"-c shared_buffers=32MB",
			"-c fsync=on",
			"-c synchronous_commit=on",
			"-c log_min_messages=warning",
		}, " "))
	}
	args = append(args, mode...)
	out, err := s.run("pg_ctl", args...)
	if err != nil {
		log, _ := os.ReadFile(s.logf)
		if len(log) > 4000 {
			log = log[len(log)-4000:]
		}
		return fmt.Errorf("pgtest: pg_ctl %s: %v\n%s\nserver log:\n%s", action, err, out, log)
	}
	return nil
}

// DSN returns the URL of database db on the server, as the superuser
// "postgres" over TCP.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// CreateDB creates a new, empty database and returns its DSN.
func (s *Server) CreateDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	if out, err := s.Psql("postgres", "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v\n%s", err, out)
	}
	return s.DSN(name)
}

// Psql runs sql in database db with psql (stopping at the first error) and
// returns its output (unaligned, tuples only).
func (s *Server) Psql(db, sql string) (string, error) {
	out, err := s.run("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", s.Dir, "-p", strconv.Itoa(s.Port), "-U", "postgres", "-d", db, "-c", sql)
	return string(out), err
}

// RestartImmediate restarts the server the way a crash does: pg_ctl
// restart -m immediate ends every backend without a checkpoint, and the
// server recovers from its WAL as it starts again. Open connections fail.
func (s *Server) RestartImmediate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pgctl("restart", "-m", "immediate")
}

// Stop stops the server (pg_ctl stop -m fast). Stopping twice is fine.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	return s.pgctl("stop", "-m", "fast")
}

// DataFiles returns the paths of the files holding relation rel (e.g.
// "govledger.blobs"), its TOAST table included, in database db.
func (s *Server) DataFiles(db, rel string) ([]string, error) {
	out, err := s.Psql(db, fmt.Sprintf(`SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid = '%[1]s'::regclass
UNION ALL SELECT pg_relation_filepath(c.reltoastrelid) FROM pg_class c WHERE c.oid = '%[1]s'::regclass AND c.reltoastrelid <> 0`, rel))
	if err != nil {
		return nil, fmt.Errorf("pgtest: %v: %s", err, out)
	}
	var files []string
	for _, p := range strings.Fields(out) {
		base := filepath.Join(s.Dir, "data", p)
		segs, _ := filepath.Glob(base + ".*") // segments beyond 1 GB, fsm, vm
		files = append(files, base)
		for _, g := range segs {
			if !strings.HasSuffix(g, "_fsm") && !strings.HasSuffix(g, "_vm") {
				files = append(files, g)
			}
		}
	}
	return files, nil
}

// shared is the server Main starts on first use, and why it could not
// start.
var shared struct {
	once   sync.Once
	dir    string // Main's folder; "" outside Main
	s      *Server
	err    error
	inMain bool
}

// Main runs a test binary's tests with one server for all of them, and
// stops it afterwards; call it from TestMain as os.Exit(pgtest.Main(m)).
// The server starts on the first Shared or NewDB call, so a run of tests
// that need none (go test -run TestOther) starts none. When the server
// cannot start, each NewDB fails its test with the reason.
func Main(m *testing.M) int {
	sweep()
	shared.inMain = true
	code := m.Run()
	if shared.s != nil {
		if err := shared.s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return code
}

// startShared starts Main's server once.
func startShared() {
	shared.once.Do(func() {
		if !shared.inMain {
			shared.err = errors.New("pgtest: no shared server: call pgtest.Main from TestMain")
			return
		}
		dir, err := os.MkdirTemp("", mainPrefix)
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		// A test binary that dies (a panic, a timeout) skips Main's
		// cleanup: the next Main stops its server (see sweep).
		os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		shared.s, shared.err = start(dir)
	})
}

// mainPrefix starts the name of the folders Main creates.
const mainPrefix = "govledger-pgtest-"

// sweep stops the servers of Main folders whose test binary is gone
// (owner.pid names no live process) and removes the folders.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), mainPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue // unreadable, or its owner is alive
		}
		s := &Server{Dir: dir, logf: filepath.Join(dir, "server.log")}
		if fi, err := os.Stat(dir); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && st.Uid != 0 {
				s.cred = &syscall.Credential{Uid: st.Uid, Gid: st.Gid, NoSetGroups: true}
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
			s.pgctl("stop", "-m", "immediate")
		}
		os.RemoveAll(dir)
	}
}

// Shared returns the server Main runs, starting it on the first call, and
// fails t when there is none.
func Shared(t testing.TB) *Server {
	t.Helper()
	startShared()
	if shared.s == nil {
		fail(t, shared.err)
	}
	return shared.s
}

// NewDB creates a fresh database on the shared server and returns its DSN.
func NewDB(t testing.TB) string {
	t.Helper()
	return Shared(t).CreateDB(t)
}
