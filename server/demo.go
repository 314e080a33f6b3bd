package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/internal/config"
)

// The demo upstream checks webhook deliveries as a signing provider's
// receiver would: an HMAC-SHA256 of the body under a shared secret.
const (
	demoSecret          = "admit-demo-secret"
	demoSignatureHeader = "X-Demo-Signature"
	demoBody            = `{"event":"demo"}`
)

// demoSignature returns the signature header value the demo upstream accepts
// for body.
func demoSignature(body []byte) string {
	mac := hmac.New(sha256.New, []byte(demoSecret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// demoHandler is the built-in demo upstream: a webhook receiver that answers
// 401 to a bad signature, a link route and a health endpoint.
func demoHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		got := r.Header.Get(demoSignatureHeader)
		if !hmac.Equal([]byte(got), []byte(demoSignature(body))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "delivered to %s\n", r.PathValue("name"))
	})
	mux.HandleFunc("GET /l/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "link %s\n", r.PathValue("id"))
	})
	mux.HandleFunc("GET "+config.DemoHealthPath, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	return mux
}

// demoApp is the demo upstream, serving on a loopback port of its own.
type demoApp struct {
	srv *http.Server
	url string
}

func startDemo() (*demoApp, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("admit: demo upstream: %w", err)
	}
	srv := &http.Server{Handler: demoHandler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &demoApp{srv: srv, url: "http://" + ln.Addr().String()}, nil
}

func (d *demoApp) close() { d.srv.Close() }

// printDemo tells the user of --demo what to try.
func (s *server) printDemo(w io.Writer) {
	base := s.baseURL()
	link, _ := s.door.Budget(admit.GroupLink)
	fmt.Fprintf(w, "admit is running in demo mode: %s", base)
	if s.demo != nil {
		fmt.Fprintf(w, " in front of a demo app on %s", s.demo.url)
	} else {
		fmt.Fprintf(w, " in front of %s", s.cfg.Upstream.Redacted())
	}
	fmt.Fprintf(w, "\n\nSee a 429: the link group lets each client in %d times at once, then %v a second.\n", link.Burst, float64(link.Rate))
	fmt.Fprintf(w, "  for i in $(seq %d); do curl -s -o /dev/null -w '%%{http_code} ' %s/l/demo; done; echo\n", link.Burst+2, base)
	fmt.Fprintf(w, "  curl -i %s/l/demo    # 429 Too Many Requests, Retry-After: seconds to wait\n", base)
	if s.demo != nil {
		fmt.Fprintf(w, "\nA signed webhook delivery; only failed deliveries (4xx) cost a token:\n")
		fmt.Fprintf(w, "  curl -i -X POST -H '%s: %s' --data '%s' %s/hooks/demo\n", demoSignatureHeader, demoSignature([]byte(demoBody)), demoBody, base)
	}
	fmt.Fprintf(w, "\nHealth probes over budget are answered from a one-second cache, never 429:\n  curl -i %s/healthz\n", base)
	fmt.Fprintf(w, "\nMetrics:\n  curl -s http://%s/metrics | grep admit_door_requests_total\n", hostPort(s.metricsLn.Addr()))
	fmt.Fprintf(w, "\nStop with Ctrl-C.\n")
}

// baseURL is the proxy's URL as a client on this machine reaches it.
func (s *server) baseURL() string {
	scheme := "http"
	if s.cfg.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + hostPort(s.ln.Addr())
}

// hostPort prints a listener's address for a local client: an unspecified
// host (":8080", "[::]:8080") becomes localhost.
func hostPort(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + port
}
