package testrouter_test

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	proxyproto "github.com/pires/go-proxyproto"

	"github.com/admitgo/admit/internal/testrouter"
)

// backend stands where the server under test would: it records the peer of
// the last request a front sent on, as a PROXY header names it if the
// front sent one, and the request's headers as they came.
type backend struct {
	addr string

	mu     sync.Mutex // guards peer and header
	peer   string
	header http.Header
}

func startBackend(t *testing.T) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.peer, _, _ = net.SplitHostPort(r.RemoteAddr)
		b.header = r.Header.Clone()
		b.mu.Unlock()
	})}
	// USE reads a header when one comes and serves the peer as itself
	// otherwise; the default, REQUIRE, would refuse the HTTP fronts.
	use := func(proxyproto.ConnPolicyOptions) (proxyproto.Policy, error) { return proxyproto.USE, nil }
	go srv.Serve(&proxyproto.Listener{Listener: ln, ConnPolicy: use})
	t.Cleanup(func() { srv.Close() })
	return b
}

func (b *backend) last() (string, http.Header) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peer, b.header
}

// headerNamed returns the values of the headers whose name is name, in any
// case, as a server that folds case would read them.
func headerNamed(h http.Header, name string) []string {
	var vs []string
	for k, v := range h {
		if strings.EqualFold(k, name) {
			vs = append(vs, v...)
		}
	}
	return vs
}

// TestFronts checks that each front passes on what its FrontKind says, for
// a client on 127.0.0.2 that forges X-Forwarded-For, Forwarded and an
// underscore spelling.
func TestFronts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind       testrouter.FrontKind
		peer       string   // the peer the server sees
		xff        []string // the X-Forwarded-For lines the server gets
		underscore bool     // whether X_Forwarded_For reaches the server
	}{
		{testrouter.NginxFront, testrouter.FrontSource, []string{"1.2.3.4, 127.0.0.2"}, false},
		{testrouter.HAProxyForwardFor, testrouter.FrontSource, []string{"1.2.3.4", "127.0.0.2"}, true},
		{testrouter.HAProxyProxyV2, "127.0.0.2", []string{"1.2.3.4"}, true},
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:       d.DialContext,
		DisableKeepAlives: true,
	}}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			b := startBackend(t)
			f := testrouter.StartFront(t, tt.kind, b.addr)
			req, err := http.NewRequest("GET", f.URL+"/l/abc", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header["X-Forwarded-For"] = []string{"1.2.3.4"}
			req.Header["Forwarded"] = []string{"for=1.2.3.4"}
			req.Header["X_Forwarded_For"] = []string{"1.2.3.5"}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%v\n%s", err, f.LogTail())
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got %s, want 200 from the backend\n%s", resp.Status, f.LogTail())
			}
			peer, h := b.last()
			if peer != tt.peer {
				t.Errorf("the server's peer: got %s, want %s", peer, tt.peer)
			}
			if got := h.Values("X-Forwarded-For"); !slices.Equal(got, tt.xff) {
				t.Errorf("X-Forwarded-For: got %q, want %q", got, tt.xff)
			}
			if got := h.Values("Forwarded"); !slices.Equal(got, []string{"for=1.2.3.4"}) {
				t.Errorf("Forwarded: got %q, want the client's, untouched", got)
			}
			if got := headerNamed(h, "X_Forwarded_For"); (got != nil) != tt.underscore {
				t.Errorf("X_Forwarded_For: got %q, want it passed on: %v", got, tt.underscore)
			}
		})
	}
}

// fatalFront runs StartFront(kind) on a fatalTB and returns its Fatalf
// message.
func fatalFront(t *testing.T, kind testrouter.FrontKind) string {
	t.Helper()
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testrouter.StartFront(f, kind, "127.0.0.1:1")
		t.Errorf("StartFront(%q) returned, want it to fail the test", kind)
	}()
	<-done
	return f.msg
}

func TestUnknownFrontFails(t *testing.T) {
	if msg := fatalFront(t, "traefik"); !strings.Contains(msg, `"traefik"`) {
		t.Errorf("got Fatalf %q, want it to name the kind", msg)
	}
}
