package admit

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/quota"
)

// Group names a set of routes that share one budget.
type Group string

// The groups a door knows by default.
const (
	// GroupWebhook is for signed webhook deliveries: generous, and charged
	// only when the handler answers 4xx (a bad signature, a replay).
	GroupWebhook Group = "webhook"
	// GroupLink is for public links: tight, and charged on every request.
	GroupLink Group = "link"
	// GroupHealth is for health probes; the server serves a cached status to
	// probes over budget instead of rejecting them.
	GroupHealth Group = "health"
)

// Budget is what one group admits. The zero Budget is invalid; start from
// [DefaultBudgets].
type Budget struct {
	// Rate is the refill rate of each client's bucket in tokens per second;
	// rate.Inf disables the client limit. Must be positive.
	Rate rate.Limit
	// Burst is the capacity of each client's bucket; at least 1.
	Burst int
	// SharedRate and SharedBurst size the group's shared bucket, which serves
	// the clients that find no room in the client table. Same rules as Rate
	// and Burst.
	SharedRate  rate.Limit
	SharedBurst int
	// PerClient is how many requests one client may have in flight; at least 1.
	PerClient int
	// Inflight is how many requests the whole group may have in flight; at
	// least 1.
	Inflight int
	// MaxClients is the size of the group's client table; at least 1. Memory
	// for the table is bounded by it whatever the number of addresses seen.
	MaxClients int
	// ReadTimeout is the deadline for reading the request body, counted from
	// admission; 0 keeps the server's own.
	ReadTimeout time.Duration
	// MaxBodyBytes caps the request body: a longer declared body is answered
	// 413 at the door, a longer streamed body fails the handler's read with
	// *http.MaxBytesError. 0 means no cap.
	MaxBodyBytes int64
	// HoldTimeout bounds how long an admitted request may hold its slots,
	// from admission to the end of its answer: the connection's read and
	// write deadlines are set to admission plus HoldTimeout, so a client that
	// stops reading the answer (or drip-feeds its body) has its request cut
	// there and its slots freed, and the request's context ends with it (on
	// HTTP/1.x once the body has been read, on HTTP/2 once the write
	// deadline passes). An upgraded connection (a WebSocket) is cut at the
	// same time. The write deadline is cleared when the request settles, so
	// a kept-alive connection's next request is not cut by it. It takes
	// effect where the ResponseWriter supports deadlines, as net/http's do.
	// 0 means no bound.
	HoldTimeout time.Duration
	// ChargeOnFailure spends a client's token only when the handler answers
	// 4xx. Every unsettled request holds a token meanwhile, so a client cannot
	// exceed its burst with concurrent requests either.
	ChargeOnFailure bool
	// Store, when set, decides each client's tokens in a shared store (GCRA
	// at Rate and Burst, the client key hashed with quota.Subject), so several
	// replicas enforce one budget. In-flight caps stay per process, and the
	// shared bucket and client table are not used. A store failure follows
	// the store's failure policy and counts as outcome store_error. nil: the
	// door's own buckets.
	Store quota.Charger
}

// Default budget figures; see [DefaultBudgets].
const (
	DefaultMaxClients = 16384

	DefaultWebhookRate         = 50
	DefaultWebhookBurst        = 500
	DefaultWebhookPerClient    = 16
	DefaultWebhookInflight     = 64
	DefaultWebhookReadTimeout  = 10 * time.Second
	DefaultWebhookMaxBodyBytes = 1 << 20
	DefaultWebhookHoldTimeout  = 30 * time.Second

	DefaultLinkRate         = 1
	DefaultLinkBurst        = 20
	DefaultLinkPerClient    = 2
	DefaultLinkInflight     = 4
	DefaultLinkMaxBodyBytes = 64 << 10
	DefaultLinkHoldTimeout  = 10 * time.Second

	DefaultHealthRate         = 5
	DefaultHealthBurst        = 20
	DefaultHealthPerClient    = 4
	DefaultHealthInflight     = 32
	DefaultHealthMaxBodyBytes = 64 << 10
	DefaultHealthHoldTimeout  = 5 * time.Second
)

// DefaultBudgets returns a new map with the default budget of every known
// group:
//
//	group    rate, burst  per client  group cap  token spent        read timeout  body cap  hold
//	webhook  50/s, 500    16          64         only on a 4xx      10s           1 MiB     30s
//	link     1/s, 20      2           4          on every request   server's      64 KiB    10s
//	health   5/s, 20      4           32         on every request   server's      64 KiB    5s
//
// The shared bucket of each group has the same rate and burst as a client's,
// and each client table holds 16,384 clients. With the webhook group cap of 64,
// the body cap bounds what webhooks can make the process buffer to 64 MiB; the
// 10 s read deadline matches how long GitHub waits for a delivery.
func DefaultBudgets() map[Group]Budget {
	return map[Group]Budget{
		GroupWebhook: {
			Rate: DefaultWebhookRate, Burst: DefaultWebhookBurst,
			SharedRate: DefaultWebhookRate, SharedBurst: DefaultWebhookBurst,
			PerClient: DefaultWebhookPerClient, Inflight: DefaultWebhookInflight,
			MaxClients: DefaultMaxClients, ReadTimeout: DefaultWebhookReadTimeout,
			MaxBodyBytes: DefaultWebhookMaxBodyBytes, HoldTimeout: DefaultWebhookHoldTimeout,
			ChargeOnFailure: true,
		},
		GroupLink: {
			Rate: DefaultLinkRate, Burst: DefaultLinkBurst,
			SharedRate: DefaultLinkRate, SharedBurst: DefaultLinkBurst,
			PerClient: DefaultLinkPerClient, Inflight: DefaultLinkInflight,
			MaxClients: DefaultMaxClients, MaxBodyBytes: DefaultLinkMaxBodyBytes,
			HoldTimeout: DefaultLinkHoldTimeout,
		},
		GroupHealth: {
			Rate: DefaultHealthRate, Burst: DefaultHealthBurst,
			SharedRate: DefaultHealthRate, SharedBurst: DefaultHealthBurst,
			PerClient: DefaultHealthPerClient, Inflight: DefaultHealthInflight,
			MaxClients: DefaultMaxClients, MaxBodyBytes: DefaultHealthMaxBodyBytes,
			HoldTimeout: DefaultHealthHoldTimeout,
		},
	}
}

// validate returns an error naming the group and the first bad field.
func (b Budget) validate(g Group) error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("admit: group %q: %s %v, want %s", g, field, v, want)
	}
	switch {
	case g == "":
		return fmt.Errorf("admit: a group needs a name")
	case !(b.Rate > 0) || math.IsNaN(float64(b.Rate)):
		return bad("Rate", b.Rate, "a positive rate (rate.Inf for no limit)")
	case b.Burst < 1:
		return bad("Burst", b.Burst, "at least 1")
	case !(b.SharedRate > 0) || math.IsNaN(float64(b.SharedRate)):
		return bad("SharedRate", b.SharedRate, "a positive rate (rate.Inf for no limit)")
	case b.SharedBurst < 1:
		return bad("SharedBurst", b.SharedBurst, "at least 1")
	case b.PerClient < 1:
		return bad("PerClient", b.PerClient, "at least 1")
	case b.Inflight < 1:
		return bad("Inflight", b.Inflight, "at least 1")
	case b.MaxClients < 1 || b.MaxClients > math.MaxInt32:
		return bad("MaxClients", b.MaxClients, "between 1 and 2^31-1")
	case b.ReadTimeout < 0:
		return bad("ReadTimeout", b.ReadTimeout, "0 (the server's) or more")
	case b.MaxBodyBytes < 0:
		return bad("MaxBodyBytes", b.MaxBodyBytes, "0 (no cap) or more")
	case b.HoldTimeout < 0:
		return bad("HoldTimeout", b.HoldTimeout, "0 (no bound) or more")
	}
	if b.Store != nil {
		return b.checkStoreRule(g)
	}
	return nil
}

// checkStoreRule refuses a budget its shared store could not enforce, which
// would otherwise fail every request of the group as a caller error.
func (b Budget) checkStoreRule(g Group) error {
	if b.Rate != rate.Inf && float64(max(1, math.Round(float64(b.Rate))))/float64(b.Rate) > float64(math.MaxInt64)/float64(time.Second) {
		return fmt.Errorf("admit: group %q: Rate %v is too low for a shared store's window", g, b.Rate)
	}
	rule := b.rule(g)
	err := rule.Validate()
	if c, ok := b.Store.(quota.RuleChecker); ok && err == nil {
		err = c.CheckRule(rule)
	}
	if err != nil {
		return fmt.Errorf("admit: group %q: Rate %v and Burst %d with the shared store: %w", g, b.Rate, b.Burst, err)
	}
	return nil
}

// refills returns how the client and shared buckets fill.
func (b Budget) refills() (client, shared refill) {
	return refill{perNano: perNano(b.Rate), burst: float64(b.Burst)},
		refill{perNano: perNano(b.SharedRate), burst: float64(b.SharedBurst)}
}

// perNano converts a rate to tokens per nanosecond; rate.Inf, which is the
// largest finite float64, becomes +Inf so the bucket is always full.
func perNano(l rate.Limit) float64 {
	if l == rate.Inf {
		return math.Inf(1)
	}
	return float64(l) / 1e9
}

// rule returns the GCRA rule a shared store enforces for the group: Rate as
// Limit per Window with Limit a whole number of tokens.
func (b Budget) rule(g Group) quota.Rule {
	limit := max(1, int(math.Round(float64(b.Rate))))
	window := time.Duration(float64(limit) / float64(b.Rate) * float64(time.Second))
	if b.Rate == rate.Inf {
		limit, window = math.MaxInt32, time.Second
	}
	return quota.Rule{Name: "admit." + string(g), Limit: limit, Window: window, Algorithm: quota.GCRA, Burst: b.Burst}
}
