package testserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Redis starts a private redis-server for t with persistence off and returns
// once it answers PING. It stops for good when t ends.
func Redis(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missing(t, "redis-server", "install Redis 7 or later (Debian: apt-get install redis-server)")
	}
	port := freePort(t)
	s := &Server{
		Addr: hostPort(port),
		name: "redis",
		dir:  tempDir(t, "redis"),
		stop: syscall.SIGTERM,
	}
	s.URL = "redis://" + s.Addr + "/0"
	s.command = func() *exec.Cmd {
		return command(s.dir, nil, bin,
			"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no",
			"--dir", s.dir, "--daemonize", "no")
	}
	s.ready = func(ctx context.Context) error { return ping(ctx, s.Addr) }
	return newServer(t, s)
}

// ping sends PING and wants PONG, speaking RESP directly so that readiness
// does not depend on a client's pool or retries.
func ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
