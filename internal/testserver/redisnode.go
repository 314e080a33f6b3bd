package testserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// This file holds what a cluster and a sentinel group share: redis-server
// processes started with arguments of their own, crashes, and a minimal
// Redis client for asking the nodes about their state.

const redisInstall = "install Redis 7 or later (Debian: apt-get install redis-server)"

// Bounds of the waits for a group of Redis processes to agree. A failover
// normally takes two or three seconds; the rest is headroom for a machine
// loaded by -race.
const (
	settleTimeout = 30 * time.Second
	settlePoll    = 50 * time.Millisecond
	callTimeout   = time.Second
)

// redisBin returns the path of a Redis binary, failing t with an install
// hint when it is not on PATH.
func redisBin(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		missing(t, name, redisInstall)
	}
	return bin
}

// redisNode starts redis-server for t with args, which must make it listen
// on 127.0.0.1:port, and returns once it answers PING. It keeps its log in
// dir and stops for good when t ends. name says which part of a group it
// plays, for messages.
func redisNode(t testing.TB, name, dir string, port int, args ...string) *Server {
	t.Helper()
	bin := redisBin(t, "redis-server")
	s := &Server{
		Addr: hostPort(port),
		name: name,
		dir:  dir,
		stop: syscall.SIGTERM,
	}
	s.URL = "redis://" + s.Addr + "/0"
	s.command = func() *exec.Cmd { return command(dir, nil, bin, args...) }
	s.ready = func(ctx context.Context) error { return ping(ctx, s.Addr, nil) }
	return newServer(t, s)
}

// redisArgs are the arguments every data node gets: loopback only, no
// persistence (a test's data need not outlive it), its files in dir, and a
// master that sends a new replica its snapshot at once, where by default it
// would wait five seconds for more replicas to share it.
func redisArgs(port int, dir string) []string {
	return []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no",
		"--repl-diskless-sync-delay", "0",
	}
}

// kill ends the server with SIGKILL, as a crash would: no shutdown, no last
// word to replicas or peers. It kills the whole process group, so that a
// child forked to send a snapshot to a replica dies too, and returns once
// the server has exited. [Server.Start] runs it again; killing a stopped
// server does nothing.
func (s *Server) kill() {
	if s.proc == nil {
		return
	}
	proc, exited := s.proc, s.exited
	s.proc = nil
	_ = syscall.Kill(-proc.Process.Pid, syscall.SIGKILL)
	<-exited
}

// running reports whether the server's process has been started and not
// stopped or killed since.
func (s *Server) running() bool { return s.proc != nil }

// freePorts returns n distinct loopback ports nothing listens on at the
// moment, holding each until all are chosen so that none repeats.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testserver: %v", err)
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// settle polls cond every 50 ms until it returns nil, and fails t, saying
// what was awaited and cond's last error, if that takes longer than 30
// seconds. It is for the state of other processes, which nothing announces
// to the test.
func settle(t testing.TB, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	poll := time.NewTicker(settlePoll)
	defer poll.Stop()
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			t.Fatalf("testserver: %s: not within %v: %v", what, settleTimeout, err)
		}
	}
}

// errorReply is an error a Redis server answered.
type errorReply string

func (e errorReply) Error() string { return string(e) }

// call sends one command to addr on a connection of its own and returns
// the reply: a string for simple and bulk strings, an int64 for integers,
// an []any for arrays and nil for a null; an error reply is an
// [errorReply]. Like ping it speaks RESP2 directly, so that a node that was
// killed costs one refused dial, not a client's retries and backoff.
func call(ctx context.Context, addr string, args ...string) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	reply, err := readReply(bufio.NewReader(conn))
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", strings.Join(args, " "), addr, err)
	}
	return reply, nil
}

// callString is [call] for a command whose reply is a string.
func callString(ctx context.Context, addr string, args ...string) (string, error) {
	reply, err := call(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("%s on %s: got %v, want a string", strings.Join(args, " "), addr, reply)
	}
	return s, nil
}

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return body, nil
	case '-':
		return nil, errorReply(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	}
	n, err := strconv.Atoi(body)
	if err != nil || n < -1 {
		return nil, fmt.Errorf("malformed reply line %q", line)
	}
	switch {
	case n == -1:
		return nil, nil
	case kind == '$':
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case kind == '*':
		a := make([]any, n)
		for i := range a {
			if a[i], err = readReply(r); err != nil {
				// An error inside an array is a value, not a failure.
				var e errorReply
				if !errors.As(err, &e) {
					return nil, err
				}
				a[i] = e
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("malformed reply line %q", line)
}

// infoField returns the value of field in the "field:value" lines of INFO
// or CLUSTER INFO, and "" when there is none.
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), field+":"); ok {
			return v
		}
	}
	return ""
}

// pairs turns a flat array of alternating names and values, as SENTINEL
// REPLICAS gives for each replica, into a map.
func pairs(reply any) map[string]string {
	a, _ := reply.([]any)
	m := make(map[string]string, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		v, _ := a[i+1].(string)
		m[k] = v
	}
	return m
}

// role returns the first element of the node's ROLE reply, "master",
// "slave" or "sentinel", and for a replica whether its link to its master
// is up ("connected", after the initial sync).
func role(ctx context.Context, addr string) (kind string, linked bool, err error) {
	reply, err := call(ctx, addr, "ROLE")
	if err != nil {
		return "", false, err
	}
	a, _ := reply.([]any)
	if len(a) == 0 {
		return "", false, fmt.Errorf("ROLE on %s: got %v, want an array", addr, reply)
	}
	kind, _ = a[0].(string)
	if kind == "slave" && len(a) >= 4 {
		state, _ := a[3].(string)
		linked = state == "connected"
	}
	return kind, linked, nil
}
