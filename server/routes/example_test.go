package routes_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/admitgo/admit/server/routes"
)

// A table that folds case and trailing slashes, as Express routes by
// default, finds GET /l/{id} for a request the app would route there in
// another spelling, and hands over the id as the app reads it.
func ExampleTable_Match() {
	table, err := routes.New([]string{"POST /hooks/{name}", "GET /l/{id}"}, routes.Matching{Fold: true})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest("GET", "/L/Abc/", nil)
	matched, err := table.Match(httptest.NewRecorder(), r, nil, nil)
	if err != nil {
		panic(err)
	}
	for _, m := range matched {
		fmt.Printf("route %d, %s, id %s\n", m.Route, m.How(), table.PathValues(m, []string{"id"})[0])
	}
	// Output: route 1, lower-cased, trailing slash removed, id Abc
}
