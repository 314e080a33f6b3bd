package testserver_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/admitgo/admit/internal/testserver"
)

// refused wants nothing to listen on addr.
func refused(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("dial %s after Stop: connected, want refused", addr)
	}
}

func TestRedisOutage(t *testing.T) {
	srv := testserver.Redis(t)
	if !strings.HasPrefix(srv.Addr, "127.0.0.1:") || srv.URL != "redis://"+srv.Addr+"/0" {
		t.Fatalf("got Addr %q, URL %q; want a loopback address and its redis:// URL", srv.Addr, srv.URL)
	}
	srv.Stop()
	refused(t, srv.Addr)
	srv.Stop() // stopping again does nothing
	srv.Start()
	conn, err := net.DialTimeout("tcp", srv.Addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s after Start: %v", srv.Addr, err)
	}
	conn.Close()
}

func TestPostgresOutage(t *testing.T) {
	ctx := context.Background()
	srv := testserver.Postgres(t)
	exec := func(sql string) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, srv.URL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (id int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	refused(t, srv.Addr)
	srv.Start()
	if err := exec("SELECT 1 / count(*) FROM kept"); err != nil {
		t.Fatalf("after a restart: %v; want the data directory kept", err)
	}
}

// fatalTB records Fatalf instead of failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingBinaryFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testserver.Redis(f)
	}()
	<-done
	if !strings.Contains(f.msg, "install Redis") {
		t.Errorf("got Fatalf %q, want it to say what to install", f.msg)
	}
}
