package testserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testcert"
)

// Redis starts a private redis-server for t with persistence off and returns
// once it answers PING. It stops for good when t ends.
func Redis(t testing.TB) *Server {
	t.Helper()
	return redisServer(t, "redis", "install Redis 7 or later (Debian: apt-get install redis-server)", nil, func(port int) []string {
		return []string{"--port", fmt.Sprint(port)}
	})
}

// RedisTLS starts a private redis-server for t that speaks only TLS, as
// [Redis] does: its certificate, for 127.0.0.1, is one ca issued, and it
// refuses a client without a certificate ca issued (tls-auth-clients yes).
// Its URL is rediss://127.0.0.1:port/0, naming no certificate: a client
// brings its own.
func RedisTLS(t testing.TB, ca *testcert.CA) *Server {
	t.Helper()
	certFile, keyFile := ca.Server(t, 1)
	client := &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{ca.Client(t, testcert.Leaf{Serial: 2})}}
	return redisServer(t, "rediss", "install Redis 7 or later built with TLS (Debian: apt-get install redis-server)", client, func(port int) []string {
		return []string{"--port", "0", "--tls-port", fmt.Sprint(port),
			"--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", ca.File, "--tls-auth-clients", "yes"}
	})
}

// redisServer starts redis-server on a free port with listen's arguments
// for it, persistence off, its URL of scheme, ready once it answers PING
// (over TLS with client when not nil).
func redisServer(t testing.TB, scheme, install string, client *tls.Config, listen func(port int) []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missing(t, "redis-server", install)
	}
	port := freePort(t)
	s := &Server{
		Addr: hostPort(port),
		name: "redis",
		dir:  tempDir(t, "redis"),
		stop: syscall.SIGTERM,
	}
	s.URL = scheme + "://" + s.Addr + "/0"
	args := append(listen(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no")
	s.command = func() *exec.Cmd { return command(s.dir, nil, bin, args...) }
	s.ready = func(ctx context.Context) error { return ping(ctx, s.Addr, client) }
	return newServer(t, s)
}

// ping sends PING and wants PONG, speaking RESP directly so that readiness
// does not depend on a client's pool or retries; over TLS when tlsConfig
// is not nil.
func ping(ctx context.Context, addr string, tlsConfig *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var conn net.Conn
	var err error
	if tlsConfig != nil {
		d := tls.Dialer{Config: tlsConfig}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
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
