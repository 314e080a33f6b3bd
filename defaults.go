package admit

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/quota"
)

// defaults are the built-in groups' budgets, every field set.
var defaults = map[Group]Budget{
	GroupWebhook: {
		Rate: 50, Burst: 500, SharedRate: 50, SharedBurst: 500, PerClient: 16, Inflight: 64,
		MaxClients: 16384, ReadTimeout: 10 * time.Second, MaxBodyBytes: 1 << 20,
		MinBodyRate: 500, BodyRateGrace: 5 * time.Second,
		HoldTimeout: 30 * time.Second, Charge: ChargeOnFailure,
	},
	GroupLink: {
		Rate: 1, Burst: 20, SharedRate: 1, SharedBurst: 20, PerClient: 2, Inflight: 4,
		MaxClients: 16384, ReadTimeout: -1, MaxBodyBytes: 64 << 10,
		MinBodyRate: gentleBodyRate, BodyRateGrace: gentleBodyGrace,
		HoldTimeout: 10 * time.Second, Charge: ChargeAlways,
	},
	GroupHealth: {
		Rate: 5, Burst: 20, SharedRate: 5, SharedBurst: 20, PerClient: 4, Inflight: 32,
		MaxClients: 16384, ReadTimeout: -1, MaxBodyBytes: 64 << 10,
		MinBodyRate: gentleBodyRate, BodyRateGrace: gentleBodyGrace,
		HoldTimeout: 5 * time.Second, Charge: ChargeAlways,
	},
}

// The minimum body rate of every group but the webhook group: gentle
// enough for a phone on a poor link (100 bytes a second after 10 s), and
// still a bound on a body that drips a byte at a time.
const (
	gentleBodyRate  = 100
	gentleBodyGrace = 10 * time.Second
)

// DefaultBudgets returns a new map with the default budget of every built-in
// group, each field set:
//
//	group    rate, burst  client cap  group cap  token spent        read timeout  body cap  hold
//	webhook  50/s, 500    16          64         only on a 4xx      10s           1 MiB     30s
//	link     1/s, 20      2           4          on every request   none          64 KiB    10s
//	health   5/s, 20      4           32         on every request   none          64 KiB    5s
//
// The shared bucket of each group has the same rate and burst as a client's,
// and each client table holds 16,384 clients. With the webhook group cap of 64,
// the body cap bounds what webhooks can make the process buffer to 64 MiB; the
// 10 s read deadline matches how long GitHub waits for a delivery. A
// webhook body must also arrive at 500 bytes a second on average once 5 s
// have passed, and every other group's at 100 bytes a second after 10 s.
func DefaultBudgets() map[Group]Budget {
	m := make(map[Group]Budget, len(defaults))
	for g, b := range defaults {
		m[g] = b
	}
	return m
}

// namedInflight and namedPerClient are the in-flight caps (the group cap
// and the client cap) of a group that is not built in, unless it gives its own.
// The built-in groups' caps are sized for what they guard (a link's two
// requests per client), so a group named for an API does not inherit them
// through Like: 256 is as many requests as the upstream transport keeps
// connections for, and a client address may hold an eighth of them, so
// that one (or one forwarded address behind a trusted proxy, whose
// connections are not capped per client) cannot take the whole group. A
// group keyed by a header, a path value or globally counts a tenant or a
// token as its client, which all of its users share, so its clients may
// hold the whole group's.
const (
	namedInflight  = 256
	namedPerClient = 32
)

// resolve returns b with its zero fields taken from the defaults of the
// group it is Like, or of g itself, or, for a group that is neither, from
// GroupLink's; such a group must give its own amounts. A group that is not
// built in takes its in-flight caps from namedPerClient and namedInflight,
// never from the group it is Like.
func (b Budget) resolve(g Group) (Budget, error) {
	base, builtIn := defaults[g]
	switch like, ok := defaults[b.Like]; {
	case b.Like != "" && !ok:
		return Budget{}, fieldsError(g, "{Like} %q, want a built-in group (%s, %s or %s)", b.Like, GroupWebhook, GroupLink, GroupHealth)
	case b.Like != "":
		base, builtIn = like, true
	case !builtIn:
		base = defaults[GroupLink]
	}
	if _, own := defaults[g]; !own {
		base.PerClient, base.Inflight = namedPerClient, namedInflight
		if b.Key.Header != "" || b.Key.PathValue != "" || b.Key.Global || b.Key.Func != nil {
			// Its "client" is a tenant or a token, which all its users
			// share: the group's cap is the only one it asked for.
			base.PerClient = namedInflight
		}
	}
	switch {
	case b.Algorithm == FixedWindow && (b.Limit < 1 || b.Window <= 0):
		return Budget{}, fieldsError(g, "a fixed-window group needs a positive {Limit} and {Window}")
	case b.Algorithm == FixedWindow && (b.Rate != 0 || b.Burst != 0 || b.SharedRate != 0):
		return Budget{}, fieldsError(g, "{Rate}, {Burst} and {SharedRate} belong to a token bucket; a fixed-window group has a {Limit} per {Window}")
	case b.Algorithm == TokenBucket && (b.Limit != 0 || b.Window != 0):
		return Budget{}, fieldsError(g, "{Limit} and {Window} belong to {FixedWindow}")
	case b.Algorithm == TokenBucket && !builtIn && (b.Rate == 0 || b.Burst == 0):
		return Budget{}, fieldsError(g, "a group of its own needs its {Rate} and {Burst} (or {FixedWindow} with a {Limit} and {Window}), or {Like}: webhook, link or health")
	}
	b.Like = ""
	if b.Algorithm == FixedWindow {
		// A fixed window's amounts are its Limit and Window; the token
		// figures describe the same budget, for headers and the shared
		// bucket: Limit tokens, refilled once per Window.
		b.Burst = b.Limit
		b.Rate = rate.Limit(float64(b.Limit) / b.Window.Seconds())
		pick(&b.SharedBurst, b.Limit)
		b.SharedRate = rate.Limit(float64(b.SharedBurst) / b.Window.Seconds())
	}
	pick(&b.Rate, base.Rate)
	pick(&b.Burst, base.Burst)
	pick(&b.SharedRate, b.Rate)
	pick(&b.SharedBurst, b.Burst)
	pick(&b.PerClient, base.PerClient)
	pick(&b.Inflight, base.Inflight)
	pick(&b.MaxClients, base.MaxClients)
	pick(&b.ReadTimeout, base.ReadTimeout)
	pick(&b.MaxBodyBytes, base.MaxBodyBytes)
	pick(&b.MinBodyRate, base.MinBodyRate)
	pick(&b.BodyRateGrace, base.BodyRateGrace)
	pick(&b.HoldTimeout, base.HoldTimeout)
	pick(&b.Charge, base.Charge)
	if b.Queue > 0 {
		pick(&b.MaxWaiting, b.Inflight)
	}
	if b.Failure == quota.FailDefault && b.Replicas > 0 {
		b.Failure = quota.FailLocal // Replicas alone turned the fallback on before Failure
	}
	return b, b.validate(g)
}

// pick sets *field to def when it is zero.
func pick[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}
