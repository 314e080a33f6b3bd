// Package testserver runs a private Redis, PostgreSQL or memcached server for one test,
// so the test can stop and start it, as an outage would, without disturbing
// the shared servers other tests use.
//
// Each server listens on its own free loopback port and keeps its files in a
// directory of its own. [Server.Stop] ends the process and [Server.Start]
// runs it again on the same port and data directory, returning only once it
// answers. The server is stopped for good and its directory removed when the
// test ends.
//
// [RedisCluster] and [RedisSentinel] run groups of Redis processes for
// failover tests: a cluster of three masters with a replica each, and a
// master with a replica watched by three sentinels. Their kill methods end a
// master with SIGKILL, as a crash would, and their WaitFailover methods
// return once a replica has taken over, which takes two or three seconds.
//
// The binaries must be installed: redis-server on PATH (and redis-cli, to
// create a cluster), and PostgreSQL's initdb and postgres (found through
// pg_config, or the highest version under /usr/lib/postgresql). A missing binary fails the test, saying what to
// install; it never skips, so a run without them cannot pass by accident
// (memcached, for [Memcached], likewise).
// PostgreSQL refuses to run as root, so under root the PostgreSQL server runs
// as the postgres system user.
//
//	srv := testserver.Redis(t)
//	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
//	...
//	srv.Stop()  // the outage
//	srv.Start() // the recovery
//
// Servers run on Unix systems only; on Linux they die with the test binary
// even when it is killed.
package testserver

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testneed"
)

// Timeouts of the server lifecycle: generous, since a loaded machine starts
// PostgreSQL slowly, but bounded so that a broken server fails the test.
const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
	pollInterval = 10 * time.Millisecond
)

// Server is one private server process. Its methods must be called from the
// test's goroutine; it is not safe for concurrent use.
type Server struct {
	// Addr is the server's loopback address, "127.0.0.1:port"; it stays the
	// same across Stop and Start.
	Addr string
	// URL is a connection URL for Addr: redis://127.0.0.1:port/0, or
	// postgres://postgres@127.0.0.1:port/postgres?sslmode=disable.
	URL string

	t       testing.TB
	name    string // "redis" or "postgres", for messages
	dir     string // holds the log file and, for PostgreSQL, the data directory
	command func() *exec.Cmd
	ready   func(ctx context.Context) error
	stop    os.Signal // the signal for a clean, prompt shutdown

	proc   *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when proc has been waited for
}

// newServer starts s and registers its final stop, which runs before the
// removal of its directory that tempDir registered.
func newServer(t testing.TB, s *Server) *Server {
	t.Helper()
	s.t = t
	t.Cleanup(s.Stop)
	s.Start()
	return s
}

// Start runs the server and returns once it answers. It fails the test if
// the server exits or does not answer within 30 seconds. Starting a running
// server does nothing.
func (s *Server) Start() {
	s.t.Helper()
	if s.proc != nil {
		return
	}
	log, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatalf("testserver: %s log: %v", s.name, err)
	}
	defer log.Close() // the child has its own copy
	cmd := s.command()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("testserver: start %s: %v", s.name, err)
	}
	s.proc, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		close(exited)
	}(s.exited)

	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	poll := time.NewTicker(pollInterval)
	defer poll.Stop()
	for {
		err := s.ready(ctx)
		if err == nil {
			return
		}
		select {
		case <-poll.C:
		case <-s.exited:
			s.proc = nil
			s.t.Fatalf("testserver: %s on %s exited before answering (%v)\n%s", s.name, s.Addr, cmd.ProcessState, s.logTail())
		case <-ctx.Done():
			s.Stop()
			s.t.Fatalf("testserver: %s on %s did not answer within %v: %v\n%s", s.name, s.Addr, readyTimeout, err, s.logTail())
		}
	}
}

// Stop shuts the server down and returns once its process has exited, so
// that nothing listens on Addr any more. It asks for a prompt shutdown first
// and kills the process after 10 seconds. Stopping a stopped server does
// nothing.
func (s *Server) Stop() {
	s.t.Helper()
	if s.proc == nil {
		return
	}
	proc, exited := s.proc, s.exited
	s.proc = nil
	_ = proc.Process.Signal(s.stop)
	s.signalTree(proc.Process.Pid, syscall.SIGCONT) // a paused server handles the signal once it runs
	select {
	case <-exited:
		return
	case <-time.After(stopTimeout):
	}
	_ = proc.Process.Kill()
	<-exited
	s.t.Errorf("testserver: %s on %s ignored %v for %v and was killed\n%s", s.name, s.Addr, s.stop, stopTimeout, s.logTail())
}

// Pause stops the server's process group and its children with SIGSTOP,
// as a black-holed server: the kernel still accepts connections and takes
// their requests, and nothing answers them until [Server.Resume]. The
// children are PostgreSQL's backends, each in a group of its own, so that
// open connections hang too.
func (s *Server) Pause() { s.signalGroup(syscall.SIGSTOP) }

// Resume lets a paused server run again.
func (s *Server) Resume() { s.signalGroup(syscall.SIGCONT) }

func (s *Server) signalGroup(sig syscall.Signal) {
	s.t.Helper()
	if s.proc == nil {
		s.t.Fatalf("testserver: %s on %s: %v sent to a stopped server", s.name, s.Addr, sig)
	}
	if err := s.signalTree(s.proc.Process.Pid, sig); err != nil {
		s.t.Fatalf("testserver: %s on %s: %v: %v", s.name, s.Addr, sig, err)
	}
}

// signalTree sends sig to the process group of pid and to its children.
func (s *Server) signalTree(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	for _, kid := range children(pid) {
		_ = syscall.Kill(kid, sig) // a backend may have ended meanwhile
	}
	return err
}

func (s *Server) logPath() string { return s.dir + "/server.log" }

// logTail returns the end of the server's log, for failure messages.
func (s *Server) logTail() []byte {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return []byte(err.Error())
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b
}

// freePort returns a loopback port nothing listens on at the moment. Another
// process may take it before the server does; the server then fails to start
// and says so in its log.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// tempDir creates a directory for one server under the system's temporary
// directory, readable by others so that a server running as another user can
// reach its data directory inside it, and removed when t ends. Its path
// stays short: PostgreSQL puts
// its Unix socket there, and socket paths are limited to about 100 bytes.
func tempDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "admit-"+name+"-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("testserver: %v", err)
		}
	})
	return dir
}

// command returns a server command with the process attributes every server
// gets: its own process group, so a terminal's signals reach only the test,
// and, when cred is not nil, another user's identity.
func command(dir string, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr(cred)
	return cmd
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// missing fails t for a binary that is not installed.
func missing(t testing.TB, binary, install string) {
	t.Helper()
	testneed.Missing(t, "testserver: %s not found; the outage tests need it: %s", binary, install)
}
