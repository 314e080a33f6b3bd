package upstream

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Control paths: the app answers them itself, before its router sees the
// request, and does not record them as the last request.
const (
	HitsPath  = "/__router/hits"
	ResetPath = "/__router/reset"
	LastPath  = "/__router/last"
)

// Reported lists the request headers a [Seen] carries, when the request has
// them.
var Reported = []string{
	"X-Forwarded-For",
	"X-Forwarded-Host",
	"X-Forwarded-Proto",
	"X-Real-Ip",
	"X-Http-Method-Override",
	"Forwarded",
}

// Seen is one request as the app saw it, in the JSON shape every testrouter
// app reports.
type Seen struct {
	Method     string            `json:"method"`
	Path       string            `json:"path"` // r.URL.Path: decoded, what the router matches on
	Raw        string            `json:"raw"`  // r.RequestURI: the request target as sent
	Headers    map[string]string `json:"headers"`
	RemoteAddr string            `json:"remote_addr"`
	Scheme     string            `json:"scheme"`
	Host       string            `json:"host"`
	// Facts are what a servlet container believes of the connection
	// (secure, server_name, server_port, client_cert, cipher_suite,
	// ssl_session_id):
	// only the Java kinds report them.
	Facts map[string]string `json:"facts,omitempty"`
}

// State counts the limited handler's runs and remembers the last request.
// Its zero value is ready to use and it is safe for concurrent use.
type State struct {
	hits atomic.Int64

	mu   sync.Mutex // guards last
	last *Seen
}

// Hit records one run of the limited handler.
func (s *State) Hit() { s.hits.Add(1) }

// Wrap returns a handler that answers the control endpoints itself and
// records every other request as the last one before app routes it.
func (s *State) Wrap(app http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == HitsPath && r.Method == http.MethodGet:
			// The process id tells the harness that this app, not another
			// that took its port, is answering.
			writeJSON(w, map[string]int64{"hits": s.hits.Load(), "pid": int64(os.Getpid())})
		case r.URL.Path == ResetPath && r.Method == http.MethodPost:
			s.mu.Lock()
			s.hits.Store(0)
			s.last = nil
			s.mu.Unlock()
			writeJSON(w, map[string]int64{"hits": 0})
		case r.URL.Path == LastPath && r.Method == http.MethodGet:
			s.mu.Lock()
			last := s.last
			s.mu.Unlock()
			if last == nil {
				last = &Seen{}
			}
			writeJSON(w, last)
		default:
			seen := see(r)
			s.mu.Lock()
			s.last = seen
			s.mu.Unlock()
			app.ServeHTTP(w, r)
		}
	})
}

func see(r *http.Request) *Seen {
	seen := &Seen{
		Method:  r.Method,
		Path:    r.URL.Path,
		Raw:     r.RequestURI,
		Headers: map[string]string{},
		Scheme:  "http",
		Host:    r.Host,
	}
	seen.RemoteAddr, _, _ = net.SplitHostPort(r.RemoteAddr)
	for _, name := range Reported {
		// Joined as Werkzeug and Node join repeated headers, so that every
		// app reports one string per header.
		if v := r.Header.Values(name); len(v) > 0 {
			seen.Headers[name] = strings.Join(v, ", ")
		}
	}
	return seen
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("upstream: write control answer: %v", err)
	}
}

// OldMux reports whether http.ServeMux runs with the pre-Go 1.22 semantics
// (GODEBUG httpmuxgo121=1), by asking a fresh mux whether a pattern with a
// wildcard is a wildcard or a literal path.
func OldMux() bool {
	mux := http.NewServeMux()
	mux.HandleFunc("/probe/{x}", func(http.ResponseWriter, *http.Request) {})
	_, pattern := mux.Handler(&http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/probe/y"}})
	return pattern == ""
}

// Main serves h on 127.0.0.1 at the port given as the program's only
// argument, and exits the program if it cannot.
func Main(name string, h http.Handler) {
	log.SetPrefix(name + ": ")
	if len(os.Args) != 2 {
		log.Fatalf("usage: %s PORT", name)
	}
	port, err := strconv.ParseUint(os.Args[1], 10, 16)
	if err != nil {
		log.Fatalf("port %q: %v", os.Args[1], err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.FormatUint(port, 10))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s listening on %s\n", name, ln.Addr())
	log.Fatal(http.Serve(ln, h))
}
