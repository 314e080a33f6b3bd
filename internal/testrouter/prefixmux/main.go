//go:debug httpmuxgo121=1

// Command prefixmux is the PrefixMux upstream of testrouter: routes
// registered on http.ServeMux as paths and prefixes, the way programs did
// before Go 1.22, and served with that release's old matching
// (GODEBUG httpmuxgo121=1).
//
// The old mux matches on r.URL.Path, which net/http has already decoded, so
// /l%2Fabc reaches the /l/ handler as /l/abc. It also cleans the path and
// redirects /l/./abc and //l/abc to the clean form, and it does not route by
// method: the handlers check the method themselves.
//
// Usage: prefixmux PORT
package main

import (
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/admitgo/admit/internal/testrouter/upstream"
)

func main() {
	// The setting could be overridden by the environment; without it this
	// app would route as Go 1.22 does and test nothing new.
	if !upstream.OldMux() {
		log.Fatal("prefixmux: http.ServeMux runs the Go 1.22 semantics; want GODEBUG httpmuxgo121=1")
	}
	var state upstream.State
	mux := http.NewServeMux()
	mux.HandleFunc("/l/", func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/l/")
		if id == "" || strings.Contains(id, "/") {
			http.NotFound(w, r)
			return
		}
		// GET and HEAD, as a Go 1.22 "GET /l/{id}" pattern would accept.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		state.Hit()
		fmt.Fprintf(w, "limited %s\n", id)
	})
	mux.HandleFunc("/u/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		fmt.Fprintf(w, "unlimited %s\n", r.URL.Path)
	})
	upstream.Main("prefixmux", state.Wrap(mux))
}
