package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/testredis"
)

func TestMetrics(t *testing.T) {
	r := start(t, appRoutes(upstreamApp(t).URL)...)
	r.answers(t, admit.DefaultBudgets()[admit.GroupLink].Burst, http.StatusOK, "GET", "/l/abc", "")
	r.rejected(t, "GET", "/l/abc", "")
	r.answers(t, 2, http.StatusUnauthorized, "POST", "/hooks/github", "{}")

	tests := []struct {
		group, outcome string
		want           int
	}{
		{"link", "ok", admit.DefaultBudgets()[admit.GroupLink].Burst},
		{"link", "rate_limited", 1},
		{"webhook", "client_error", 2},
		{"health", "ok", 0},
	}
	for _, tt := range tests {
		t.Run(tt.group+" "+tt.outcome, func(t *testing.T) {
			if got := r.count(t, tt.group, tt.outcome); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("every outcome of every group", func(t *testing.T) {
		if got, want := len(r.scrape(t, "admit_door_requests_total{")), 3*19; got != want {
			t.Errorf("series: got %d, want %d", got, want)
		}
	})
	t.Run("no client address", func(t *testing.T) {
		for _, line := range r.scrape(t, "admit_") {
			if strings.Contains(line, "127.0.0.1") {
				t.Errorf("a series names the client: %s", line)
			}
		}
	})
	t.Run("Go runtime", func(t *testing.T) {
		if len(r.scrape(t, "go_goroutine")) == 0 {
			t.Error("no go_goroutine series")
		}
	})
}

func TestMetricsSharedStore(t *testing.T) {
	r := start(t, append(appRoutes(upstreamApp(t).URL),
		"--store", testredis.URL(), "--store-prefix", testredis.Prefix(t))...)
	r.answers(t, admit.DefaultBudgets()[admit.GroupLink].Burst, http.StatusOK, "GET", "/l/abc", "")
	r.rejected(t, "GET", "/l/abc", "")
	want := map[string]bool{
		`admit_quota_decisions_total{admit_quota_outcome="allowed",admit_quota_store="redis"`: false,
		`admit_quota_decisions_total{admit_quota_outcome="refused",admit_quota_store="redis"`: false,
		`admit_quota_latency_seconds_count{admit_quota_store="redis"`:                         false,
	}
	for _, line := range r.scrape(t, "admit_quota_") {
		for w := range want {
			if strings.HasPrefix(line, w) {
				want[w] = true
			}
		}
	}
	for w, seen := range want {
		if !seen {
			t.Errorf("/metrics has no series %s...}", w)
		}
	}
	if got := r.count(t, "link", "rate_limited"); got != 1 {
		t.Errorf("link rate_limited: got %d, want 1", got)
	}
}
