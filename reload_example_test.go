package admit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/admitgo/admit"
)

// A reload that changes one group's budget: the link group starts afresh
// under its new budget, while the webhook group, unchanged, keeps every
// client's bucket. The handler tree is swapped in one step, so each request
// sees either the old routes or the new ones.
func ExampleDoor_Reload() {
	routes := func(door *admit.Door) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("GET /l/{id}", door.Wrap(admit.GroupLink, http.NotFoundHandler(), nil))
		mux.Handle("POST /hooks/github", door.Wrap(admit.GroupWebhook, http.HandlerFunc(
			func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }), nil))
		return mux
	}
	t0 := time.Now()
	clock := func() time.Time { return t0 } // stopped, so that no token refills while the example runs
	door, err := admit.New(admit.Config{Now: clock})
	if err != nil {
		log.Fatal(err)
	}
	var current atomic.Pointer[http.Handler]
	h := routes(door)
	current.Store(&h)
	serve := func(method, path string) int {
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "203.0.113.9:5000"
		w := httptest.NewRecorder()
		(*current.Load()).ServeHTTP(w, req)
		return w.Code
	}
	for range 499 {
		serve("POST", "/hooks/github") // 499 failed deliveries of a burst of 500
	}

	door, err = door.Reload(admit.Config{Budgets: map[admit.Group]admit.Budget{
		admit.GroupLink: {Burst: 1},
	}})
	if err != nil {
		log.Fatal(err) // the old door and its handlers go on serving
	}
	h = routes(door)
	current.Store(&h)

	fmt.Println(serve("POST", "/hooks/github"), serve("POST", "/hooks/github"))
	fmt.Println(serve("GET", "/l/abc"), serve("GET", "/l/abc"))
	// Output:
	// 401 429
	// 404 429
}
