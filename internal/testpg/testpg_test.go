package testpg

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestSchemasAreSeparate(t *testing.T) {
	ctx := context.Background()
	a, b := New(t), New(t)
	if a.Schema == b.Schema {
		t.Fatalf("two DBs share schema %s", a.Schema)
	}
	for i, db := range []*DB{a, b} {
		pool := db.Pool(t)
		if _, err := pool.Exec(ctx, "CREATE TABLE t (v int)"); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, "INSERT INTO t VALUES ($1)", i); err != nil {
			t.Fatal(err)
		}
	}
	for i, db := range []*DB{a, b} {
		var got int
		if err := db.Pool(t).QueryRow(ctx, "SELECT v FROM "+db.Schema+".t").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != i {
			t.Errorf("schema %d: got %d, want %d", i, got, i)
		}
	}
}

func TestSchemaDroppedAfterTest(t *testing.T) {
	var schema string
	t.Run("inner", func(t *testing.T) {
		db := New(t)
		schema = db.Schema
		if _, err := db.Pool(t).Exec(context.Background(), "CREATE TABLE t (v int)"); err != nil {
			t.Fatal(err)
		}
	})
	var n int
	admin := New(t).Pool(t)
	err := admin.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("schema %s after its test: got %d, want dropped", schema, n)
	}
}

// fatalTB records a Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper()        {}
func (f *fatalTB) Name() string   { return "TestUnreachable" }
func (f *fatalTB) Cleanup(func()) {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestNewFailsWhenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	t.Setenv(EnvURL, "postgres://postgres:secret@"+addr+"/test?sslmode=disable")

	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(tb)
		t.Error("New returned on an unreachable server, want the test failed")
	}()
	<-done
	for _, want := range []string{"scripts/services", EnvURL, addr} {
		if !strings.Contains(tb.msg, want) {
			t.Errorf("failure message %q does not mention %s", tb.msg, want)
		}
	}
	if strings.Contains(tb.msg, "secret") {
		t.Errorf("failure message %q shows the password", tb.msg)
	}
}

func TestSchemaName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
	tests := []string{
		"TestX",
		"TestSweep/two_concurrent sweeps",
		strings.Repeat("TestVeryLong", 20),
		"Test/ÜnÏcode/名前",
	}
	for _, name := range tests {
		a, b := schemaName(name), schemaName(name)
		if !valid.MatchString(a) {
			t.Errorf("schemaName(%q): got %q, want an unquoted identifier of at most 63 bytes", name, a)
		}
		if a == b {
			t.Errorf("schemaName(%q): got %q twice, want unique names", name, a)
		}
	}
}
