// Command gorilla is the Gorilla upstream of testrouter: routes on a
// gorilla/mux Router with its default settings.
//
// By default the router matches on r.URL.Path, which net/http has already
// decoded (UseEncodedPath is off), so /l%2Fabc matches /l/{id} with id
// "abc". It also cleans the path and redirects to the clean form (SkipClean
// is off), and answers 405 to a method no route of that path accepts.
//
// This is a module of its own so that the main module does not depend on
// gorilla/mux; it takes the upstream package from the main module through a
// replace directive.
//
// Usage: gorilla PORT
package main

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/admitgo/admit/internal/testrouter/upstream"
)

func main() {
	var state upstream.State
	r := mux.NewRouter()
	r.HandleFunc("/l/{id}", func(w http.ResponseWriter, r *http.Request) {
		state.Hit()
		fmt.Fprintf(w, "limited %s\n", mux.Vars(r)["id"])
	}).Methods(http.MethodGet)
	r.PathPrefix("/u/").HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "unlimited %s\n", r.URL.Path)
	}).Methods(http.MethodGet)
	upstream.Main("gorilla", state.Wrap(r))
}
