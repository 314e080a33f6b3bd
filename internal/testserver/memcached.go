package testserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Memcached starts a private memcached for t, 64 MiB, TCP only, and
// returns once it answers version. It stops for good when t ends. Its URL
// is memcache://127.0.0.1:port.
func Memcached(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		missing(t, "memcached", "install memcached (Debian: apt-get install memcached)")
	}
	port := freePort(t)
	s := &Server{
		Addr: hostPort(port),
		name: "memcached",
		dir:  tempDir(t, "memcached"),
		stop: syscall.SIGTERM,
	}
	s.URL = "memcache://" + s.Addr
	args := []string{"-l", "127.0.0.1", "-p", fmt.Sprint(port), "-U", "0", "-m", "64"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses root without it
	}
	s.command = func() *exec.Cmd { return command(s.dir, nil, bin, args...) }
	s.ready = func(ctx context.Context) error { return memcachedVersion(ctx, s.Addr) }
	return newServer(t, s)
}

// memcachedVersion sends version and wants VERSION, speaking the text
// protocol directly so that readiness does not depend on a client.
func memcachedVersion(ctx context.Context, addr string) error {
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
	if _, err := conn.Write([]byte("version\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "VERSION ") {
		return fmt.Errorf("version answered %q", line)
	}
	return nil
}
