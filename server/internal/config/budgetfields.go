package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/algorithm"
	"github.com/admitgo/admit/quota"
)

// budgetField is one field of a group's budget as the config file spells
// it. The file's reader, validate's listing and the admin API's JSON are
// all made from budgetFields, so a field has one spelling, one parser and
// one way of being written back.
type budgetField struct {
	key string
	// read sets the field from the file's value.
	read func(d *budgetDraft, v string) error
	// show is the field of a resolved budget as the file would write it,
	// and whether it is one of that budget's fields at all.
	show func(v budgetView) (any, bool)
}

// budgetDraft is one group's budget as the file is read: the door's
// Budget, and what the file says beside it.
type budgetDraft struct {
	group      admit.Group
	b          admit.Budget
	like       admit.Group // the built-in group it is, or is like; "" for neither
	sync       string      // "exact", "async", or "" when not given
	interval   time.Duration
	exemptFrom string                   // where exempt_keys_from reads the keys; "" for none
	getenv     func(name string) string // the environment exempt_keys_from: env:NAME reads
}

// budgetView is a resolved budget, with what the file says beside it.
type budgetView struct {
	b          admit.Budget
	name       admit.Group
	like       admit.Group
	interval   time.Duration // the async mode's; 0: exact
	exemptFrom string        // exempt_keys_from, shown instead of the keys' hashes
	auth       bool          // admit auth's: the fields a decision cannot apply are not shown
}

// Spellings of the file's values that more than one field or check uses.
const (
	FieldKey = "key" // also the access log's and the admin API's word for a client's key
	// The delay mode's keys, which explain and the status page print.
	FieldQueue      = "queue"
	FieldMaxWaiting = "max_waiting"
	syncExact       = "exact"
	syncAsync       = "async"
	// The fields admit auth refuses, since they need the app's answer,
	// and those it cannot apply, since it sees no body.
	fieldPerClient       = "per_client"
	fieldInflight        = "inflight"
	fieldChargeOnFailure = "charge_on_failure"
	fieldReadTimeout     = "read_timeout"
	fieldMaxBodyBytes    = "max_body_bytes"
	fieldMinBodyRate     = "min_body_rate"
	fieldBodyRateGrace   = "body_rate_grace"
	fieldHoldTimeout     = "hold_timeout"
)

var budgetFields = []budgetField{
	{"like", readLike, func(v budgetView) (any, bool) { return v.like, v.like != "" && v.like != v.name }},
	{"algorithm", readAlgorithm, func(v budgetView) (any, bool) { return AlgorithmText(v.b.Algorithm), true }},
	{"limit", readCount(func(b *admit.Budget) *int { return &b.Limit }), fixedOnly(func(b admit.Budget) any { return b.Limit })},
	{"window", readWith(parsePositive, func(b *admit.Budget) *time.Duration { return &b.Window }), fixedOnly(func(b admit.Budget) any { return fileDuration(b.Window) })},
	{"rate", readWith(ParseRate, func(b *admit.Budget) *rate.Limit { return &b.Rate }), bucketOnly(func(b admit.Budget) any { return fileRate(b.Rate) })},
	{"burst", readCount(func(b *admit.Budget) *int { return &b.Burst }), bucketOnly(func(b admit.Budget) any { return b.Burst })},
	// A queue of 0 is none, as nginx's burst without nodelay is left out.
	{FieldQueue, readWith(func(v string) (int, error) { return parseCount(v, 0) }, func(b *admit.Budget) *int { return &b.Queue }),
		func(v budgetView) (any, bool) { return v.b.Queue, v.b.Queue > 0 }},
	{FieldMaxWaiting, readCount(func(b *admit.Budget) *int { return &b.MaxWaiting }),
		func(v budgetView) (any, bool) { return v.b.MaxWaiting, v.b.Queue > 0 }},
	{"shared_rate", readWith(ParseRate, func(b *admit.Budget) *rate.Limit { return &b.SharedRate }), bucketOnly(func(b admit.Budget) any { return fileRate(b.SharedRate) })},
	{"shared_burst", readCount(func(b *admit.Budget) *int { return &b.SharedBurst }), always(func(b admit.Budget) any { return b.SharedBurst })},
	{FieldKey, func(d *budgetDraft, v string) error { return parseKey(v, &d.b.Key) }, always(func(b admit.Budget) any { return KeyText(b.Key) })},
	{"ipv4_prefix", readPrefix(32, func(k *admit.Key) *int { return &k.IPv4Prefix }), func(v budgetView) (any, bool) { return v.b.Key.IPv4Prefix, v.b.Key.IPv4Prefix != 0 }},
	{"ipv6_prefix", readPrefix(128, func(k *admit.Key) *int { return &k.IPv6Prefix }), func(v budgetView) (any, bool) { return v.b.Key.IPv6Prefix, v.b.Key.IPv6Prefix != 0 }},
	{"key_authenticated", func(d *budgetDraft, v string) (err error) { d.b.Key.Authenticated, err = ParseBool(v); return err },
		valueKeyed(func(k admit.Key) any { return k.Authenticated })},
	{"on_missing", readOnMissing, valueKeyed(func(k admit.Key) any {
		if k.RejectMissing {
			return "reject"
		}
		return "peer"
	})},
	{fieldPerClient, readCount(func(b *admit.Budget) *int { return &b.PerClient }), always(func(b admit.Budget) any { return b.PerClient })},
	{fieldInflight, readCount(func(b *admit.Budget) *int { return &b.Inflight }), always(func(b admit.Budget) any { return b.Inflight })},
	{"max_clients", readCount(func(b *admit.Budget) *int { return &b.MaxClients }), always(func(b admit.Budget) any { return b.MaxClients })},
	// In the file, as in nginx, a 0 timeout or body cap means none; the
	// door's Budget says none with a negative value, since its 0 is the
	// default.
	{fieldReadTimeout, readWith(parseFileTimeout, func(b *admit.Budget) *time.Duration { return &b.ReadTimeout }),
		always(func(b admit.Budget) any { return fileDuration(max(b.ReadTimeout, 0)) })},
	{fieldMaxBodyBytes, readWith(parseFileBytes, func(b *admit.Budget) *int64 { return &b.MaxBodyBytes }),
		always(func(b admit.Budget) any { return max(b.MaxBodyBytes, 0) })},
	{fieldMinBodyRate, readWith(parseFileBytes, func(b *admit.Budget) *int64 { return &b.MinBodyRate }),
		always(func(b admit.Budget) any { return max(b.MinBodyRate, 0) })},
	{fieldBodyRateGrace, readWith(parseFileTimeout, func(b *admit.Budget) *time.Duration { return &b.BodyRateGrace }),
		always(func(b admit.Budget) any { return fileDuration(max(b.BodyRateGrace, 0)) })},
	{fieldHoldTimeout, readWith(parseFileTimeout, func(b *admit.Budget) *time.Duration { return &b.HoldTimeout }),
		always(func(b admit.Budget) any { return fileDuration(max(b.HoldTimeout, 0)) })},
	{fieldChargeOnFailure, readCharge, always(func(b admit.Budget) any { return b.Charge == admit.ChargeOnFailure })},
	{fieldExempt, readExempt, func(v budgetView) (any, bool) { return prefixList(v.b.Exempt), len(v.b.Exempt) > 0 }},
	{FieldExemptKeysFrom, readExemptKeys, func(v budgetView) (any, bool) { return v.exemptFrom, v.exemptFrom != "" }},
	{"refusal_status", func(d *budgetDraft, v string) (err error) { d.b.RefusalStatus, err = parseCount(v, 0); return err },
		func(v budgetView) (any, bool) { return v.b.RefusalStatus, v.b.RefusalStatus != 0 }},
	{fieldRefusalType, readRefusalType, showRefusalType},
	{fieldRefusalBody, func(d *budgetDraft, v string) error { d.b.RefusalBody = v; return nil },
		func(v budgetView) (any, bool) { return shownText(v.b.RefusalBody), v.b.RefusalBody != "" }},
	{fieldRefusalProblemType, func(d *budgetDraft, v string) error { d.b.RefusalProblemType = v; return nil },
		func(v budgetView) (any, bool) { return v.b.RefusalProblemType, v.b.RefusalProblemType != "" }},
	{fieldRefusalHeaders, func(*budgetDraft, string) error { return nil }, // read as a map: see readBudget
		func(v budgetView) (any, bool) { return shownHeaders(v.b.RefusalHeaders), len(v.b.RefusalHeaders) > 0 }},
	{"ratelimit_headers", readFields, func(v budgetView) (any, bool) { return fieldsXRateLimit, v.b.XRateLimit }},
	{"ratelimit_headers_admitted", func(d *budgetDraft, v string) (err error) { d.b.FieldsOnAdmitted, err = ParseBool(v); return err },
		func(v budgetView) (any, bool) { return true, v.b.FieldsOnAdmitted }},
	{"sync", readSync, func(v budgetView) (any, bool) { return syncAsync, v.interval > 0 }},
	{"sync_interval", readSyncInterval, func(v budgetView) (any, bool) { return fileDuration(v.interval), v.interval > 0 }},
}

// The readers and showers that several fields share.

func readWith[T any](parse func(string) (T, error), field func(*admit.Budget) *T) func(*budgetDraft, string) error {
	return func(d *budgetDraft, v string) (err error) {
		*field(&d.b), err = parse(v)
		return err
	}
}

func readCount(field func(*admit.Budget) *int) func(*budgetDraft, string) error {
	return readWith(parseFileCount, field)
}

func readPrefix(most int, field func(*admit.Key) *int) func(*budgetDraft, string) error {
	return func(d *budgetDraft, v string) (err error) {
		*field(&d.b.Key), err = parsePrefixBits(v, most)
		return err
	}
}

func parsePositive(v string) (time.Duration, error) { return parseDuration(v, true) }

func always(f func(admit.Budget) any) func(budgetView) (any, bool) {
	return func(v budgetView) (any, bool) { return f(v.b), true }
}

func fixedOnly(f func(admit.Budget) any) func(budgetView) (any, bool) {
	return func(v budgetView) (any, bool) { return f(v.b), v.b.Algorithm == admit.FixedWindow }
}

func bucketOnly(f func(admit.Budget) any) func(budgetView) (any, bool) {
	return func(v budgetView) (any, bool) { return f(v.b), v.b.Algorithm != admit.FixedWindow }
}

// valueKeyed shows a field that applies to a key by a header or path value.
func valueKeyed(f func(admit.Key) any) func(budgetView) (any, bool) {
	return func(v budgetView) (any, bool) {
		return f(v.b.Key), v.b.Key.Header != "" || v.b.Key.PathValue != ""
	}
}

// scalarOrList returns a reader of one value, or of a list of values each
// set parses, at where.
func scalarOrList(where string, set func(string) error) func(*yaml.Node) error {
	return func(n *yaml.Node) error {
		if n.Kind != yaml.SequenceNode {
			return scalar(where, set)(n)
		}
		for i, item := range n.Content {
			if err := scalar(fmt.Sprintf("%s[%d]", where, i), set)(item); err != nil {
				return err
			}
		}
		return nil
	}
}

// The readers of one field each.

func readLike(d *budgetDraft, v string) error {
	g := admit.Group(v)
	if !slices.Contains(builtInGroups, g) {
		return fmt.Errorf("unknown group %q: want webhook, link or health", v)
	}
	if slices.Contains(builtInGroups, d.group) && g != d.group {
		return errors.New("a built-in group cannot be like another")
	}
	d.like, d.b.Like = g, g
	return nil
}

// readAlgorithm reads the algorithm with quota's one parser, which also
// takes its older spellings (gcra, fixed_window).
func readAlgorithm(d *budgetDraft, v string) error {
	a, err := quota.ParseAlgorithm(v)
	if err != nil {
		return fmt.Errorf("unknown algorithm %q: want %v or %v", v, quota.TokenBucket, quota.FixedWindow)
	}
	d.b.Algorithm = algorithm.Door[admit.Algorithm](a)
	return nil
}

// AlgorithmText is the door's algorithm as the file spells it: quota's
// text of quota's algorithm of the same name.
func AlgorithmText(a admit.Algorithm) string { return algorithm.Quota(a).String() }

func readOnMissing(d *budgetDraft, v string) error {
	switch v {
	case "peer":
		d.b.Key.RejectMissing = false
	case "reject":
		d.b.Key.RejectMissing = true
	default:
		return fmt.Errorf("%q: want peer or reject", v)
	}
	return nil
}

// The file's spellings of the families of rate-limit fields.
const (
	fieldsDraft      = "draft"
	fieldsXRateLimit = "x-ratelimit"
)

func readFields(d *budgetDraft, v string) error {
	if v != fieldsDraft && v != fieldsXRateLimit {
		return fmt.Errorf("%q: want draft (RateLimit-Policy and RateLimit) or x-ratelimit (X-RateLimit-Limit, -Remaining, -Reset)", v)
	}
	d.b.XRateLimit = v == fieldsXRateLimit
	return nil
}

func readCharge(d *budgetDraft, v string) error {
	on, err := ParseBool(v)
	d.b.Charge = admit.ChargeAlways
	if on {
		d.b.Charge = admit.ChargeOnFailure
	}
	return err
}

func readSync(d *budgetDraft, v string) error {
	if v != syncExact && v != syncAsync {
		return fmt.Errorf("unknown sync %q: want %s or %s", v, syncExact, syncAsync)
	}
	d.sync = v
	return nil
}

func readSyncInterval(d *budgetDraft, v string) (err error) {
	d.interval, err = parseDuration(v, true)
	if err == nil && (d.interval < minSyncInterval || d.interval > maxSyncInterval) {
		err = fmt.Errorf("%s: want %s to %s", v, DurationText(minSyncInterval), DurationText(maxSyncInterval))
	}
	return err
}

// doorWords names the door's fields and values, as its refusals
// (admit.BudgetError) name them, in the file's and the flags' words, so
// that each check of a budget or a route is written once, in the door.
var doorWords = map[string]string{
	"Limit": "limit", "Window": "window", "Rate": "rate", "Burst": "burst", "SharedRate": "shared_rate", "Like": "like",
	"FixedWindow":    "algorithm: " + AlgorithmText(admit.FixedWindow),
	"Key.IPv4Prefix": "ipv4_prefix", "Key.IPv6Prefix": "ipv6_prefix",
	"Key.RejectMissing": "on_missing", "Key.Authenticated": "key_authenticated",
	"Key.Header": "header:NAME", "Key.PathValue": "path:NAME", "Key.Global": "global",
	"ClientKey": "key: peer", "Inf": ".inf", "SharedBurst": "shared_burst", "PerClient": "per_client", "Inflight": "inflight",
	"MaxClients": "max_clients", "Charge": "charge_on_failure", "ChargeAlways": "false", "ChargeOnFailure": "true",
	"Algorithm": "algorithm", "TokenBucket": AlgorithmText(admit.TokenBucket), "Store": "--store", "Replicas": "--replicas", "Failure": "--store-fail", "RefusalStatus": "refusal_status",
	"RefusalBody": fieldRefusalBody, "RefusalType": fieldRefusalType, "RefusalProblemType": fieldRefusalProblemType, "RefusalHeaders": fieldRefusalHeaders,
	"MinBodyRate": "min_body_rate", "BodyRateGrace": "body_rate_grace", "None": "0 (none)",
	"Cost": fieldCost, "Groups": FieldGroup, "Peer": "the peer", "Authenticated": "key_authenticated: true",
	"Exempt": fieldExempt, "ExemptKeys": FieldExemptKeysFrom, "Key.Func": "a key function (the library's only)",
	"Queue": FieldQueue, "MaxWaiting": FieldMaxWaiting,
}

// readBudget reads one group's fields onto a draft whose like is the
// built-in group the group is (or is like; "" for neither), and whose
// interval is the async mode's (0: exact). A field left out keeps the
// group's default.
func readBudget(n *yaml.Node, where string, g admit.Group, getenv func(string) string) (budgetDraft, error) {
	d := budgetDraft{group: g, getenv: getenv}
	if slices.Contains(builtInGroups, g) {
		d.like = g
	}
	if !isNull(n) {
		readers := make(map[string]func(*yaml.Node) error, len(budgetFields))
		for _, f := range budgetFields {
			readers[f.key] = scalar(dotted(where, f.key), func(v string) error { return f.read(&d, v) })
		}
		readers[fieldExempt] = scalarOrList(dotted(where, fieldExempt), func(v string) error { return readExempt(&d, v) })
		readers[fieldRefusalHeaders] = readRefusalHeaders(&d, dotted(where, fieldRefusalHeaders))
		if err := eachField(n, where, readers); err != nil {
			return d, err
		}
	}
	if d.sync != syncAsync {
		if d.interval > 0 {
			return d, at(n, where+".sync_interval", "applies to sync: async only")
		}
		return d, nil
	}
	if d.interval == 0 {
		d.interval = defaultSyncInterval
	}
	return d, nil
}

// DurationText is a duration as the config file would spell it: 1h rather
// than time.Duration's 1h0m0s, and 0 for none.
func DurationText(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
