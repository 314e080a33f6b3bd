package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
)

// maxLoggedPath is the most of a request's path an access log line holds:
// a client chooses its path, and a line per refusal of an 8 KiB one would
// make a flood's log eight times the size of its requests.
const maxLoggedPath = 256

// accessLog writes a JSON line for each limit of each request the door
// decides, and for each request the front refuses as malformed, as nginx's
// access log with $limit_req_status does. Admitted requests are logged in
// full, since their budgets bound them; refusals, which a flood makes as
// fast as it sends, are logged at most perSecond a second, and the next
// line logged says how many were left out. It is safe for concurrent use.
type accessLog struct {
	log  *slog.Logger
	door func() *admit.Door // the door serving now, which keys the request
	out  io.Closer          // nil: stderr, which the process keeps
	now  func() time.Time

	mu         sync.Mutex // guards the following fields
	refusals   *rate.Limiter
	suppressed int64 // refusals not logged since the last refusal line
}

// openAccessLog opens the access log cfg names: nil when it is off, stderr
// for "-", otherwise a file opened for appending, as log rotation expects
// (a rotated file is reopened by a restart).
func openAccessLog(cfg config, stderr io.Writer, door func() *admit.Door, now func() time.Time) (*accessLog, error) {
	if cfg.AccessLog == "" {
		return nil, nil
	}
	a := &accessLog{door: door, now: now,
		refusals: rate.NewLimiter(rate.Limit(cfg.AccessLogRefusals), max(cfg.AccessLogRefusals, 1))}
	w := stderr
	if cfg.AccessLog != "-" {
		f, err := os.OpenFile(cfg.AccessLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("admit: --access-log %q: %w", cfg.AccessLog, errors.Unwrap(err))
		}
		w, a.out = f, f
	}
	a.log = slog.New(slog.NewJSONHandler(w, nil))
	return a, nil
}

func (a *accessLog) close() {
	if a != nil && a.out != nil {
		a.out.Close()
	}
}

// decided is the door's Decided hook.
func (a *accessLog) decided(r *http.Request, g admit.Group, outcome string, status int) {
	suppressed, ok := a.sample(refused(outcome, status))
	if !ok {
		return
	}
	key, err := a.door().KeyOf(g, r)
	if err != nil {
		key = ""
	}
	a.write(r, suppressed, slog.String("group", string(g)), slog.String("outcome", outcome),
		slog.Int("status", status), slog.String("key", key))
}

// malformed logs a request the front refused with 400 before any route
// matched, keyed by its client as the listener saw it.
func (a *accessLog) malformed(r *http.Request, reason string) {
	suppressed, ok := a.sample(true)
	if !ok {
		return
	}
	a.write(r, suppressed, slog.String("outcome", "malformed"), slog.String("reason", reason),
		slog.Int("status", http.StatusBadRequest))
}

// refused reports whether an outcome turned the request away, so that its
// line is sampled.
func refused(outcome string, status int) bool {
	switch outcome {
	case "ok", "client_error", "server_error", "fallback",
		"would_rate_limited", "would_client_concurrency", "would_group_concurrency", "would_missing_key":
		return false
	case "store_error":
		return status == http.StatusServiceUnavailable
	}
	return true
}

// sample reports whether a line is logged, and for a refusal how many
// refusals were left out before it.
func (a *accessLog) sample(refusal bool) (suppressed int64, ok bool) {
	if !refusal {
		return 0, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.refusals.AllowN(a.now(), 1) {
		a.suppressed++
		return 0, false
	}
	suppressed, a.suppressed = a.suppressed, 0
	return suppressed, true
}

// clip cuts what a client chose to maxLoggedPath bytes.
func clip(s string) string {
	if len(s) > maxLoggedPath {
		return s[:maxLoggedPath] + "..."
	}
	return s
}

func (a *accessLog) write(r *http.Request, suppressed int64, attrs ...slog.Attr) {
	attrs = append([]slog.Attr{slog.String("method", clip(r.Method)), slog.String("path", clip(r.URL.EscapedPath()))}, attrs...)
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	a.log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}
