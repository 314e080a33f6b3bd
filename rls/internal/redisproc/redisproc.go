// Package redisproc starts a private redis-server for a test, on a free
// loopback port, so that a test can stop it (a store outage) or point a
// second program at it without touching the shared test server.
package redisproc

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testneed"
)

// startTimeout bounds how long Start waits for the server to say it is
// ready.
const startTimeout = 10 * time.Second

// Server is a running redis-server.
type Server struct {
	// Addr is its host:port on loopback.
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs redis-server on a free loopback port without persistence, and
// stops it when t ends. It fails t when the server does not start.
func Start(t testing.TB) *Server {
	t.Helper()
	port := FreePort(t)
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("redisproc: %v", err)
	}
	if err := cmd.Start(); err != nil {
		testneed.Missing(t, "redisproc: start redis-server (apt-get install redis-server): %v", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "Ready to accept connections") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("redisproc: redis-server on port %d exited before it was ready", port)
		}
	case <-time.After(startTimeout):
		t.Fatalf("redisproc: redis-server on port %d not ready after %v", port, startTimeout)
	}
	return s
}

// Stop ends the server and waits for it to exit; later calls do nothing.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.done
}

// Pause stops the server with SIGSTOP: the kernel still accepts its
// connections and their commands, and nothing answers them, as a
// black-holed store, until Resume.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("redisproc: pause: %v", err)
	}
}

// Resume lets a paused server run again.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("redisproc: resume: %v", err)
	}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redisproc: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
