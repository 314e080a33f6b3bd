package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testredis"
)

// TestRedisRefusalStopsStartup refuses to start on a Redis that answers,
// but refuses the connection (a database it does not have), with exit 2
// and the reason, rather than failing every request later.
func TestRedisRefusalStopsStartup(t *testing.T) {
	u, err := url.Parse(testredis.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/4000"
	cfg := serverConfig(t, append(appRoutes("http://127.0.0.1:1"), "--store", u.String())...)
	_, err = newServer(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var uerr usageError
	if !errors.As(err, &uerr) || !strings.Contains(err.Error(), "DB index is out of range") || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("got %v, want a usage error naming --store and the database", err)
	}
}

// TestRedisURLForms parses the URL forms docs/quota.md gives, and refuses
// what go-redis's parsers refuse, at startup.
func TestRedisURLForms(t *testing.T) {
	for _, tt := range []struct {
		url, err string
	}{
		{"redis://:pw@cache:6379/2", ""},
		{"rediss://cache:6380", ""},
		{"redis+cluster://:pw@a:7000?addr=b:7001&addr=c:7002", ""},
		{"redis+sentinel://s1:26379?master_name=admit&addr=s2:26379&password=pw", ""},
		{"redis+cluster://a:7000?adr=b:7001", "unexpected option: adr"},
		{"redis+sentinel://s1:26379?addr=s2:26379", "needs master_name="},
		{"redis://cache:6379/x", "invalid database number"},
	} {
		_, err := parseRedisURL(tt.url)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: got %v, want %q", tt.url, err, tt.err)
		}
	}
	o, err := parseRedisURL("redis+cluster://a:7000?addr=b:7001")
	if err != nil || len(o.cluster.Addrs) != 2 {
		t.Errorf("cluster seeds: got %+v, %v, want a:7000 and b:7001", o.cluster, err)
	}
}
