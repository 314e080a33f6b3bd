package rls_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/rls"
)

// bucketFile is a file whose one descriptor's rate_limit holds lines, in
// block style from line 5, so that an error's column is 7 plus the key.
func bucketFile(lines ...string) string {
	var b strings.Builder
	b.WriteString("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n")
	for _, l := range lines {
		b.WriteString("      " + l + "\n")
	}
	return b.String()
}

// TestBucketConfigErrors refuses the misuses of admit's algorithm and
// burst keys, naming the file, line, column and field.
func TestBucketConfigErrors(t *testing.T) {
	const rl = "descriptors[0].rate_limit."
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown algorithm", bucketFile("unit: second", "requests_per_unit: 1", "algorithm: leaky"),
			`f.yaml:7:18: ` + rl + `algorithm: "leaky": want fixed-window or token-bucket`},
		{"burst alone", bucketFile("unit: second", "requests_per_unit: 1", "burst: 5"),
			`f.yaml:7:14: ` + rl + `burst: only with algorithm: token-bucket`},
		{"burst of a fixed window", bucketFile("unit: second", "requests_per_unit: 1", "algorithm: fixed-window", "burst: 5"),
			`f.yaml:8:14: ` + rl + `burst: only with algorithm: token-bucket`},
		{"zero burst", bucketFile("unit: second", "requests_per_unit: 1", "algorithm: token-bucket", "burst: 0"),
			`f.yaml:8:14: ` + rl + `burst: "0": want a whole number from 1 to 4294967295`},
		{"negative burst", bucketFile("unit: second", "requests_per_unit: 1", "algorithm: token-bucket", "burst: -3"),
			`f.yaml:8:14: ` + rl + `burst: "-3": want a whole number from 1 to 4294967295`},
		{"burst in words", bucketFile("unit: second", "requests_per_unit: 1", "algorithm: token-bucket", "burst: many"),
			`f.yaml:8:14: ` + rl + `burst: "many": want a whole number from 1 to 4294967295`},
		{"fractional burst", bucketFile("unit: second", "requests_per_unit: 1", "algorithm: token-bucket", "burst: 1.5"),
			`f.yaml:8:14: ` + rl + `burst: 1.5 is a float`},
		{"unlimited bucket", bucketFile("unlimited: true", "algorithm: token-bucket"),
			`f.yaml:6:18: ` + rl + `algorithm: not with unlimited`},
		{"no refill", bucketFile("unit: second", "requests_per_unit: 0", "algorithm: token-bucket"),
			`f.yaml:6:26: ` + rl + `requests_per_unit: 0: a token bucket refills at least one token a unit`},
		{"no refill given", bucketFile("unit: second", "algorithm: token-bucket"),
			`f.yaml:6:18: ` + rl + `requests_per_unit: 0: a token bucket refills at least one token a unit`},
		{"faster than a token a microsecond", bucketFile("unit: second", "requests_per_unit: 1000001", "algorithm: token-bucket"),
			`f.yaml:6:26: ` + rl + `requests_per_unit: 1000001 a second is more than a token a microsecond, faster than the stores time a bucket exactly`},
		{"a year to fill", bucketFile("unit: year", "requests_per_unit: 10", "algorithm: token-bucket"),
			`f.yaml:5:13: ` + rl + `unit: a bucket of 10 refilled 10 a year fills in 365 days, past the 52.1 days (2^52ns) every store counts exactly`},
		{"a burst too deep", bucketFile("unit: day", "requests_per_unit: 1", "algorithm: token-bucket", "burst: 53"),
			`f.yaml:8:14: ` + rl + `burst: a bucket of 53 refilled 1 a day fills in 53 days, past the 52.1 days (2^52ns)`},
		{"algorithm beside the rate_limit", "domain: d\ndescriptors:\n  - key: a\n    algorithm: token-bucket\n",
			`f.yaml:4:5: descriptors[0].algorithm: "algorithm" belongs in a rate_limit`},
		{"burst in replaces", bucketFile("unit: second", "requests_per_unit: 1", "name: x", "replaces: [{name: y, burst: 1}]"),
			`f.yaml:8:28: ` + rl + `replaces[0].burst: "burst" belongs in a rate_limit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rls.Parse("f.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error holding %q", err, tc.want)
			}
		})
	}
}

// TestBucketConfigAccepts loads the spellings of the extension.
func TestBucketConfigAccepts(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"token bucket", bucketFile("unit: second", "requests_per_unit: 1", "algorithm: token-bucket")},
		{"a token a microsecond", bucketFile("unit: second", "requests_per_unit: 1000000", "algorithm: token-bucket")},
		{"with a burst", bucketFile("unit: minute", "requests_per_unit: 60", "algorithm: token-bucket", "burst: 1_000")},
		{"quoted", bucketFile("unit: second", "requests_per_unit: 1", `algorithm: "token-bucket"`)},
		{"fixed window said", bucketFile("unit: year", "requests_per_unit: 1", "algorithm: fixed-window")},
		{"a month to fill", bucketFile("unit: month", "requests_per_unit: 1000", "algorithm: token-bucket")},
		{"52 days to fill", bucketFile("unit: day", "requests_per_unit: 1", "algorithm: token-bucket", "burst: 52")},
		{"flow style", "domain: d\ndescriptors:\n  - {key: a, rate_limit: {unit: hour, requests_per_unit: 5, algorithm: token-bucket, burst: 9}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rls.Parse("f.yaml", []byte(tc.yaml)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBucketAlgorithmSpellings reads the algorithm as the proxy's config
// file reads it, quota's older spellings too, and dumps it in the file's
// spelling.
func TestBucketAlgorithmSpellings(t *testing.T) {
	for _, tc := range []struct{ spelled, dumped string }{
		{"token-bucket", " algorithm=token-bucket burst=9,"},
		{"gcra", " algorithm=token-bucket burst=9,"},
		{"fixed-window", ","},
		{"fixed_window", ","},
	} {
		t.Run(tc.spelled, func(t *testing.T) {
			burst := "burst: 9"
			if !strings.Contains(tc.dumped, "burst") {
				burst = "name: x"
			}
			cfg, err := rls.Parse("f.yaml", []byte(bucketFile("unit: hour", "requests_per_unit: 5", "algorithm: "+tc.spelled, burst)))
			if err != nil {
				t.Fatal(err)
			}
			if want := "d.a: unit=HOUR requests_per_unit=5" + tc.dumped; !strings.HasPrefix(cfg.Dump(), want) {
				t.Errorf("Dump: got %q, want it to start %q", cfg.Dump(), want)
			}
		})
	}
}

// bucketConfig has a fixed window (user) beside token buckets: client
// refills one token each 30 seconds and holds 2, burst one a second and
// holds 5.
const bucketConfig = `
domain: edge
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: token-bucket}
  - key: burst
    rate_limit: {unit: second, requests_per_unit: 1, algorithm: token-bucket, burst: 5}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: token-bucket}
  - key: quota
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: token-bucket}
`

func parseBuckets(t *testing.T) *rls.Config {
	t.Helper()
	cfg, err := rls.Parse("edge.yaml", []byte(bucketConfig))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// answer is what a step table checks of a descriptor's status.
type answer struct {
	code      pb.RateLimitResponse_Code
	remaining uint32
	reset     int64 // duration_until_reset, seconds
}

const (
	ok   = pb.RateLimitResponse_OK
	over = pb.RateLimitResponse_OVER_LIMIT
)

// bucketStep is one request of a step table: after advance, a descriptor
// with hits_addend hits (nil: the request's, 1) gets want.
type bucketStep struct {
	advance time.Duration
	hits    *wrapperspb.UInt64Value
	want    answer
}

// play sends d through steps on f, whose limiter reads clock.
func play(t *testing.T, f *fixture, clock *testclock.Clock, d *rlv3.RateLimitDescriptor, steps []bucketStep) {
	t.Helper()
	for i, s := range steps {
		clock.Advance(s.advance)
		d.HitsAddend = s.hits
		resp := f.decide(t, req("edge", d))
		st := resp.GetStatuses()[0]
		got := answer{st.GetCode(), st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds()}
		if got != s.want || resp.GetOverallCode() != s.want.code {
			t.Fatalf("step %d (+%v, hits_addend %v): got %+v overall %v, want %+v", i, s.advance, s.hits, got, resp.GetOverallCode(), s.want)
		}
	}
}

// refillSteps are client's bucket (2 a minute, holding 2) over time.
var refillSteps = []bucketStep{
	{0, nil, answer{ok, 1, 30}},
	{0, nil, answer{ok, 0, 60}},
	{0, nil, answer{over, 0, 60}},                // refused, and nothing spent
	{10 * time.Second, nil, answer{over, 0, 50}}, // a third of a token back
	{20 * time.Second, nil, answer{ok, 0, 60}},   // a whole token back, spent
	{45 * time.Second, nil, answer{ok, 0, 45}},   // one and a half back: one spent
	{2 * time.Minute, nil, answer{ok, 1, 30}},    // idle: full, never more than 2
}

// TestBucketRefill refills client's bucket over the injected clock.
func TestBucketRefill(t *testing.T) {
	f := newFixture(t, rls.Options{Config: parseBuckets(t)})
	play(t, f, f.clock, desc("client", "ann"), refillSteps)
	// Another value has a bucket of its own.
	play(t, f, f.clock, desc("client", "bob"), refillSteps[:1])
}

// TestBucketBurst spends a burst at once, then one token a second.
func TestBucketBurst(t *testing.T) {
	f := newFixture(t, rls.Options{Config: parseBuckets(t)})
	play(t, f, f.clock, desc("burst", "ann"), []bucketStep{
		{0, nil, answer{ok, 4, 1}},
		{0, nil, answer{ok, 3, 2}},
		{0, nil, answer{ok, 2, 3}},
		{0, nil, answer{ok, 1, 4}},
		{0, nil, answer{ok, 0, 5}},
		{0, nil, answer{over, 0, 5}},
		{2 * time.Second, nil, answer{ok, 1, 4}},
		{0, nil, answer{ok, 0, 5}},
		{0, nil, answer{over, 0, 5}},
		{1500 * time.Millisecond, nil, answer{ok, 0, 5}}, // 4.5s to full, rounded up
		{time.Hour, nil, answer{ok, 4, 1}},               // never more than the burst
	})
}

// TestBucketHitsAddend spends hits_addend tokens at once, refuses a cost
// the bucket cannot pay without spending any, and lets a look through.
func TestBucketHitsAddend(t *testing.T) {
	f := newFixture(t, rls.Options{Config: parseBuckets(t)})
	play(t, f, f.clock, desc("burst", "ann"), []bucketStep{
		{0, wrapperspb.UInt64(3), answer{ok, 2, 3}},
		{0, wrapperspb.UInt64(3), answer{over, 2, 3}}, // two tokens left, none spent
		{0, wrapperspb.UInt64(2), answer{ok, 0, 5}},
		{0, wrapperspb.UInt64(0), answer{ok, 0, 5}},                 // a look costs nothing, so it always fits
		{5 * time.Second, wrapperspb.UInt64(6), answer{over, 5, 0}}, // past the burst: never passes
		{0, wrapperspb.UInt64(5), answer{ok, 0, 5}},
		{0, wrapperspb.UInt64(1 << 63), answer{over, 0, 5}},
	})
	if got := f.sum(t, "admit.rls.refused", "admit.rls.reason", "hits_clamped"); got != 1 {
		t.Fatalf("hits_clamped = %d, want 1", got)
	}
	r := req("edge", desc("burst", "bob"))
	r.HitsAddend = 4
	if st := f.decide(t, r).GetStatuses()[0]; st.GetCode() != ok || st.GetLimitRemaining() != 1 {
		t.Fatalf("the request's hits_addend 4 of 5: got %v, want OK with 1 remaining", st)
	}
	// A descriptor's own limit keeps the fixed window, counted apart.
	own := desc("burst", "bob")
	own.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
	toHour := 3600 - f.clock.Now().Unix()%3600
	for i, want := range []answer{{ok, 0, toHour}, {over, 0, toHour}} {
		st := f.decide(t, req("edge", own)).GetStatuses()[0]
		if got := (answer{st.GetCode(), st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds()}); got != want {
			t.Fatalf("own limit, request %d: got %+v, want %+v (the hour's window)", i, got, want)
		}
	}
}

// TestBucketShadowAndQuota applies shadow and quota mode, a rule's and the
// service's, to token buckets as to windows.
func TestBucketShadowAndQuota(t *testing.T) {
	f := newFixture(t, rls.Options{Config: parseBuckets(t)})
	play(t, f, f.clock, desc("shadow", "ann"), []bucketStep{
		{0, nil, answer{ok, 0, 3600}},
		{0, nil, answer{ok, 0, 3600}}, // refused, let through
	})
	if got := f.sum(t, "admit.rls.hits", "admit.rls.outcome", "shadow_mode"); got != 1 {
		t.Fatalf("shadow_mode hits = %d, want 1", got)
	}
	quotaDesc := desc("quota", "ann")
	f.decide(t, req("edge", quotaDesc))
	if st := f.decide(t, req("edge", quotaDesc)).GetStatuses()[0]; st.GetCode() != ok || st.GetDurationUntilReset() != nil {
		t.Fatalf("quota_mode past the bucket: got %v, want OK without duration_until_reset", st)
	}

	for _, tc := range []struct {
		name    string
		o       rls.Options
		status  pb.RateLimitResponse_Code
		overall pb.RateLimitResponse_Code
		reset   bool
	}{
		{"shadow", rls.Options{ShadowMode: true}, over, ok, true},
		{"quota", rls.Options{QuotaMode: true}, ok, ok, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Config = parseBuckets(t)
			f := newFixture(t, tc.o)
			f.decide(t, req("edge", desc("client", "ann")))
			f.decide(t, req("edge", desc("client", "ann")))
			resp := f.decide(t, req("edge", desc("client", "ann")))
			st := resp.GetStatuses()[0]
			if st.GetCode() != tc.status || resp.GetOverallCode() != tc.overall || (st.GetDurationUntilReset() != nil) != tc.reset {
				t.Fatalf("past the bucket: got %v overall %v, want %v overall %v", st, resp.GetOverallCode(), tc.status, tc.overall)
			}
		})
	}
}

// failingLimiter is a limiter whose store is down.
type failingLimiter struct{}

func (failingLimiter) Allow(context.Context, quota.Rule, string) (quota.Decision, error) {
	return quota.Decision{}, errors.New("connection refused")
}

func (failingLimiter) AllowN(context.Context, quota.Rule, string, int) (quota.Decision, error) {
	return quota.Decision{}, errors.New("connection refused")
}

func (failingLimiter) Refund(context.Context, quota.Rule, string, int) error {
	return errors.New("connection refused")
}

// refusingLimiter refuses every rule, as a store does a rule it cannot
// enforce.
type refusingLimiter struct{ failingLimiter }

func (refusingLimiter) AllowN(_ context.Context, r quota.Rule, _ string, _ int) (quota.Decision, error) {
	return quota.Decision{}, fmt.Errorf("%w %q: too wide for this store", quota.ErrRule, r.Name)
}

// checkingLimiter refuses every rule before any call, as a store's
// CheckRule does a rule it cannot enforce.
type checkingLimiter struct{ refusingLimiter }

func (checkingLimiter) CheckRule(r quota.Rule) error {
	return fmt.Errorf("%w %q: too wide for this store", quota.ErrRule, r.Name)
}

// TestBucketRuleCheckedAtLoad refuses a configuration whose token bucket
// the limiter says it cannot enforce, at New and at a reload, which keeps
// the configuration in force.
func TestBucketRuleCheckedAtLoad(t *testing.T) {
	if _, err := rls.New(rls.Options{Config: parseBuckets(t), Limiter: checkingLimiter{}}); err == nil || !strings.Contains(err.Error(), "the store cannot enforce this token bucket") {
		t.Fatalf("New: got %v, want the bucket refused", err)
	}
	svc, err := rls.New(rls.Options{Limiter: checkingLimiter{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Reload(parseBuckets(t)); err == nil {
		t.Fatal("Reload: got no error, want the bucket refused")
	}
	if got := svc.Config().Domains(); len(got) != 0 {
		t.Errorf("after a refused reload: domains %v, want the configuration before it (none)", got)
	}
}

// TestBucketRuleRefusedIsNoOutage answers OVER_LIMIT when the limiter
// refuses a rule, under every failure policy: neither an open or local
// policy nor an error Envoy may admit on lets a request past a
// configuration the store cannot enforce. It is counted as a store
// failure.
func TestBucketRuleRefusedIsNoOutage(t *testing.T) {
	for _, failure := range []rls.Failure{rls.FailError, rls.FailClosed, rls.FailOpen, rls.FailLocal} {
		f := newFixture(t, rls.Options{Config: parseBuckets(t), Limiter: refusingLimiter{}, Failure: failure})
		resp, err := f.svc.ShouldRateLimit(context.Background(), req("edge", desc("client", "ann")))
		if err != nil || resp.GetOverallCode() != over {
			t.Errorf("%v: got %v, %v; want OVER_LIMIT", failure, resp.GetOverallCode(), err)
		}
		if got := f.sum(t, "admit.rls.store_failures", "admit.rls.policy", failure.String()); got != 1 {
			t.Errorf("%v: store_failures = %d, want 1", failure, got)
		}
	}
}

// TestBucketFailurePolicies decides a token bucket with a limiter that
// fails, under each policy.
func TestBucketFailurePolicies(t *testing.T) {
	for _, tc := range []struct {
		failure rls.Failure
		code    connect.Code // 0: answered
		want    answer
	}{
		{rls.FailError, connect.CodeUnavailable, answer{}},
		{rls.FailClosed, 0, answer{over, 0, 60}},
		{rls.FailOpen, 0, answer{ok, 2, 0}},
		{rls.FailLocal, 0, answer{ok, 1, 30}},
	} {
		t.Run(tc.failure.String(), func(t *testing.T) {
			f := newFixture(t, rls.Options{Config: parseBuckets(t), Counter: failing{}, Limiter: failingLimiter{}, Failure: tc.failure})
			resp, err := f.svc.ShouldRateLimit(context.Background(), req("edge", desc("client", "ann")))
			if tc.code != 0 {
				if connect.CodeOf(err) != tc.code {
					t.Fatalf("got %v, want %v", err, tc.code)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				st := resp.GetStatuses()[0]
				if got := (answer{st.GetCode(), st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds()}); got != tc.want {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
			if got := f.sum(t, "admit.rls.store_failures", "admit.rls.policy", tc.failure.String()); got != 1 {
				t.Fatalf("store_failures{%s} = %d, want 1", tc.failure, got)
			}
			// A request the counter and the limiter both fail is one failure.
			f.svc.ShouldRateLimit(context.Background(), req("edge", desc("user", "ann"), desc("client", "ann"), desc("burst", "ann")))
			if got := f.sum(t, "admit.rls.store_failures", "admit.rls.policy", tc.failure.String()); got != 2 {
				t.Fatalf("store_failures{%s} after a request of both = %d, want 2", tc.failure, got)
			}
		})
	}
}

// TestBucketBesideFixedWindow: a fixed window's answers are the same
// whether token buckets share its file and its requests or not.
func TestBucketBesideFixedWindow(t *testing.T) {
	plain, err := rls.Parse("edge.yaml", []byte("domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	alone := newFixture(t, rls.Options{Config: plain, Headers: rls.DefaultHeaders})
	beside := newFixture(t, rls.Options{Config: parseBuckets(t), Headers: rls.DefaultHeaders})
	for i := range 8 {
		alone.clock.Advance(20 * time.Second)
		beside.clock.Advance(20 * time.Second)
		want := alone.decide(t, req("edge", desc("user", "ann")))
		if got := beside.decide(t, req("edge", desc("user", "ann"))); !proto.Equal(got, want) {
			t.Fatalf("request %d: got %v, want %v", i, got, want)
		}
		both := beside.decide(t, req("edge", desc("client", "ann"), desc("user", "bob")))
		solo := alone.decide(t, req("edge", desc("user", "bob")))
		if !proto.Equal(both.GetStatuses()[1], solo.GetStatuses()[0]) {
			t.Fatalf("request %d beside a bucket: got %v, want %v", i, both.GetStatuses()[1], solo.GetStatuses()[0])
		}
	}
}

// TestBucketHeaders describes a token bucket in the limit headers: its
// tokens left and the seconds until it is full.
func TestBucketHeaders(t *testing.T) {
	f := newFixture(t, rls.Options{Config: parseBuckets(t), Headers: rls.DefaultHeaders})
	d := desc("burst", "ann")
	d.HitsAddend = wrapperspb.UInt64(3)
	wantHeaders(t, f.decide(t, req("edge", d)), map[string]string{"RateLimit-Limit": "1", "RateLimit-Remaining": "2", "RateLimit-Reset": "3"})
}

// TestBucketMetrics counts a bucket's hits against its burst: the tokens
// spent within, those spent past 80% of it near, a refused cost whole
// over, as none of it was spent.
func TestBucketMetrics(t *testing.T) {
	f := newFixture(t, rls.Options{Config: parseBuckets(t)})
	for range 6 {
		f.decide(t, req("edge", desc("burst", "ann")))
	}
	three := desc("burst", "bob")
	three.HitsAddend = wrapperspb.UInt64(3)
	f.decide(t, req("edge", three))
	f.decide(t, req("edge", three)) // refused with two tokens left
	for outcome, want := range map[string]int64{"total_hits": 12, "within_limit": 8, "over_limit": 4, "near_limit": 1, "shadow_mode": 0} {
		if got := f.sum(t, "admit.rls.hits", "admit.rls.outcome", outcome); got != want {
			t.Errorf("admit.rls.hits{%s} = %d, want %d", outcome, got, want)
		}
	}
}
