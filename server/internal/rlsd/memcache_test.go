package rlsd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/server/internal/config"
)

// memcachedSays sends cmd to addr and returns memcached's first answer
// line.
func memcachedSays(t *testing.T, addr, cmd string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TestRLSMemcache runs two admit rls on one memcached: a fixed window's
// count is shared; descriptor values an attacker chooses (a space and a
// CR LF that would start a command of their own, more than memcached's
// 250 bytes) are counted under their hashes, and the command they hide
// never runs; with memcached gone, --store-fail decides within the
// store's timeout.
func TestRLSMemcache(t *testing.T) {
	mc := testserver.Memcached(t)
	if got := memcachedSays(t, mc.Addr, "set canary 0 0 1\r\n1\r\n"); got != "STORED\r\n" {
		t.Fatalf("set: %q", got)
	}
	a := startRLS(t, rlsTestConfig, "--store", mc.URL, "--store-fail", "closed")
	b := startRLS(t, rlsTestConfig, "--store", mc.URL+"?max_idle_conns=1", "--store-fail", "closed")
	ca, cb := a.client(t, nil), b.client(t, nil)
	wantCodes(t, codesOf(t, ca, "10.0.0.1", 1), ok)
	wantCodes(t, codesOf(t, cb, "10.0.0.1", 2), ok, over)
	for _, v := range []string{"a b\r\nflush_all\r\nget x", "x\r\ndelete canary\r\n", strings.Repeat("v", 300)} {
		wantCodes(t, codesOf(t, ca, v, 2), ok, ok)
		wantCodes(t, codesOf(t, cb, v, 1), over)
	}
	if got := memcachedSays(t, mc.Addr, "get canary\r\n"); got != "VALUE canary 0 1\r\n" {
		t.Fatalf("canary: %q, want it kept", got)
	}
	mc.Stop()
	begin := time.Now()
	wantCodes(t, codesOf(t, ca, "10.0.0.9", 1), over)
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("with memcached down: answered after %v", took)
	}
}

// TestRLSMemcacheOutageError: with --store-fail error, a call while
// memcached is down is answered UNAVAILABLE, so that Envoy decides.
func TestRLSMemcacheOutageError(t *testing.T) {
	mc := testserver.Memcached(t)
	s := startRLS(t, rlsTestConfig, "--store", mc.URL)
	c := s.client(t, nil)
	wantCodes(t, codesOf(t, c, "a", 1), ok)
	mc.Stop()
	if _, err := c.ShouldRateLimit(context.Background(), envoyRequest("a")); status.Code(err) != codes.Unavailable {
		t.Fatalf("with memcached down: got %v, want UNAVAILABLE", err)
	}
}

// TestRLSMemcacheRefusesTokenBuckets: a token bucket with a memcached
// store stops startup and admit rls validate, exit 2, saying why.
func TestRLSMemcacheRefusesTokenBuckets(t *testing.T) {
	file := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(file, []byte(rlsBucketConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "memcached cannot decide a token bucket atomically"
	for _, args := range [][]string{
		{"--config", file, "--grpc-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--store", "memcache://127.0.0.1:1"},
		{"validate", "--config", file, "--store", "memcache://127.0.0.1:1"},
	} {
		var out bytes.Buffer
		err := Run(context.Background(), args, func(string) string { return "" }, &out, io.Discard)
		if code := config.ExitCode(err); code != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: exit %d, %v; want exit 2 and %q", args, code, err, want)
		}
	}
}
