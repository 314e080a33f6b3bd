package server

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/internal/demo"
)

// printDemo tells the user of --demo what to try.
func (s *server) printDemo(w io.Writer) {
	base := s.baseURL()
	link, _ := s.door.Budget(admit.GroupLink)
	fmt.Fprintf(w, "admit is running in demo mode: %s", base)
	if s.demo != nil {
		fmt.Fprintf(w, " in front of a demo app on %s", s.demo.URL)
	} else {
		fmt.Fprintf(w, " in front of %s", s.cfg.Upstream.Redacted())
	}
	fmt.Fprintf(w, "\n\nSee a 429: the link group lets each client in %d times at once, then %v a second.\n", link.Burst, float64(link.Rate))
	fmt.Fprintf(w, "  for i in $(seq %d); do curl -s -o /dev/null -w '%%{http_code} ' %s/l/demo; done; echo\n", link.Burst+2, base)
	fmt.Fprintf(w, "  curl -i %s/l/demo    # 429 Too Many Requests, Retry-After: seconds to wait\n", base)
	if s.demo != nil {
		fmt.Fprintf(w, "\nA signed webhook delivery; only failed deliveries (4xx) cost a token:\n")
		fmt.Fprintf(w, "  curl -i -X POST -H '%s: %s' --data '%s' %s/hooks/demo\n", demo.SignatureHeader, demo.Signature([]byte(demo.Body)), demo.Body, base)
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
