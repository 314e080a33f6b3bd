package admit

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
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

// Charge says when a request spends its token. The zero Charge means the
// group's default: ChargeOnFailure for GroupWebhook, ChargeAlways otherwise.
type Charge uint8

const (
	// ChargeAlways spends a token when the request is admitted.
	ChargeAlways Charge = iota + 1
	// ChargeOnFailure spends a token only when the handler answers 4xx.
	// Every unsettled request holds a token meanwhile, so a client cannot
	// exceed its burst with concurrent requests either.
	ChargeOnFailure
)

// Algorithm says how a group counts. It is quota.Algorithm's concept with
// the door's own zero value, a token bucket where quota's is a fixed
// window; both zero values stay as they are, so a budget or rule that
// names none keeps counting as it did. A group on a shared store counts in
// quota's algorithm of the same name, and the config file spells both as
// quota.Algorithm's String does: token-bucket, fixed-window.
type Algorithm uint8

const (
	// TokenBucket refills each bucket continuously at Rate up to Burst; on a
	// shared store it is quota.TokenBucket, the same arithmetic kept as one
	// timestamp (GCRA). It is the zero value.
	TokenBucket Algorithm = iota
	// FixedWindow counts requests per aligned Window, up to Limit. It is one
	// counter per key, and allows up to twice Limit across a window seam (the
	// end of one window and the start of the next). Refused requests are
	// counted too, so hammering a limit keeps the window closed.
	FixedWindow
)

// Budget is what one group admits. A field left zero takes the group's
// default (see [DefaultBudgets]), or the defaults of the group it is Like;
// a group that is neither built in nor Like one takes GroupLink's, but must
// give its Rate and Burst (or, for FixedWindow, its Limit and Window). A
// group that is not built in never takes the in-flight caps of the group it
// is Like: its PerClient and Inflight default to 32 and 256 (256 and 256
// when it is keyed by a header, a path value, a Func or globally). A
// budget that changes one figure names one field; the zero Budget is every
// default.
type Budget struct {
	// Like names the built-in group whose defaults fill this budget's zero
	// fields. "": the group's own, or GroupLink's for a new group.
	Like Group
	// Algorithm is how the group counts: TokenBucket (the zero value) or
	// FixedWindow.
	Algorithm Algorithm
	// Rate is the refill rate of each client's bucket in tokens per second;
	// rate.Inf disables the client limit. 0: the default. TokenBucket only.
	Rate rate.Limit
	// Burst is the capacity of each client's bucket. 0: the default.
	// TokenBucket only.
	Burst int
	// Limit is how many requests a key may make per Window. FixedWindow
	// only; required there.
	Limit int
	// Window is the period of Limit. FixedWindow only; required there.
	Window time.Duration
	// Key says whom the buckets belong to. The zero Key: the client.
	Key Key
	// SharedRate and SharedBurst size the group's shared bucket, which serves
	// the clients that find no room in the client table. 0: the same as
	// Rate and Burst. A FixedWindow group's shared bucket counts Limit per
	// Window.
	SharedRate  rate.Limit
	SharedBurst int
	// PerClient is the client cap: how many requests one client may have in
	// flight (the config file's per_client). 0: the
	// default (for a group that is not built in, Like one or not: 32 when
	// keyed by the client's address, 256 when by a header, a path value, a
	// Func or globally).
	PerClient int
	// Inflight is the group cap: how many requests the whole group may have
	// in flight (the config file's inflight); over-budget requests served by an overflow handler have as many slots
	// of their own. 0: the default (256 for a group that is not built in).
	Inflight int
	// MaxClients is the size of the group's client table. Memory for the
	// table is bounded by it whatever the number of addresses seen. 0: the
	// default, 16,384.
	MaxClients int
	// ReadTimeout is the deadline for reading the request body, counted from
	// admission, or, with "Expect: 100-continue", from the 100 (see
	// MinBodyRate). 0: the default; negative: none (the server's own).
	ReadTimeout time.Duration
	// MinBodyRate is the least average rate, in bytes a second, at which
	// the request body must arrive once BodyRateGrace has passed, as
	// Apache's mod_reqtimeout MinRate: after the grace each MinBodyRate
	// bytes received buy one more second, so a sender that stalls for a
	// lost round-trip spends the credit it earned, and one that drips a
	// byte at a time is cut when the grace ends. The grace and the
	// ReadTimeout count from admission, or, for a request with
	// "Expect: 100-continue", from the 100 the server sends when the body
	// is first read. A body cut for its rate or its deadline, or cut short,
	// is the client's failure: see [Route]. 0: the default; negative: none.
	MinBodyRate int64
	// BodyRateGrace is how long a body may take before MinBodyRate
	// applies, as mod_reqtimeout's initial timeout: without one the rate
	// would cut nearly every body whose bytes are not all in its first
	// packet, so it may be negative (none) only with no MinBodyRate. 0:
	// the default.
	BodyRateGrace time.Duration
	// MaxBodyBytes caps the request body: a longer declared body is answered
	// 413 at the door, a longer streamed body fails the handler's read with
	// *http.MaxBytesError. 0: the default; negative: no cap.
	MaxBodyBytes int64
	// HoldTimeout bounds how long an admitted request may hold its slots,
	// from admission to the end of its answer: the connection's read and
	// write deadlines are set to admission plus HoldTimeout, so a client that
	// stops reading the answer (or drip-feeds its body) has its request cut
	// there and its slots freed, and the request's context ends with it (on
	// HTTP/1.x once the body has been read, on HTTP/2 once the write
	// deadline passes). An upgraded connection (a WebSocket) is cut at the
	// same time. The write deadline stays until the answer's last byte is
	// written: the server lifts it after the answer (net/http's after every
	// response; on HTTP/2 it is the stream's and ends with it), so a server
	// whose ResponseWriter sets a connection's deadlines without lifting them
	// after each answer would carry the bound into the next request. It
	// takes effect where the ResponseWriter supports deadlines, as
	// net/http's do.
	// 0: the default; negative: no bound.
	HoldTimeout time.Duration
	// Charge says when a request spends its token. 0: the default.
	Charge Charge
	// Queue is how many requests of a key past its Burst wait for a token
	// instead of being refused, as nginx's limit_req burst without
	// nodelay: each reserves its token on arrival, its key's bucket going
	// into debt by at most Queue tokens, and is admitted when the token
	// has refilled (after Queue/Rate at the longest), holding meanwhile
	// no in-flight slot and nothing of its body; a request whose context
	// ends first gives its token back. Shadow mode never delays. Queue
	// needs a TokenBucket group charged on every request (ChargeAlways)
	// and no Store; New refuses it otherwise with a *BudgetError. Clients
	// on the shared bucket never wait.
	// 0: none, a request without a token is refused at once.
	Queue int
	// MaxWaiting bounds the group's requests waiting at once (see
	// Queue); past it, a request is refused as without a queue. 0: the
	// group's Inflight.
	MaxWaiting int
	// Store, when set, decides each client's tokens in a shared store
	// (quota's algorithm of the group's, at Rate and Burst or Limit and
	// Window, the client key hashed with quota.Subject), so several
	// replicas enforce one budget. In-flight caps stay per process, and the
	// shared bucket and client table are not used. A store failure follows
	// Failure and counts as outcome store_error, or fallback under
	// quota.FailLocal. nil: the door's own buckets.
	Store quota.Charger
	// Failure is what the group's requests get while Store cannot decide:
	// quota.FailClosed refuses them with 503 and Retry-After: 1,
	// quota.FailOpen admits them uncounted, and quota.FailLocal decides
	// them by the door's own buckets at the budget's share (see Replicas).
	// quota.FailError is refused: it hands the decision back to a front
	// before the door, and the door is the last to decide. Under every
	// policy a store that failed is not asked again for half a second: the
	// requests meanwhile get the policy's answer at once, one request each
	// half second probes the store, and the first answer brings the group back
	// to it. 0 (quota.FailDefault): quota.FailLocal when Replicas is set,
	// else what the store's own failure policy decided (its Config's
	// Failure; closed unless it says open).
	Failure quota.Failure
	// Replicas, under quota.FailLocal, says how many replicas share the
	// store: while the store fails, the door decides by its own buckets at
	// the budget divided by Replicas (Rate and SharedRate exactly; Burst,
	// SharedBurst and Limit rounded down, but at least 1), so that the
	// replicas together admit at most the budget, and counts what it
	// admits as outcome fallback. Setting it with a zero Failure turns on
	// the fallback as it did before Failure existed. 0: no fallback.
	Replicas int

	// Exempt lists client prefixes whose requests pass the group without
	// spending its tokens or counting against the client cap, as
	// nginx's geo lets a monitoring network by:
	// a request is exempt when a prefix holds its whole client key, the
	// address Config.Key resolves (so behind a clientip.Resolver only a
	// trusted proxy's X-Forwarded-For can name it), before any widening.
	// An exempt request still takes one of the group's Inflight slots,
	// which protect the app, and counts as outcome exempted. nil: none.
	Exempt []netip.Prefix
	// ExemptKeys lists keys whose requests pass as Exempt's do, as
	// quota.Subject writes them (the hex Door.KeyOf returns), so that the
	// budget never holds the secret itself: for a group keyed by a header
	// (its value, or an Authorization header's credential), a path value or
	// Func. A header or path value must be Authenticated, or a client
	// could send a listed value of its own. nil: none.
	ExemptKeys []string

	// The answers the group gives, beside admitting: the status of its
	// refusals and which rate-limit fields they carry.

	// RefusalStatus is the status of the group's refusals for its rate or
	// its client cap (outcomes rate_limited and client_concurrency), 400
	// to 599, as nginx's limit_req_status and HAProxy's deny_status set
	// it; the group cap's refusals and the store's stay 503. 0: 429.
	RefusalStatus int
	// RefusalBody is the body of the group's refusals that carry
	// Retry-After (outcomes rate_limited, client_concurrency,
	// group_concurrency and store_error), a template of admit's values
	// only: {group}, {status}, {retry_after} (the seconds Retry-After
	// says) and {outcome}; the request's path, key and headers are never
	// in it, so nothing a client sends is reflected. Any other {word} is
	// refused; a brace not around a word (CSS's "p { color: red }") is
	// text. For a problem document it is the detail. "": the status text
	// and the group's name, as the door's other refusals say.
	RefusalBody string
	// RefusalType is the media type of those refusals' body: "" (text/plain;
	// charset=utf-8), "text/html; charset=utf-8" (the group's name in it
	// HTML-escaped), or "application/problem+json", which makes the body an
	// RFC 9457 problem document: type, title (the status text), status,
	// detail (RefusalBody, when given) and retry_after (seconds, as
	// Retry-After).
	RefusalType string
	// RefusalProblemType is the problem document's type, a URI. "":
	// "about:blank".
	RefusalProblemType string
	// RefusalHeaders are header fields added to those refusals, as
	// nginx's add_header always does. Any token is a name, but those that
	// admit or the body's framing set, or that speak for the connection
	// rather than the answer, are refused: hop-by-hop fields (Connection,
	// Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade),
	// Content-Length, Content-Type, Content-Encoding, Content-Range,
	// Set-Cookie, and admit's own (Retry-After, RateLimit*,
	// X-RateLimit-*, X-Content-Type-Options, Admit-*). A value holds no
	// control character but tab. nil: none.
	RefusalHeaders http.Header

	// XRateLimit picks the rate-limit header fields the group's
	// rate_limited refusals carry beside Retry-After: go-chi/httprate's
	// X-RateLimit-Limit (the burst, or a fixed window's limit),
	// X-RateLimit-Remaining (the whole tokens left) and X-RateLimit-Reset
	// (when the bucket is full again, or on a refusal when a retry may
	// pass, in Unix epoch seconds). false: the IETF draft's
	// RateLimit-Policy (q the burst or a fixed window's limit, w the
	// seconds a drained bucket takes to fill, or the window) and RateLimit
	// (r the whole tokens left, t the seconds until the bucket is full
	// again; on a refusal, Retry-After).
	XRateLimit bool
	// FieldsOnAdmitted sends those fields on the answers of admitted
	// requests too; a field the handler's answer sets itself is left as it
	// is. false: on refusals only (unless Config.PolicyHeaders).
	FieldsOnAdmitted bool
}

// validate returns an error naming the group and the first bad field of a
// resolved budget.
func (b Budget) validate(g Group) error {
	// Each field in braces, so that a front words it as its users write
	// it (see BudgetError).
	switch {
	case g == "":
		return fmt.Errorf("admit: a group needs a name")
	case !(b.Rate > 0) || math.IsNaN(float64(b.Rate)):
		return fieldsError(g, "{Rate} %v, want a positive rate ({Inf} for no limit)", b.Rate)
	case b.Burst < 1:
		return fieldsError(g, "{Burst} %v, want at least 1", b.Burst)
	case !(b.SharedRate > 0) || math.IsNaN(float64(b.SharedRate)):
		return fieldsError(g, "{SharedRate} %v, want a positive rate ({Inf} for no limit)", b.SharedRate)
	case b.SharedBurst < 1:
		return fieldsError(g, "{SharedBurst} %v, want at least 1", b.SharedBurst)
	case b.PerClient < 1:
		return fieldsError(g, "{PerClient} %v, want at least 1", b.PerClient)
	case b.Inflight < 1:
		return fieldsError(g, "{Inflight} %v, want at least 1", b.Inflight)
	case b.MaxClients < 1 || b.MaxClients > math.MaxInt32:
		return fieldsError(g, "{MaxClients} %v, want between 1 and 2^31-1", b.MaxClients)
	case b.Charge != ChargeAlways && b.Charge != ChargeOnFailure:
		return fieldsError(g, "{Charge} %v, want {ChargeAlways} or {ChargeOnFailure}", b.Charge)
	case b.RefusalStatus != 0 && (b.RefusalStatus < 400 || b.RefusalStatus > 599):
		return fieldsError(g, "{RefusalStatus} %d, want 400 to 599, or 0 for 429", b.RefusalStatus)
	case b.Algorithm > FixedWindow:
		return fieldsError(g, "{Algorithm} %v, want {TokenBucket} or {FixedWindow}", b.Algorithm)
	case b.Replicas < 0 || b.Replicas > 0 && b.Store == nil:
		return fieldsError(g, "{Replicas} %v, want 0, or with a {Store} at least 1", b.Replicas)
	case b.Failure == quota.FailError || !b.Failure.Valid():
		return fieldsError(g, "{Failure} %v: the door is the last to decide, so it cannot hand the decision back; want closed, open or local", b.Failure)
	case b.Failure != quota.FailDefault && b.Store == nil:
		return fieldsError(g, "{Failure} %v applies to a group with a {Store}", b.Failure)
	case b.Failure == quota.FailLocal && b.Replicas < 1:
		return fieldsError(g, "{Failure} local needs {Replicas}: how many replicas share the store, so that each admits its share while it is down")
	case b.Replicas > 0 && b.Failure != quota.FailLocal:
		return fieldsError(g, "{Replicas} %v applies to {Failure} local only, not %v", b.Replicas, b.Failure)
	case b.MinBodyRate > 0 && b.BodyRateGrace < 0:
		return fieldsError(g, "{BodyRateGrace} {None} with {MinBodyRate} %d: a body's first bytes take time to arrive, so nearly every body would be cut; want a positive {BodyRateGrace}, or {MinBodyRate} {None}", b.MinBodyRate)
	}
	if err := b.Key.validate(g); err != nil {
		return err
	}
	if err := b.validateRefusal(g); err != nil {
		return err
	}
	if err := b.validateExempt(g); err != nil {
		return err
	}
	if err := b.validateDelay(g); err != nil {
		return err
	}
	if b.Store != nil {
		return b.checkStoreRule(g)
	}
	return nil
}

// checkStoreRule refuses a budget its shared store could not enforce, which
// would otherwise fail every request of the group as a caller error.
func (b Budget) checkStoreRule(g Group) error {
	if b.Algorithm == TokenBucket && b.Rate != rate.Inf && float64(max(1, math.Round(float64(b.Rate))))/float64(b.Rate) > float64(math.MaxInt64)/float64(time.Second) {
		return fieldsError(g, "{Rate} %v is too low for a shared store's window", b.Rate)
	}
	rule := b.rule(g)
	err := rule.Validate()
	if c, ok := b.Store.(quota.RuleChecker); ok && err == nil {
		err = c.CheckRule(rule)
	}
	if err != nil {
		refused := fieldsError(g, "{Rate} %v and {Burst} %d cannot be decided on the shared store", b.Rate, b.Burst)
		if b.Algorithm == FixedWindow {
			refused = fieldsError(g, "{Limit} %d per {Window} %v cannot be decided on the shared store", b.Limit, b.Window)
		}
		refused.err = err
		return refused
	}
	return nil
}

// fallback returns the budget the local fallback of a group with a store
// decides by: its share of the tokens, and no caps of its own, since the
// group's caps are taken before the store is asked.
func (b Budget) fallback() Budget {
	n := b.Replicas
	share := func(v int) int { return max(1, v/n) }
	f := b
	f.Store, f.Replicas = nil, 0
	f.Rate, f.SharedRate = b.Rate/rate.Limit(n), b.SharedRate/rate.Limit(n)
	f.Burst, f.SharedBurst = share(b.Burst), share(b.SharedBurst)
	if b.Algorithm == FixedWindow {
		f.Limit = share(b.Limit)
	}
	f.PerClient, f.Inflight = math.MaxInt32, math.MaxInt32
	return f
}

// refills returns how the client and shared buckets fill.
func (b Budget) refills() (client, shared refill) {
	if b.Algorithm == FixedWindow {
		w := int64(b.Window)
		return refill{fixed: true, burst: float64(b.Limit), window: w},
			refill{fixed: true, burst: float64(b.SharedBurst), window: w}
	}
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
