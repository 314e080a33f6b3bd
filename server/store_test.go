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
