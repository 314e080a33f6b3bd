package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testpg"
)

// policyExamples returns the YAML of each worked example under "## Policies"
// in docs/operators.md, by its heading.
func policyExamples(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	_, policies, ok := strings.Cut(string(doc), "\n## Policies\n")
	if !ok {
		t.Fatal(`docs/operators.md has no "## Policies" section`)
	}
	policies, _, _ = strings.Cut(policies, "\n## ")
	examples := map[string]string{}
	yamlBlock := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for _, part := range strings.Split(policies, "\n### ")[1:] {
		heading, body, _ := strings.Cut(part, "\n")
		if m := yamlBlock.FindStringSubmatch(body); m != nil {
			examples[heading] = m[1]
		}
	}
	return examples
}

// TestPolicyExamples runs every worked example of the policy docs under the
// concurrency its prose implies: 64 callers and more at once behind an app
// that holds every request until all have arrived. Each reaches the amount
// its prose states with no refusal from a cap it never asked for, and is
// refused, by its rate and nothing else, only beyond that amount. A new
// example without a scenario here fails the test.
func TestPolicyExamples(t *testing.T) {
	scenarios := map[string]func(t *testing.T, yaml string){
		"A per-address and per-tenant API":                        perTenantExample,
		"A per-token fixed window on PostgreSQL, across replicas": perTokenExample,
		"A bulk endpoint that costs more":                         bulkExample,
		"Refusal answers":                                         refusalExample,
	}
	examples := policyExamples(t)
	for heading := range examples {
		if scenarios[heading] == nil {
			t.Errorf("docs example %q has no scenario in this test", heading)
		}
	}
	for heading, run := range scenarios {
		t.Run(heading, func(t *testing.T) {
			yaml, ok := examples[heading]
			if !ok {
				t.Fatalf("docs/operators.md has no example %q", heading)
			}
			run(t, yaml)
		})
	}
}

// perTenantExample: 64 addresses of one tenant at once, one address with 16
// requests at once, then the tenant's whole burst of 200 and no more.
func perTenantExample(t *testing.T, yaml string) {
	g := newGate(t)
	r := startFrozen(t, "--upstream", g.url, "--config", writeConfig(t, yaml))
	var wave []held
	for i := range 64 {
		wave = append(wave, held{from: fmt.Sprintf("127.0.1.%d", i+1), path: "/t/acme/items"})
	}
	expectAllAdmitted(t, g.together(t, r, wave))
	wave = wave[:0]
	for range 16 {
		wave = append(wave, held{from: "127.0.2.1", path: "/t/acme/items"})
	}
	expectAllAdmitted(t, g.together(t, r, wave))
	// 80 of the tenant's 200 are spent; each address has 19 or 4 left, so
	// the tenant's limit is the one that ends this.
	admitted := 0
	for i := range 200 {
		if send(t, r, fmt.Sprintf("127.0.1.%d", i%64+1), "/t/acme/items") == http.StatusOK {
			admitted++
		}
	}
	if admitted != 120 {
		t.Errorf("after 80 at once, the tenant admitted %d more, want the rest of its burst of 200, 120", admitted)
	}
	expectOnlyRateLimited(t, r, "per-tenant", 80, "per-address")
}

// perTokenExample: 64 requests of one token at once, then exactly the
// token's 1,000 in the hour, on PostgreSQL.
func perTokenExample(t *testing.T, yaml string) {
	db := testpg.New(t)
	g := newGate(t)
	r := startFrozen(t, "--upstream", g.url, "--config", writeConfig(t, yaml),
		"--store", testpg.URL(), "--store-table", db.Schema+".admit_quota")
	const token = "Authorization: Bearer example-token"
	var wave []held
	for i := range 64 {
		wave = append(wave, held{from: fmt.Sprintf("127.0.3.%d", i+1), path: "/api/items", header: token})
	}
	hour := func() time.Time {
		var h time.Time
		if err := db.Pool(t).QueryRow(t.Context(), "SELECT date_trunc('hour', now())").Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := hour()
	expectAllAdmitted(t, g.together(t, r, wave))
	admitted := 64
	for i := range 1000 {
		if send(t, r, fmt.Sprintf("127.0.3.%d", i%64+1), "/api/items", token) == http.StatusOK {
			admitted++
		}
	}
	// The database's clock decides the window: one that turned the hour
	// while this ran gave a second hour's count.
	if rolled := !hour().Equal(before); admitted != 1000 && !(rolled && admitted > 1000) {
		t.Errorf("one token admitted %d in the hour, want its limit, 1000", admitted)
	}
	if status := send(t, r, "127.0.3.1", "/api/items"); status != http.StatusUnauthorized {
		t.Errorf("without a token: got %d, want 401", status)
	}
	expectOnlyRateLimited(t, r, "per-token", 64, "")
}

// bulkExample: 64 addresses looking up at once, then one address with 32
// lookups at once (a named group's client cap), then its exports of
// cost 10 from the 67 tokens its burst of 100 has left.
func bulkExample(t *testing.T, yaml string) {
	g := newGate(t)
	r := startFrozen(t, "--upstream", g.url, "--config", writeConfig(t, yaml))
	var wave []held
	for i := range 64 {
		wave = append(wave, held{from: fmt.Sprintf("127.0.4.%d", i+1), path: fmt.Sprintf("/items/%d", i)})
	}
	expectAllAdmitted(t, g.together(t, r, wave))
	wave = wave[:0]
	for i := range 32 {
		wave = append(wave, held{from: "127.0.4.1", path: fmt.Sprintf("/items/%d", i)})
	}
	expectAllAdmitted(t, g.together(t, r, wave))
	admitted := 0
	for range 7 {
		if sendMethod(t, r, "POST", "127.0.4.1", "/items/export") == http.StatusOK {
			admitted++
		}
	}
	if admitted != 6 {
		t.Errorf("exports after 33 lookups: %d admitted, want 6 (60 of the 67 tokens left)", admitted)
	}
	expectOnlyRateLimited(t, r, "api", 64, "")
}

// startFrozen starts admit with args on a clock that never moves, so that
// no bucket refills while a test counts.
func startFrozen(t *testing.T, args ...string) *running {
	t.Helper()
	cfg := serverConfig(t, args...)
	cfg.Now = frozen()
	return startConfig(t, cfg)
}

// expectAllAdmitted fails unless every status is 200.
func expectAllAdmitted(t *testing.T, statuses []int) {
	t.Helper()
	got := map[int]int{}
	for _, s := range statuses {
		got[s]++
	}
	if got[http.StatusOK] != len(statuses) {
		t.Fatalf("%d requests in flight at once: got %v, want every one 200", len(statuses), got)
	}
}

// expectOnlyRateLimited checks that group refused nothing for concurrency,
// and that what it refused it refused by its rate, after admitting at least
// held requests at once; other names a second group of the route that must
// not have refused at all.
func expectOnlyRateLimited(t *testing.T, r *running, group string, held int, other string) {
	t.Helper()
	for _, g := range []string{group, other} {
		if g == "" {
			continue
		}
		for _, outcome := range []string{"client_concurrency", "group_concurrency"} {
			if n := r.count(t, g, outcome); n != 0 {
				t.Errorf("%s: %d refused as %s, a cap the example never asked for", g, n, outcome)
			}
		}
	}
	if other != "" {
		if n := r.count(t, other, "rate_limited"); n != 0 {
			t.Errorf("%s: %d rate_limited, want its budget out of reach", other, n)
		}
	}
	if n := r.count(t, group, "rate_limited"); n == 0 {
		t.Errorf("%s: nothing rate_limited after %d at once and more: the example's limit never held", group, held)
	}
}

// held is one request of a wave: from a loopback address, with an optional
// header ("Name: value").
type held struct {
	from, path, header string
}

// gate is an upstream that holds every request until the test opens it, so
// that a test can have many requests in flight at once without timing them.
type gate struct {
	url     string
	arrived chan struct{}
	mu      sync.Mutex    // guards release
	release chan struct{} // nil: answer at once
}

func newGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{arrived: make(chan struct{}, 1024)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		release := g.release
		g.mu.Unlock()
		if release != nil {
			g.arrived <- struct{}{}
			<-release
		}
		w.Write([]byte("ok"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	g.url = "http://" + ln.Addr().String()
	return g
}

// together sends the wave at once and holds the upstream until every request
// has reached it or been answered by admit, then lets them all through, and
// returns every status: all 200 shows that they were admitted while all were
// in flight.
func (g *gate) together(t *testing.T, r *running, wave []held) []int {
	t.Helper()
	release := make(chan struct{})
	g.mu.Lock()
	g.release = release
	g.mu.Unlock()
	answered := make(chan int, len(wave))
	for _, h := range wave {
		go func() {
			answered <- sendMethodErr("GET", r, h.from, h.path, h.header)
		}()
	}
	var statuses []int
	timeout := time.After(testTimeout)
	for arrived := 0; arrived+len(statuses) < len(wave); {
		select {
		case <-g.arrived:
			arrived++
		case s := <-answered:
			statuses = append(statuses, s)
		case <-timeout:
			t.Fatalf("after %v, %d of %d requests reached the upstream or were answered", testTimeout, arrived+len(statuses), len(wave))
		}
	}
	g.mu.Lock()
	g.release = nil
	g.mu.Unlock()
	close(release)
	for len(statuses) < len(wave) {
		statuses = append(statuses, <-answered)
	}
	return statuses
}

// send sends GET path from the loopback address from and returns the status.
func send(t *testing.T, r *running, from, path string, headers ...string) int {
	t.Helper()
	return sendMethod(t, r, "GET", from, path, headers...)
}

func sendMethod(t *testing.T, r *running, method, from, path string, headers ...string) int {
	t.Helper()
	status := sendMethodErr(method, r, from, path, headers...)
	if status == 0 {
		t.Fatalf("%s %s from %s: no answer", method, path, from)
	}
	return status
}

// sendMethodErr is sendMethod for other goroutines: 0 when no answer came.
func sendMethodErr(method string, r *running, from, path string, headers ...string) int {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: testTimeout}
	c, err := d.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	req := method + " " + path + " HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 0\r\n"
	for _, h := range headers {
		if h != "" {
			req += h + "\r\n"
		}
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// refusalExample: the group of the docs' refusal example, put on a route,
// refuses past its burst with the problem document and the header the docs
// show, its retry_after the Retry-After it is sent with.
func refusalExample(t *testing.T, yaml string) {
	rec := newRecorder(t)
	r := startFrozen(t, "--upstream", rec.url, "--config", writeConfig(t, yaml+"routes:\n  - {group: api, pattern: \"GET /api/{x}\"}\n"))
	addr := strings.TrimPrefix(r.url, "http://")
	for range 1000 {
		a := rawFrom(t, "127.0.0.2", addr, "GET /api/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		if a.status == http.StatusOK {
			continue
		}
		if a.status != http.StatusTooManyRequests {
			t.Fatalf("got %d, want 200s, then 429", a.status)
		}
		var doc struct {
			Type, Title, Detail string
			Status              int
			RetryAfter          int `json:"retry_after"`
		}
		if err := json.Unmarshal([]byte(a.body), &doc); err != nil {
			t.Fatalf("refusal body %q: %v", a.body, err)
		}
		retry := a.header.Get("Retry-After")
		want := fmt.Sprintf("api allows 10 requests a second; retry in %s s", retry)
		if a.header.Get("Content-Type") != "application/problem+json" || a.header.Get("Cache-Control") != "no-store" ||
			doc.Type != "https://example.com/problems/rate-limited" || doc.Status != 429 || doc.Detail != want || fmt.Sprint(doc.RetryAfter) != retry {
			t.Errorf("refusal: %v %+v; want the docs' problem document with Cache-Control and retry_after = Retry-After", a.header, doc)
		}
		return
	}
	t.Fatal("1000 requests at a frozen clock, none refused")
}
