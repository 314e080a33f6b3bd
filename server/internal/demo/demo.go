// Package demo is the upstream of admit --demo without --upstream: a
// webhook receiver that checks each delivery's signature as a signing
// provider's receiver would (an HMAC-SHA256 of the body under a shared
// secret), a link route and a health endpoint, served on a loopback port
// of its own.
package demo

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// SignatureHeader carries a delivery's signature, Body is the delivery the
// server's demo text shows, and HealthPath is the health endpoint, which
// the server probes as --upstream-health.
const (
	SignatureHeader = "X-Demo-Signature"
	Body            = `{"event":"demo"}`
	HealthPath      = "/healthz"
)

// secret is the key deliveries are signed with.
const secret = "admit-demo-secret"

// Signature returns the signature header value the demo upstream accepts
// for body.
func Signature(body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// handler is the demo upstream: a webhook receiver that answers 401 to a
// bad signature, a link route and a health endpoint.
func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		got := r.Header.Get(SignatureHeader)
		if !hmac.Equal([]byte(got), []byte(Signature(body))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "delivered to %s\n", r.PathValue("name"))
	})
	mux.HandleFunc("GET /l/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "link %s\n", r.PathValue("id"))
	})
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	return mux
}

// App is the demo upstream, serving until Close.
type App struct {
	URL string // http://127.0.0.1:PORT
	srv *http.Server
}

// Start serves the demo upstream on a free loopback port.
func Start() (*App, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("admit: demo upstream: %w", err)
	}
	srv := &http.Server{Handler: handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &App{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

// Close stops it, cutting what it serves.
func (a *App) Close() { a.srv.Close() }
