package config

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/server/storeurl"
)

// anyStore stands for a shared store that enforces every rule; the checks
// never call it.
type anyStore struct{ quota.Charger }

// TestOneRefusalInTwoWords: each refusal of a budget or a route is checked
// once, by the door, and worded twice from the one value it returns: for
// Go users by its Error, and for the config file's users by the server,
// with the file's keys and the flags' names, on the line that gives the
// group or the route. The server reads no message text to do so: each
// file wording below holds words (keys, the route's keys, a store's
// lower-cased reason) that the Go wording does not, so neither can be
// made from the other's text.
func TestOneRefusalInTwoWords(t *testing.T) {
	redis, err := redisquota.New(storeurl.Offline{}, redisquota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Close()
	const offline = "redis://127.0.0.1:1"
	local := []string{"--store", offline, "--store-fail", "local", "--replicas", "4"}
	for _, tc := range []struct {
		name    string
		budgets map[admit.Group]admit.Budget // as a Go program gives them
		route   admit.Route                  // no groups: the budgets alone are refused
		yaml    string                       // the same as a config file gives them
		flags   []string
		goWords string
		file    string // the server's error after the file's name
	}{
		{name: "a fixed window without its window",
			budgets: map[admit.Group]admit.Budget{"api": {Algorithm: admit.FixedWindow, Limit: 5}},
			yaml:    "budgets: {api: {algorithm: fixed-window, limit: 5}}",
			goWords: `admit: group "api": a fixed-window group needs a positive Limit and Window`,
			file:    `line 1: budgets.api: a fixed-window group needs a positive limit and window`},
		{name: "a prefix on a header key",
			budgets: map[admit.Group]admit.Budget{"api": {Rate: 1, Burst: 2, Key: admit.Key{Header: "X-Key", IPv4Prefix: 24}}},
			yaml:    `budgets: {api: {rate: 1, burst: 2, key: "header:X-Key", ipv4_prefix: 24}}`,
			goWords: `admit: group "api": Key.IPv4Prefix and Key.IPv6Prefix widen a key by the client's address (a Key without Header, PathValue or Global), and this key is another`,
			file:    `line 1: budgets.api: ipv4_prefix and ipv6_prefix widen a key by the client's address (key: peer), and this key is another`},
		{name: "a rate too low for a store",
			budgets: map[admit.Group]admit.Budget{"api": {Rate: 0.00000000001, Burst: 1, Store: anyStore{}}},
			yaml:    "budgets: {api: {rate: 0.00000000001, burst: 1}}", flags: []string{"--store", offline},
			goWords: `admit: group "api": Rate 1e-11 is too low for a shared store's window`,
			file:    `line 1: budgets.api: rate 1e-11 is too low for a shared store's window`},
		{name: "a window the store refuses",
			budgets: map[admit.Group]admit.Budget{"api": {Algorithm: admit.FixedWindow, Limit: 5, Window: 500 * time.Microsecond, Store: redis}},
			yaml:    "budgets: {api: {algorithm: fixed-window, limit: 5, window: 500us}}", flags: []string{"--store", offline},
			goWords: `admit: group "api": Limit 5 per Window 500µs cannot be decided on the shared store: quota: invalid rule "admit.api": Window 500µs, the Redis store needs at least 1ms`,
			file:    `line 1: budgets.api: limit 5 per window 500µs cannot be decided on the shared store: window 500µs, the Redis store needs at least 1ms`},
		{name: "a queue on a store",
			budgets: map[admit.Group]admit.Budget{"api": {Rate: 1, Burst: 1, Queue: 5, Store: anyStore{}}},
			yaml:    "budgets: {api: {rate: 1, burst: 1, queue: 5}}", flags: []string{"--store", offline},
			goWords: `admit: group "api": Queue 5 cannot be kept on a shared store (Store): a store's call spends a token or refuses, and cannot reserve one ahead for a request that waits`,
			file:    `line 1: budgets.api: queue 5 cannot be kept on a shared store (--store): a store's call spends a token or refuses, and cannot reserve one ahead for a request that waits`},
		{name: "a queue on a charge on failure",
			budgets: map[admit.Group]admit.Budget{admit.GroupWebhook: {Queue: 5}},
			yaml:    "budgets: {webhook: {queue: 5}}",
			goWords: `admit: group "webhook": Queue 5 needs Charge ChargeAlways: a group that charges on failure spends its token only once the answer is a 4xx, so there is none to reserve ahead`,
			file:    `line 1: budgets.webhook: queue 5 needs charge_on_failure false: a group that charges on failure spends its token only once the answer is a 4xx, so there is none to reserve ahead`},
		{name: "a cost above the burst",
			route:   admit.Route{Groups: []admit.Group{admit.GroupLink}, Cost: 21},
			yaml:    "routes:\n  - {group: link, pattern: GET /x, cost: 21}",
			goWords: `admit: route [link]: Cost 21 is more than group "link" ever admits (its Burst is 20)`,
			file:    `line 2: routes[0]: cost 21 is more than group "link" ever admits (its burst is 20)`},
		{name: "a cost above a fixed window's limit",
			budgets: map[admit.Group]admit.Budget{"api": {Algorithm: admit.FixedWindow, Limit: 3, Window: time.Minute}},
			route:   admit.Route{Groups: []admit.Group{"api"}, Cost: 4},
			yaml:    "budgets: {api: {algorithm: fixed-window, limit: 3, window: 1m}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 4}",
			goWords: `admit: route [api]: Cost 4 is more than group "api" ever admits (its Limit is 3)`,
			file:    `line 3: routes[0]: cost 4 is more than group "api" ever admits (its limit is 3)`},
		{name: "a cost above the shared bucket",
			budgets: map[admit.Group]admit.Budget{"api": {Like: admit.GroupLink, SharedBurst: 5}},
			route:   admit.Route{Groups: []admit.Group{"api"}, Cost: 6},
			yaml:    "budgets: {api: {like: link, shared_burst: 5}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 6}",
			goWords: `admit: route [api]: Cost 6 is more than group "api" admits from its shared bucket, which serves clients once its table is full (its SharedBurst is 5)`,
			file:    `line 3: routes[0]: cost 6 is more than group "api" admits from its shared bucket, which serves clients once its table is full (its shared_burst is 5)`},
		{name: "a cost above a replica's share of the burst",
			budgets: map[admit.Group]admit.Budget{"api": {Like: admit.GroupLink, Burst: 8, SharedBurst: 40, Store: anyStore{}, Replicas: 4}},
			route:   admit.Route{Groups: []admit.Group{"api"}, Cost: 3},
			yaml:    "budgets: {api: {like: link, burst: 8, shared_burst: 40}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 3}", flags: local,
			goWords: `admit: route [api]: Cost 3 is more than group "api" admits on one replica while the store is down (Burst 8 divided by Replicas 4 is 2)`,
			file:    `line 3: routes[0]: cost 3 is more than group "api" admits on one replica while the store is down (burst 8 divided by --replicas 4 is 2)`},
		{name: "every key chosen by the client",
			budgets: map[admit.Group]admit.Budget{"t": {Like: admit.GroupLink, Key: admit.Key{Header: "X-Api-Key"}}},
			route:   admit.Route{Groups: []admit.Group{"t"}},
			yaml:    "budgets: {t: {like: link, key: \"header:X-Api-Key\"}}\nroutes:\n  - {group: t, pattern: GET /x}",
			goWords: `admit: route [t]: every limit of the route is keyed by a value the client chooses (Key.Header or Key.PathValue, without Key.Authenticated), so a forger gets a fresh budget per value: stack a limit keyed by the client's address, or set Key.Authenticated on a group whose value a layer in front of admit (a gateway, an authenticating proxy) checks first: a check in the app runs only after admit has admitted the request, so it needs the limit keyed by the client's address`,
			file:    `line 3: routes[0]: every limit of the route is keyed by a value the client chooses (t: header:X-Api-Key), so a forger gets a fresh budget per value: stack a limit keyed by the peer, or set key_authenticated: true on a group whose value a layer in front of admit (a gateway, an authenticating proxy) checks first: a check in the app runs only after admit has admitted the request, so it needs the limit keyed by the peer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			door, err := admit.New(admit.Config{Budgets: tc.budgets})
			if len(tc.route.Groups) > 0 {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_, err = door.Handler(tc.route, http.NotFoundHandler())
			}
			if err == nil || err.Error() != tc.goWords {
				t.Errorf("for Go: got %v, want %q", err, tc.goWords)
			}
			path := writeConfig(t, tc.yaml+"\n")
			_, err = parse(t, append([]string{"--config", path}, tc.flags...), nil)
			if err == nil {
				t.Fatalf("for the file: accepted, want %q", tc.file)
			}
			got, named := strings.CutPrefix(err.Error(), fmt.Sprintf("admit: --config %q: ", path))
			if !named || got != tc.file {
				t.Errorf("for the file:\n got %q\nwant %q", err, tc.file)
			}
		})
	}
}
