package testredis_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testredis"
)

func TestPrefixIsUniqueAndCleanedUp(t *testing.T) {
	ctx := context.Background()
	c := testredis.Client(t)
	var prefixes []string
	for i := range 2 {
		t.Run(fmt.Sprintf("sub [%d]*?", i), func(t *testing.T) {
			p := testredis.Prefix(t)
			if strings.ContainsAny(p, "*?[]\\ ") || !strings.HasSuffix(p, ":") {
				t.Errorf("prefix %q: want no glob characters or spaces, ending in ':'", p)
			}
			prefixes = append(prefixes, p)
			pipe := c.Pipeline()
			for k := range 2500 { // more than one SCAN page and one UNLINK batch
				pipe.Set(ctx, fmt.Sprintf("%skey%d", p, k), "v", 0)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	if prefixes[0] == prefixes[1] {
		t.Errorf("got the same prefix %q twice, want distinct ones", prefixes[0])
	}
	for _, p := range prefixes {
		keys, err := c.Keys(ctx, p+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 0 {
			t.Errorf("after the test under %q: got %d keys, want 0", p, len(keys))
		}
	}
}

func TestOptionsForStores(t *testing.T) {
	opt := testredis.Options(t)
	if opt.MaxRetries != -1 || !opt.ContextTimeoutEnabled {
		t.Errorf("got MaxRetries %d, ContextTimeoutEnabled %v; want -1, true", opt.MaxRetries, opt.ContextTimeoutEnabled)
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

func TestUnreachableServerFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv(testredis.EnvURL, "redis://"+addr+"/0")

	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testredis.Client(f)
	}()
	<-done
	if !strings.Contains(f.msg, "scripts/services") {
		t.Errorf("got Fatalf %q, want it to tell to run scripts/services", f.msg)
	}
}
