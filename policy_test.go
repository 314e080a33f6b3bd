package admit

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// route builds a handler for rt on d, failing the test on a refusal.
func route(t *testing.T, d *Door, rt Route, next http.Handler) http.Handler {
	t.Helper()
	h, err := d.Handler(rt, next)
	if err != nil {
		t.Fatalf("Handler(%v): %v", rt.Groups, err)
	}
	return h
}

// tenantReq is a request from peer for tenant, as a mux routing
// /t/{tenant}/... would hand it over.
func tenantReq(peer, tenant string) *http.Request {
	r := httptest.NewRequest("GET", "/t/"+tenant+"/items", nil)
	r.RemoteAddr = peer
	r.SetPathValue("tenant", tenant)
	return r
}

// send serves r through h n times and returns how many reached the handler.
func send(h http.Handler, n int, r func() *http.Request) (admitted int) {
	for range n {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r())
		if w.Code == http.StatusOK {
			admitted++
		}
	}
	return admitted
}

// TestStackedLimitsSpendNothingWhenOneRefuses stacks a per-address limit and
// a per-tenant limit, in both orders: an address refused by its own limit
// leaves the tenant's budget whole, and a second address gets exactly what
// is left of the tenant's.
func TestStackedLimitsSpendNothingWhenOneRefuses(t *testing.T) {
	for _, order := range [][]Group{{"per-address", "tenant"}, {"tenant", "per-address"}} {
		t.Run(strings.Join([]string{string(order[0]), string(order[1])}, ","), func(t *testing.T) {
			clk := newClock()
			d := newDoor(t, clk, Config{Budgets: map[Group]Budget{
				"per-address": {Rate: 1e-9, Burst: 3, PerClient: 100, Inflight: 100},
				"tenant":      {Rate: 1e-9, Burst: 5, PerClient: 100, Inflight: 100, Key: Key{PathValue: "tenant", Authenticated: true}},
			}})
			h := route(t, d, Route{Groups: order}, status(http.StatusOK))
			if got := send(h, 10, func() *http.Request { return tenantReq("192.0.2.1:1", "acme") }); got != 3 {
				t.Fatalf("first address: %d admitted, want its own burst, 3", got)
			}
			if got := send(h, 10, func() *http.Request { return tenantReq("192.0.2.2:1", "acme") }); got != 2 {
				t.Fatalf("second address: %d admitted, want what is left of the tenant's burst, 2", got)
			}
			if got := send(h, 10, func() *http.Request { return tenantReq("192.0.2.3:1", "other") }); got != 3 {
				t.Errorf("another tenant: %d admitted, want 3", got)
			}
			for _, g := range order {
				assertIdle(t, d.groups[g])
			}
			// The refusals count on the limit that refused them alone: the
			// second address's 8 on the tenant, the first's and the third's
			// 7 each on their own.
			if got := outcomeCount(d.groups["tenant"], outcomeRateLimited); got != 8 {
				t.Errorf("tenant rate_limited: got %d, want 8", got)
			}
			if got := outcomeCount(d.groups["per-address"], outcomeRateLimited); got != 14 {
				t.Errorf("per-address rate_limited: got %d, want 14", got)
			}
		})
	}
}

// TestStackedBeyondAPass stacks more limits than a pass holds without
// allocating, the last the tightest and keyed by tenant: every limit
// holds, and a refusal by the last spends nothing in the others.
func TestStackedBeyondAPass(t *testing.T) {
	budgets := map[Group]Budget{}
	var groups []Group
	for i := range pooledLimits + 2 {
		g := Group(fmt.Sprintf("g%d", i))
		budgets[g] = Budget{Rate: 1e-9, Burst: 4, PerClient: 100, Inflight: 100}
		groups = append(groups, g)
	}
	last := groups[len(groups)-1]
	budgets[last] = Budget{Rate: 1e-9, Burst: 2, PerClient: 100, Inflight: 100, Key: Key{PathValue: "tenant", Authenticated: true}}
	d := newDoor(t, newClock(), Config{Budgets: budgets})
	h := route(t, d, Route{Groups: groups}, status(http.StatusOK))
	if got := send(h, 5, func() *http.Request { return tenantReq("192.0.2.1:1", "acme") }); got != 2 {
		t.Fatalf("%d limits: %d admitted, want the last one's burst, 2", len(groups), got)
	}
	// The same address for another tenant: the first limits kept the 2
	// its refusals by the last would have spent.
	if got := send(h, 5, func() *http.Request { return tenantReq("192.0.2.1:1", "other") }); got != 2 {
		t.Errorf("another tenant: %d admitted, want 2, what is left of the address's 4", got)
	}
	// The address's limits, the first eight and the ninth, beyond the
	// pass's arrays, are spent.
	if got := send(h, 5, func() *http.Request { return tenantReq("192.0.2.1:1", "third") }); got != 0 {
		t.Errorf("a third tenant: %d admitted, want 0: the address has spent its 4", got)
	}
	for _, g := range groups {
		assertIdle(t, d.groups[g])
	}
}

func TestCost(t *testing.T) {
	d := newDoor(t, newClock(), Config{})
	h := route(t, d, Route{Groups: []Group{GroupLink}, Cost: 5}, status(http.StatusOK))
	if got := send(h, 10, func() *http.Request { return tenantReq("192.0.2.1:1", "x") }); got != 4 {
		t.Errorf("cost 5 on a burst of 20: %d admitted, want 4", got)
	}
	if _, err := d.Handler(Route{Groups: []Group{GroupLink}, Cost: 21}, status(http.StatusOK)); err == nil || !strings.Contains(err.Error(), "Cost 21") {
		t.Errorf("cost above the burst: got %v, want an error naming the cost", err)
	}
}

// TestCostAboveTheSharedBurst refuses a route whose cost the group's shared
// bucket can never hold: once the client table is full, every newcomer
// would be refused with a Retry-After for tokens that never come.
func TestCostAboveTheSharedBurst(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupLink: {Burst: 20, SharedBurst: 5}}})
	_, err := d.Handler(Route{Groups: []Group{GroupLink}, Cost: 10}, status(http.StatusOK))
	if err == nil || !strings.Contains(err.Error(), "Cost 10") || !strings.Contains(err.Error(), "shared bucket") {
		t.Errorf("got %v, want an error naming the cost and the shared bucket", err)
	}
}

func TestGlobalKeyAndPrefixWidths(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"global": {Rate: 1e-9, Burst: 4, Key: Key{Global: true}},
		"wide":   {Rate: 1e-9, Burst: 2, Key: Key{IPv4Prefix: 24, IPv6Prefix: 48}},
	}})
	global := route(t, d, Route{Groups: []Group{"global"}}, status(http.StatusOK))
	wide := route(t, d, Route{Groups: []Group{"wide"}}, status(http.StatusOK))
	from := func(peer string) func() *http.Request {
		return func() *http.Request { return tenantReq(peer, "x") }
	}
	if got := send(global, 3, from("192.0.2.1:1")) + send(global, 3, from("198.51.100.9:1")); got != 4 {
		t.Errorf("global: %d admitted from two clients, want the one burst of 4", got)
	}
	for _, tc := range []struct {
		a, b  string
		share bool
	}{
		{"192.0.2.1:1", "192.0.2.200:1", true},
		{"192.0.3.1:1", "192.0.4.1:1", false},
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:ffff::1]:1", true},
		{"[2001:db8:2::1]:1", "[2001:db8:3::1]:1", false},
	} {
		got := send(wide, 2, from(tc.a)) + send(wide, 2, from(tc.b))
		if want := map[bool]int{true: 2, false: 4}[tc.share]; got != want {
			t.Errorf("%s and %s: %d admitted, want %d (sharing a prefix: %v)", tc.a, tc.b, got, want, tc.share)
		}
	}
}

func TestHeaderKeys(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"token":    {Rate: 1e-9, Burst: 2, Key: Key{Header: "Authorization", Authenticated: true}},
		"required": {Rate: 1e-9, Burst: 2, Key: Key{Header: "Authorization", RejectMissing: true, Authenticated: true}},
		"apikey":   {Rate: 1e-9, Burst: 2, Key: Key{Header: "X-Api-Key", RejectMissing: true, Authenticated: true}},
	}})
	token := route(t, d, Route{Groups: []Group{"token"}}, status(http.StatusOK))
	with := func(peer string, headers ...string) func() *http.Request {
		return func() *http.Request {
			r := tenantReq(peer, "x")
			for _, h := range headers {
				name, value, _ := strings.Cut(h, ": ")
				r.Header.Add(name, value)
			}
			return r
		}
	}
	// One token from two addresses shares one budget, however it is spelled.
	got := send(token, 1, with("192.0.2.1:1", "Authorization: Bearer abc")) +
		send(token, 1, with("192.0.2.2:1", "Authorization: bearer   abc ")) +
		send(token, 1, with("192.0.2.3:1", "Authorization: BEARER abc"))
	if got != 2 {
		t.Errorf("one token in three spellings: %d admitted, want the burst, 2", got)
	}
	if got := send(token, 2, with("192.0.2.1:1", "Authorization: Bearer xyz")); got != 2 {
		t.Errorf("another token: %d admitted, want 2", got)
	}
	// Without the header, the client key decides.
	if got := send(token, 3, with("192.0.2.9:1")); got != 2 {
		t.Errorf("no header: %d admitted, want the client's burst, 2", got)
	}
	for _, tc := range []struct {
		group   Group
		headers []string
		want    int
	}{
		{"required", nil, http.StatusUnauthorized},
		{"apikey", nil, http.StatusBadRequest},
		{"apikey", []string{"X-Api-Key: a", "X-Api-Key: b"}, http.StatusBadRequest},
		{"token", []string{"Authorization: Bearer a", "Authorization: Bearer b"}, http.StatusBadRequest},
	} {
		h := route(t, d, Route{Groups: []Group{tc.group}}, status(http.StatusOK))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, with("192.0.2.1:1", tc.headers...)())
		if w.Code != tc.want {
			t.Errorf("%s with %q: got %d, want %d", tc.group, tc.headers, w.Code, tc.want)
		}
	}
	if got := outcomeCount(d.groups["apikey"], outcomeMissingKey); got != 2 {
		t.Errorf("missing_key: got %d, want 2", got)
	}
	// The table holds hashes (and client keys for requests without the
	// header), never the value.
	g := d.groups["token"]
	hashes := 0
	for i := range g.shards {
		for key := range g.shards[i].table.All() {
			if s := key.String(); strings.Contains(s, "abc") || strings.Contains(s, "xyz") {
				t.Errorf("table key %v holds the raw value", key)
			}
			if key == hashKey("abc") {
				hashes++
			}
		}
	}
	if hashes != 1 {
		t.Errorf("the token's entries: got %d, want one, under the hash of the credential", hashes)
	}
}

// TestCredentialSpellings sends one credential in the spellings apps read as
// it (Werkzeug's request.authorization and Python's strip(), Express's
// basic-auth and JavaScript's trim(), which the testrouter apps check): they
// share one budget, and spellings apps could read two ways are refused.
func TestCredentialSpellings(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"token": {Rate: 1e-9, Burst: 2, Key: Key{Header: "Authorization", Authenticated: true}},
		"basic": {Rate: 1e-9, Burst: 2, Key: Key{Header: "Authorization", Authenticated: true}},
	}})
	for _, tc := range []struct {
		group     Group
		spellings []string
	}{
		{"token", []string{"Bearer abc", "bearer   abc ", "Token abc", "JWT abc", "abc", "\xa0Bearer abc\x85", "Bearer\tabc\xa0", "\x85abc",
			"Bearer abc x", "Bearer abc\xa0y"}}, // apps that split at every space read abc
		{"basic", []string{"Basic dXNlcjpwYXNz", "basic dXNlcjpwYXNz", "BASIC  dXNlcjpwYXNz", "Basic dXNlcjpwYXNz\xa0", "Bearer user:pass",
			"Basic\u00a0dXNlcjpwYXNz", "\u0085Basic dXNlcjpwYXNz\u3000", "Basic\u2003dXNlcjpwYXNz\ufeff"}},
	} {
		h := route(t, d, Route{Groups: []Group{tc.group}}, status(http.StatusOK))
		admitted := 0
		for i, v := range tc.spellings {
			r := tenantReq(fmt.Sprintf("192.0.2.%d:1", i+1), "x")
			r.Header.Set("Authorization", v)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code == http.StatusOK {
				admitted++
			} else if w.Code != http.StatusTooManyRequests {
				t.Errorf("%s: %q answered %d, want 200 or 429", tc.group, v, w.Code)
			}
		}
		if admitted != 2 {
			t.Errorf("%s: one credential in %d spellings from as many addresses: %d admitted, want the burst, 2", tc.group, len(tc.spellings), admitted)
		}
	}
	h := route(t, d, Route{Groups: []Group{"basic"}}, status(http.StatusOK))
	for _, v := range []string{
		"Basic dXNl!cjpwYXNz", // decoders that skip bytes outside the alphabet read user:pass
		"Basic dXNl.cjpwYXNz", // so does Express's basic-auth, whose pattern admits '.'
		"Basic dXNlcjpwYXM",   // no padding: Node decodes it anyway
		"Basic dXNlcjpwYXM=x", // data after the padding
		"Basic dXNlcjpwYXNz=", // padding where none belongs
		"Basic dXNlcjpwYXN=",  // non-zero trailing bits: user:pas to a lenient decoder
		"Basic dXNl cjpwYXNz", // decoders skip the space
	} {
		r := tenantReq("198.51.100.1:1", "x")
		r.Header.Set("Authorization", v)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%q: got %d, want 400", v, w.Code)
		}
	}
}

func TestFixedWindow(t *testing.T) {
	clk := newClock()
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{
		"window": {Algorithm: FixedWindow, Limit: 3, Window: 10 * time.Second},
	}})
	h := route(t, d, Route{Groups: []Group{"window"}}, status(http.StatusOK))
	peer := func() *http.Request { return tenantReq("192.0.2.1:1", "x") }
	if got := send(h, 3, peer); got != 3 {
		t.Fatalf("first window: %d admitted, want the limit, 3", got)
	}
	clk.Advance(4 * time.Second)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, peer())
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "6" {
		t.Fatalf("over the limit: got %d with Retry-After %q, want 429 and the 6 s to the window's end", w.Code, w.Header().Get("Retry-After"))
	}
	clk.Advance(6 * time.Second)
	if got := send(h, 4, peer); got != 3 {
		t.Errorf("next window: %d admitted, want 3", got)
	}
	if _, err := New(Config{Budgets: map[Group]Budget{"w": {Algorithm: FixedWindow, Limit: 3}}}); err == nil || !strings.Contains(err.Error(), "Window") {
		t.Errorf("fixed window without its window: got %v, want an error naming Window", err)
	}
	if _, err := New(Config{Budgets: map[Group]Budget{"w": {Algorithm: FixedWindow, Limit: 3, Window: time.Second, Rate: 5}}}); err == nil {
		t.Error("fixed window with a rate: got no error")
	}
}

func TestChosenKeysNeedAnotherLimit(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"token":  {Rate: 1, Burst: 2, Key: Key{Header: "X-Api-Key"}},
		"tenant": {Rate: 1, Burst: 2, Key: Key{PathValue: "tenant"}},
		"authed": {Rate: 1, Burst: 2, Key: Key{Header: "X-Api-Key", Authenticated: true}},
	}})
	for _, tc := range []struct {
		groups []Group
		ok     bool
	}{
		{[]Group{"token"}, false},
		{[]Group{"token", "tenant"}, false},
		{[]Group{"token", GroupLink}, true},
		{[]Group{"authed"}, true},
		{[]Group{"tenant", "authed"}, true},
	} {
		_, err := d.Handler(Route{Groups: tc.groups}, status(http.StatusOK))
		if (err == nil) != tc.ok {
			t.Errorf("route %v: got %v, want ok %v", tc.groups, err, tc.ok)
		}
	}
}

func TestStackedPolicyHeaders(t *testing.T) {
	d := newDoor(t, newClock(), Config{PolicyHeaders: true, Budgets: map[Group]Budget{
		"window": {Algorithm: FixedWindow, Limit: 2, Window: time.Minute},
	}})
	h := route(t, d, Route{Groups: []Group{GroupLink, "window"}}, status(http.StatusOK))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, tenantReq("192.0.2.1:1", "x"))
	if got, want := w.Header().Get("RateLimit-Policy"), `"link";q=20;w=20, "window";q=2;w=60`; got != want {
		t.Errorf("RateLimit-Policy: got %q, want %q", got, want)
	}
	if got := w.Header().Get("RateLimit"); !strings.HasPrefix(got, `"link";r=19;`) || !strings.Contains(got, `, "window";r=1;t=60`) {
		t.Errorf("RateLimit: got %q, want an item per limit", got)
	}
	h.ServeHTTP(httptest.NewRecorder(), tenantReq("192.0.2.1:1", "x"))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, tenantReq("192.0.2.1:1", "x"))
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("third request: got %d, want 429 from the window", w.Code)
	}
	if got, want := w.Header().Get("RateLimit"), `"window";r=0;t=`+w.Header().Get("Retry-After"); got != want {
		t.Errorf("RateLimit when the window refuses: got %q, want %q", got, want)
	}
	if !strings.Contains(w.Body.String(), `limit "window"`) {
		t.Errorf("body: got %q, want it to name the limit", w.Body.String())
	}
}

// TestShadowModeAdmitsUnkeyedRequests runs a limit that rejects a request
// without its key header in shadow mode: the request is admitted and counted
// as would_missing_key, and a later limit of the route still decides as it
// would, since shadow mode refuses nothing.
func TestShadowModeAdmitsUnkeyedRequests(t *testing.T) {
	d := newDoor(t, newClock(), Config{Shadow: true, Budgets: map[Group]Budget{
		"apikey":      {Rate: 1e-9, Burst: 5, Key: Key{Header: "X-Api-Key", RejectMissing: true, Authenticated: true}},
		"per-address": {Rate: 1e-9, Burst: 5},
	}})
	h := route(t, d, Route{Groups: []Group{"apikey", "per-address"}}, status(http.StatusOK))
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1"
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("got %d, want 200: shadow mode refuses nothing", w.Code)
	}
	if got := outcomeCount(d.groups["apikey"], outcomeWouldMissingKey); got != 1 {
		t.Errorf("would_missing_key: got %d, want 1", got)
	}
	if got := outcomeCount(d.groups["apikey"], outcomeMissingKey); got != 0 {
		t.Errorf("missing_key: got %d, want 0", got)
	}
	if got := outcomeCount(d.groups["per-address"], outcomeOK); got != 1 {
		t.Errorf("per-address ok: got %d, want 1", got)
	}
	assertIdle(t, d.groups["apikey"])
	assertIdle(t, d.groups["per-address"])
}

// TestLikeCopiesHandlingNotCaps pins what like copies: a group named for an
// API that starts from link's or webhook's budget takes its handling (how a
// token is charged, the body cap, the deadlines) and the amounts it leaves
// out, but not the in-flight caps sized for those built-in uses, so 64
// callers of one API behind a slow app are never refused for concurrency
// they never asked to cap.
func TestLikeCopiesHandlingNotCaps(t *testing.T) {
	d, err := New(Config{Budgets: map[Group]Budget{
		"api":    {Like: GroupLink, Rate: 100, Burst: 200},
		"hooks":  {Like: GroupWebhook},
		"plain":  {Rate: 10, Burst: 20},
		"capped": {Like: GroupLink, Rate: 10, Burst: 20, PerClient: 3, Inflight: 7},
		"tenant": {Like: GroupLink, Rate: 10, Burst: 20, Key: Key{PathValue: "tenant", Authenticated: true}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	link, webhook := defaults[GroupLink], defaults[GroupWebhook]
	for _, tc := range []struct {
		group               Group
		perClient, inflight int
		charge              Charge
		maxBody             int64
		hold                time.Duration
	}{
		{"api", namedPerClient, namedInflight, link.Charge, link.MaxBodyBytes, link.HoldTimeout},
		{"hooks", namedPerClient, namedInflight, webhook.Charge, webhook.MaxBodyBytes, webhook.HoldTimeout},
		{"plain", namedPerClient, namedInflight, link.Charge, link.MaxBodyBytes, link.HoldTimeout},
		{"capped", 3, 7, link.Charge, link.MaxBodyBytes, link.HoldTimeout},
		{"tenant", namedInflight, namedInflight, link.Charge, link.MaxBodyBytes, link.HoldTimeout},
		{GroupLink, link.PerClient, link.Inflight, link.Charge, link.MaxBodyBytes, link.HoldTimeout},
	} {
		b, _ := d.Budget(tc.group)
		if b.PerClient != tc.perClient || b.Inflight != tc.inflight {
			t.Errorf("%s: per client %d, in flight %d; want %d, %d", tc.group, b.PerClient, b.Inflight, tc.perClient, tc.inflight)
		}
		if b.Charge != tc.charge || b.MaxBodyBytes != tc.maxBody || b.HoldTimeout != tc.hold {
			t.Errorf("%s: charge %v, body cap %d, hold %v; want %v, %d, %v", tc.group, b.Charge, b.MaxBodyBytes, b.HoldTimeout, tc.charge, tc.maxBody, tc.hold)
		}
	}
	if b, _ := d.Budget("hooks"); b.Rate != webhook.Rate || b.Burst != webhook.Burst {
		t.Errorf("hooks: rate %v, burst %d; want webhook's %v, %d", b.Rate, b.Burst, webhook.Rate, webhook.Burst)
	}
}
