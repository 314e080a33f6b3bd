//go:debug httpmuxgo121=0

// Command servemux is the Go app the NginxGo upstream of testrouter puts
// behind nginx: routes on a Go 1.22 http.ServeMux with method and wildcard
// patterns. It is the router admit itself is tested with, so whatever the
// NginxGo kind shows beyond it is nginx's doing.
//
// Usage: servemux PORT
package main

import (
	"fmt"
	"log"
	"net/http"

	"github.com/admitgo/admit/internal/testrouter/upstream"
)

func main() {
	if upstream.OldMux() {
		log.Fatal("servemux: http.ServeMux runs the pre-Go 1.22 semantics; want GODEBUG httpmuxgo121=0")
	}
	var state upstream.State
	mux := http.NewServeMux()
	mux.HandleFunc("GET /l/{id}", func(w http.ResponseWriter, r *http.Request) {
		state.Hit()
		fmt.Fprintf(w, "limited %s\n", r.PathValue("id"))
	})
	mux.HandleFunc("GET /u/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "unlimited %s\n", r.URL.Path)
	})
	upstream.Main("servemux", state.Wrap(mux))
}
