package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/internal/config"
)

// accessLog writes a JSON line for each limit of each request the door
// decides, and for each request the front refuses as malformed, as nginx's
// access log with $limit_req_status does. A line names the route, never the
// path, which may hold a share link's secret, and a key a client chose
// only by a hash under a key of this process, which no guess can be checked
// against. Requests that reached the app are logged in full: the app served
// each of them. Refusals, shadow mode's would-be refusals and requests the
// failure policy let through unlimited, which a flood makes as fast as it
// sends, are logged at most perSecond a second, and the next such line says
// how many were left out. Each line says how long the request took, the
// body bytes it read and wrote, and, when it was forwarded, how long the
// upstream took and its status (see exchange). It is safe for concurrent
// use.
type accessLog struct {
	log     *slog.Logger
	out     *reopener // nil: stderr, which the process keeps
	now     func() time.Time
	secret  []byte   // keys the hash of client-chosen keys; random per process
	serving *pending // the exchanges of the requests being served

	// Refusals of the door and of the front sample apart, so that a
	// flood of malformed requests, which needs no route, cannot hide a
	// flood of a limit's refusals, nor the other way round.
	door, front sampler
}

// sampler writes at most its limiter's rate of lines and counts the rest.
type sampler struct {
	mu         sync.Mutex // guards the following fields
	lim        *rate.Limiter
	suppressed int64 // lines not written since the last one written
}

// openAccessLog opens the access log cfg names: nil when it is off, stderr
// for "-", otherwise a file opened for appending, which a reload opens
// again, so that it follows log rotation as nginx's does on USR1.
func openAccessLog(cfg config.Config, stderr io.Writer, now func() time.Time) (*accessLog, error) {
	if cfg.AccessLog == "" {
		return nil, nil
	}
	a := &accessLog{now: now, secret: make([]byte, 32), serving: newPending()}
	a.door.lim = rate.NewLimiter(rate.Limit(cfg.AccessLogRefusals), cfg.AccessLogRefusals)
	a.front.lim = rate.NewLimiter(rate.Limit(cfg.AccessLogRefusals), cfg.AccessLogRefusals)
	rand.Read(a.secret)
	w := stderr
	if cfg.AccessLog != "-" {
		a.out = &reopener{path: cfg.AccessLog}
		if err := a.out.reopen(); err != nil {
			return nil, err
		}
		w = a.out
	}
	a.log = slog.New(slog.NewJSONHandler(w, nil))
	return a, nil
}

// reopen opens the log file again, for a reload after rotation.
func (a *accessLog) reopen() error {
	if a == nil || a.out == nil {
		return nil
	}
	return a.out.reopen()
}

func (a *accessLog) close() {
	if a != nil && a.out != nil {
		a.out.close()
	}
}

// hook returns the door's Decided hook for the door door returns, which
// keys each request as it decided it.
func (a *accessLog) hook(door func() *admit.Door) func(*http.Request, admit.Group, string, int) {
	return func(r *http.Request, g admit.Group, outcome string, status int) {
		suppressed, ok := a.door.sample(sampledOutcome(outcome), a.now())
		if !ok {
			return
		}
		key, err := door().KeyOf(g, r)
		if err != nil {
			key = ""
		}
		var attrs [13]slog.Attr
		a.write(suppressed, a.serving.find(r), append(attrs[:0], slog.String("method", clip(r.Method)), slog.String("route", r.Pattern),
			slog.String(config.FieldGroup, string(g)), slog.String("outcome", outcome),
			slog.Int("status", status), slog.String(config.FieldKey, a.keyText(key))))
	}
}

// waited returns the door's Waited hook: it adds a request's wait for
// its tokens to its exchange, whose lines then say it in wait_ms.
func (a *accessLog) waited() func(*http.Request, admit.Group, time.Duration) {
	return func(r *http.Request, _ admit.Group, wait time.Duration) {
		if x := a.serving.find(r); x != nil {
			x.wait += wait
		}
	}
}

// malformed logs a request the front refused with status before any
// route matched, once x has answered it: its method and reason, nothing
// of what it held.
func (a *accessLog) malformed(r *http.Request, x *exchange, reason string, status int) {
	suppressed, ok := a.front.sample(true, a.now())
	if !ok {
		return
	}
	var attrs [12]slog.Attr
	a.write(suppressed, x, append(attrs[:0], slog.String("method", clip(r.Method)), slog.String("outcome", "malformed"),
		slog.String("reason", reason), slog.Int("status", status)))
}

// begin returns the exchange a request is served through, which answers
// to w.
func (a *accessLog) begin(w http.ResponseWriter) *exchange {
	x := exchangePool.Get().(*exchange)
	*x = exchange{ResponseWriter: w, now: a.now, start: a.now()}
	return x
}

// track makes x the exchange of c, the request the door decides, until
// untrack, and counts c's body.
func (a *accessLog) track(c *http.Request, x *exchange) {
	x.countBody(c)
	a.serving.add(c, x)
}

func (a *accessLog) untrack(c *http.Request) { a.serving.remove(c) }

// end recycles x once its request has been served.
func (a *accessLog) end(x *exchange) {
	*x = exchange{}
	exchangePool.Put(x)
}

// keyText is a key as the log writes it: a client's prefix, or "global",
// as the door writes them; the hash of a header or path value hashed again
// under this process's secret, because the door's plain hash of a Basic
// credential could be checked against guesses offline.
func (a *accessLog) keyText(key string) string {
	if _, err := netip.ParsePrefix(key); err == nil || key == "global" || key == "" {
		return key
	}
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// sampledOutcome reports whether a line is sampled: it did not reach the
// app under a budget. The names are the admit.door.outcome attribute's:
// all but these are refusals, an overflow answer, shadow mode's would-be
// refusals, a request whose client left while it waited
// (delay_abandoned), and store_error, refused or let through by the
// failure policy.
func sampledOutcome(outcome string) bool {
	switch outcome {
	case "ok", "client_error", "server_error", "fallback", "exempted", "delayed", "would_delayed":
		return false
	}
	return true
}

// sample reports whether a line is written at now, and for a sampled one
// how many sampled lines were left out before it.
func (s *sampler) sample(sampled bool, now time.Time) (suppressed int64, ok bool) {
	if !sampled {
		return 0, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lim.AllowN(now, 1) {
		s.suppressed++
		return 0, false
	}
	suppressed, s.suppressed = s.suppressed, 0
	return suppressed, true
}

// maxLogged is the most of a client-chosen string a line holds.
const maxLogged = 64

// clip cuts what a client chose to maxLogged bytes.
func clip(s string) string {
	if len(s) > maxLogged {
		return s[:maxLogged] + "..."
	}
	return s
}

// write writes a line of attrs, and of what x measured when the request
// has one: duration_ms and bytes_in and bytes_out always, wait_ms when it
// waited for its tokens, upstream_ms when it was forwarded,
// upstream_status when an answer came back.
func (a *accessLog) write(suppressed int64, x *exchange, attrs []slog.Attr) {
	if x != nil {
		attrs = append(attrs, slog.Float64("duration_ms", millis(a.now().Sub(x.start))),
			slog.Int64("bytes_in", x.bodyBytes()), slog.Int64("bytes_out", x.out))
		if x.wait > 0 {
			attrs = append(attrs, slog.Float64("wait_ms", millis(x.wait)))
		}
		if x.up {
			attrs = append(attrs, slog.Float64("upstream_ms", millis(x.upEnd.Sub(x.upStart))))
		}
		if x.upStatus != 0 {
			attrs = append(attrs, slog.Int("upstream_status", x.upStatus))
		}
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	a.log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// millis is d in milliseconds to the microsecond.
func millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1e3
}

// reopener is a file that can be opened again under its name.
type reopener struct {
	path string
	mu   sync.Mutex // guards f
	f    *os.File
}

func (o *reopener) reopen() error {
	f, err := os.OpenFile(o.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("admit: --access-log %q: %w", o.path, errors.Unwrap(err))
	}
	o.mu.Lock()
	old := o.f
	o.f = f
	o.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

func (o *reopener) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.f.Write(p)
}

func (o *reopener) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.f.Close()
}
