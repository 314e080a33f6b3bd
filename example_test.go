package admit_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/clientip"
)

// A service with a webhook and a public link route. The webhook group charges
// a sender only for deliveries its handler rejects; the link group charges
// every request.
func Example() {
	door, err := admit.New(admit.Config{})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/github", door.Wrap(admit.GroupWebhook, http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			// Verify the signature; answer 401 when it is bad, which spends
			// one of the sender's tokens.
			w.WriteHeader(http.StatusAccepted)
		}), nil))
	mux.Handle("GET /l/{id}", door.Wrap(admit.GroupLink, http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "link %s\n", r.PathValue("id"))
		}), nil))

	// The link budget is a burst of 20: the 21st request in a row is turned
	// away with Retry-After.
	var last *httptest.ResponseRecorder
	for range admit.DefaultBudgets()[admit.GroupLink].Burst + 1 {
		req := httptest.NewRequest("GET", "/l/abc", nil)
		req.RemoteAddr = "203.0.113.9:5000"
		last = httptest.NewRecorder()
		mux.ServeHTTP(last, req)
	}
	fmt.Println(last.Code, last.Header().Get("Retry-After"))
	// Output: 429 1
}

// Behind a reverse proxy, key requests by the client address the proxy
// forwards, trusting X-Forwarded-For only from the proxy itself.
func ExampleNew_behindAProxy() {
	proxies, err := clientip.ParseTrustedProxies("10.0.0.0/8")
	if err != nil {
		log.Fatal(err)
	}
	resolver, err := clientip.New(clientip.Config{TrustedProxies: proxies})
	if err != nil {
		log.Fatal(err)
	}
	door, err := admit.New(admit.Config{Key: resolver.Key})
	if err != nil {
		log.Fatal(err)
	}
	h := door.Wrap(admit.GroupLink, http.NotFoundHandler(), nil)

	req := httptest.NewRequest("GET", "/l/abc", nil)
	req.RemoteAddr = "10.1.2.3:443"
	req.Header.Set("X-Forwarded-For", "198.51.100.7")
	fmt.Println(resolver.Key(req))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	fmt.Println(w.Code)
	// Output:
	// 198.51.100.7/32
	// 404
}

// Shadow mode for a rollout: nothing is rejected, and the metrics count what
// enforcement would have done as would_* outcomes.
func ExampleConfig_shadowMode() {
	door, err := admit.New(admit.Config{Shadow: true})
	if err != nil {
		log.Fatal(err)
	}
	h := door.Wrap(admit.GroupLink, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil)
	served := 0
	for range 100 {
		req := httptest.NewRequest("GET", "/l/abc", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == http.StatusOK {
			served++
		}
	}
	fmt.Println(served)
	// Output: 100
}

// The door as middleware, for chains of func(http.Handler) http.Handler such
// as chi's r.With(...) or alice: here the standard library's mux, with one
// middleware per route group.
func ExampleDoor_Middleware() {
	door, err := admit.New(admit.Config{Budgets: map[admit.Group]admit.Budget{
		admit.GroupLink: {Burst: 2}, // one field changed; the rest are the link defaults
	}})
	if err != nil {
		log.Fatal(err)
	}
	limitLinks := door.Middleware(admit.GroupLink)
	mux := http.NewServeMux()
	mux.Handle("GET /s/{token}", limitLinks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "shared", r.PathValue("token"))
	})))
	for range 3 {
		req := httptest.NewRequest("GET", "/s/abc", nil)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		fmt.Print(w.Code, " ")
	}
	fmt.Println()
	// Output: 200 200 429
}

// A front that is not an http.Handler, such as a gRPC server, asks the door
// directly, and answers a refusal in its own protocol.
func ExampleDoor_Decide() {
	door, err := admit.New(admit.Config{Budgets: map[admit.Group]admit.Budget{
		"rpc": {Rate: 1, Burst: 2},
	}})
	if err != nil {
		log.Fatal(err)
	}
	rpc := admit.Route{Groups: []admit.Group{"rpc"}}
	client := netip.MustParsePrefix("192.0.2.7/32") // the gRPC peer, as clientip keys it
	for range 3 {
		v, done, err := door.Decide(context.Background(), rpc, client, http.Header{})
		if err != nil {
			log.Fatal(err)
		}
		if done == nil {
			fmt.Println(v.Status, v.Outcome, "retry after", v.Header.Get("Retry-After"))
			continue
		}
		fmt.Println(v.Status, v.Outcome)
		done(http.StatusOK) // the call's answer, as an HTTP status
	}
	// Output:
	// 200 ok
	// 200 ok
	// 429 rate_limited retry after 1
}

// A front that reads budgets from a format of its own reads a refusal as a
// value: the group, the field, and the reason in its own words, with no
// message to parse.
func ExampleBudgetError() {
	_, err := admit.New(admit.Config{Budgets: map[admit.Group]admit.Budget{
		"api": {Algorithm: admit.FixedWindow, Limit: 100},
	}})
	var be *admit.BudgetError
	if errors.As(err, &be) {
		fmt.Println(be.Group, be.Field)
		fmt.Println(be)
		// A YAML file spells the fields in lower case.
		fmt.Println(be.InWords(strings.ToLower))
	}
	// Output:
	// api Limit
	// admit: group "api": a fixed-window group needs a positive Limit and Window
	// a fixed-window group needs a positive limit and window
}

// A group whose refusals answer 503, as nginx's limit_req does by default,
// with go-chi/httprate's X-RateLimit fields on every answer.
func ExampleBudget_refusal() {
	door, err := admit.New(admit.Config{Budgets: map[admit.Group]admit.Budget{
		"api": {Rate: 10, Burst: 2, RefusalStatus: http.StatusServiceUnavailable,
			XRateLimit: true, FieldsOnAdmitted: true},
	}})
	if err != nil {
		log.Fatal(err)
	}
	h := door.Wrap("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}), nil)
	for range 3 {
		req := httptest.NewRequest("GET", "/api", nil)
		req.RemoteAddr = "203.0.113.9:5000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		fmt.Printf("%d limit=%s remaining=%s retry-after=%q\n", w.Code, w.Header().Get("X-RateLimit-Limit"),
			w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 limit=2 remaining=1 retry-after=""
	// 200 limit=2 remaining=0 retry-after=""
	// 503 limit=2 remaining=0 retry-after="1"
}

// A JSON API whose refusals are RFC 9457 problem documents, with a field
// of its own. The detail is a template of admit's values: nothing the
// request sent can appear in it.
func ExampleBudget_problemDocument() {
	door, err := admit.New(admit.Config{Budgets: map[admit.Group]admit.Budget{
		"api": {Rate: 1, Burst: 1,
			RefusalType:        "application/problem+json",
			RefusalProblemType: "https://example.com/problems/rate-limited",
			RefusalBody:        "{group} allows one request a second; retry in {retry_after} s",
			RefusalHeaders:     http.Header{"Cache-Control": {"no-store"}}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	h := door.Wrap("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil)
	var w *httptest.ResponseRecorder
	for range 2 {
		req := httptest.NewRequest("GET", "/api/<script>", nil)
		req.RemoteAddr = "203.0.113.9:5000"
		w = httptest.NewRecorder()
		h.ServeHTTP(w, req)
	}
	fmt.Println(w.Code, w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"), w.Header().Get("Retry-After"))
	fmt.Println(w.Body.String())
	// Output:
	// 429 application/problem+json no-store 1
	// {"type":"https://example.com/problems/rate-limited","title":"Too Many Requests","status":429,"detail":"api allows one request a second; retry in 1 s","retry_after":1}
}

// A group that delays as nginx's "limit_req burst=2" without nodelay: a
// client's first request goes in at once and its next ones wait for their
// tokens, going in spaced at the rate, 50 ms apart. With two of them
// waiting, another would be refused at once, as would one past the
// group's MaxWaiting requests waiting.
func ExampleBudget_queue() {
	door, err := admit.New(admit.Config{Budgets: map[admit.Group]admit.Budget{
		"api": {Rate: 20, Burst: 1, Queue: 2},
	}})
	if err != nil {
		log.Fatal(err)
	}
	rt := admit.Route{Groups: []admit.Group{"api"}}
	client := netip.MustParsePrefix("192.0.2.1/32")
	for range 3 {
		v, done, err := door.Decide(context.Background(), rt, client, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.Status, v.Outcome, v.Waited > 0)
		done(http.StatusOK)
	}
	// Output:
	// 200 ok false
	// 200 delayed true
	// 200 delayed true
}
