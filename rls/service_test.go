package rls_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/rls"
)

const testConfig = `
domain: edge
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /admin/*
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: plan
    value: free
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: tenant
    detailed_metric: true
    rate_limit: {unit: day, requests_per_unit: 100}
`

// fixture is a service on a memory counter and a memory limiter with an
// injected clock, and a manual metric reader.
type fixture struct {
	svc    *rls.Service
	clock  *testclock.Clock
	reader *sdkmetric.ManualReader
}

func newFixture(t *testing.T, o rls.Options) *fixture {
	t.Helper()
	return newFixtureOn(t, testclock.New(time.Unix(1_699_999_990, 0)), o)
}

// newFixtureOn is newFixture on clock, for a limiter the test made with it.
func newFixtureOn(t *testing.T, clock *testclock.Clock, o rls.Options) *fixture {
	t.Helper()
	f := &fixture{clock: clock, reader: sdkmetric.NewManualReader()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	if o.Config == nil {
		cfg, err := rls.Parse("edge.yaml", []byte(testConfig))
		if err != nil {
			t.Fatal(err)
		}
		o.Config = cfg
	}
	if o.Counter == nil {
		c, err := memquota.NewCounter(memquota.CounterConfig{Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		o.Counter = c
	}
	if o.Limiter == nil {
		l, err := memquota.New(memquota.Config{Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		o.Limiter = l
	}
	o.MeterProvider = mp
	svc, err := rls.New(o)
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return f
}

// sum returns the value of the counter name with the attribute key=value.
func (f *fixture) sum(t *testing.T, name, key, value string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, ok := dp.Attributes.Value(attribute.Key(key)); ok && v.AsString() == value {
					total += dp.Value
				}
			}
		}
	}
	return total
}

func req(domain string, descs ...*rlv3.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, Descriptors: descs}
}

func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func (f *fixture) decide(t *testing.T, r *pb.RateLimitRequest) *pb.RateLimitResponse {
	t.Helper()
	resp, err := f.svc.ShouldRateLimit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDecisions steps through one window of a limit and the next.
func TestDecisions(t *testing.T) {
	f := newFixture(t, rls.Options{})
	type want struct {
		code      pb.RateLimitResponse_Code
		remaining uint32
		reset     int64
	}
	for i, step := range []struct {
		advance time.Duration
		r       *pb.RateLimitRequest
		want    want
	}{
		{0, req("edge", desc("user", "ann")), want{pb.RateLimitResponse_OK, 1, 50}},
		{0, req("edge", desc("user", "ann")), want{pb.RateLimitResponse_OK, 0, 50}},
		{time.Second, req("edge", desc("user", "ann")), want{pb.RateLimitResponse_OVER_LIMIT, 0, 49}},
		{0, req("edge", desc("user", "bob")), want{pb.RateLimitResponse_OK, 1, 49}},
		// The next minute starts afresh: windows align to the minute.
		{49 * time.Second, req("edge", desc("user", "ann")), want{pb.RateLimitResponse_OK, 1, 60}},
		{0, req("edge", desc("path", "/admin/x")), want{pb.RateLimitResponse_OK, 0, 1}},
		{0, req("edge", desc("path", "/admin/x")), want{pb.RateLimitResponse_OVER_LIMIT, 0, 1}},
		// Without share_threshold, each value a wildcard matches counts
		// on its own.
		{0, req("edge", desc("path", "/admin/y")), want{pb.RateLimitResponse_OK, 0, 1}},
		{0, req("edge", desc("plan", "free")), want{pb.RateLimitResponse_OK, 0, 2760}},
		// A shadow_mode rule says OK past its limit.
		{0, req("edge", desc("plan", "free")), want{pb.RateLimitResponse_OK, 0, 2760}},
	} {
		f.clock.Advance(step.advance)
		resp := f.decide(t, step.r)
		st := resp.GetStatuses()[0]
		got := want{st.GetCode(), st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds()}
		if got != step.want || resp.GetOverallCode() != step.want.code {
			t.Fatalf("step %d: got %+v overall %v, want %+v", i, got, resp.GetOverallCode(), step.want)
		}
	}
	if got := f.sum(t, "admit.rls.hits", "admit.rls.limit", "edge.user"); got == 0 {
		t.Fatalf("admit.rls.hits for edge.user is 0")
	}
}

// TestHitsAddend counts a request's hits_addend, a descriptor's own
// (0 only looks), and a descriptor's own limit.
func TestHitsAddend(t *testing.T) {
	f := newFixture(t, rls.Options{})
	r := req("edge", desc("user", "ann"))
	r.HitsAddend = 2
	if st := f.decide(t, r).GetStatuses()[0]; st.GetCode() != pb.RateLimitResponse_OK || st.GetLimitRemaining() != 0 {
		t.Fatalf("hits_addend 2 of 2: got %v", st)
	}
	look := desc("user", "ann")
	look.HitsAddend = wrapperspb.UInt64(0)
	if st := f.decide(t, req("edge", look)).GetStatuses()[0]; st.GetCode() != pb.RateLimitResponse_OK {
		t.Fatalf("a look at a full window: got %v, want OK (the count is not past the limit)", st)
	}
	own := desc("anything", "x")
	own.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
	if st := f.decide(t, req("edge", own)).GetStatuses()[0]; st.GetCurrentLimit().GetUnit() != pb.RateLimitResponse_RateLimit_HOUR || st.GetLimitRemaining() != 0 {
		t.Fatalf("descriptor's own limit: got %v", st)
	}
	if st := f.decide(t, req("elsewhere", own)).GetStatuses()[0]; st.GetCurrentLimit() != nil {
		t.Fatalf("own limit in an unknown domain: got %v, want no limit", st)
	}
}

// TestBoundedInput sends what no Envoy sends and wants a defined answer
// and a counted reason, with nothing counted against a limit.
func TestBoundedInput(t *testing.T) {
	f := newFixture(t, rls.Options{})
	many := req("edge")
	for range rls.MaxDescriptors + 1 {
		many.Descriptors = append(many.Descriptors, desc("user", "ann"))
	}
	deep := desc()
	for range rls.MaxEntries + 1 {
		deep.Entries = append(deep.Entries, &rlv3.RateLimitDescriptor_Entry{Key: "k", Value: "v"})
	}
	badUnit := desc("user", "ann")
	badUnit.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_UNKNOWN}
	for _, tc := range []struct {
		name, reason string
		r            *pb.RateLimitRequest
	}{
		{"empty domain", "empty_domain", req("", desc("user", "ann"))},
		{"no descriptors", "no_descriptors", req("edge")},
		{"too many descriptors", "too_many_descriptors", many},
		{"too many entries", "too_many_entries", req("edge", deep)},
		{"huge key", "key_too_long", req("edge", desc(strings.Repeat("k", rls.MaxKeyBytes+1), "v"))},
		{"huge value", "value_too_long", req("edge", desc("user", strings.Repeat("v", rls.MaxValueBytes+1)))},
		{"unknown unit", "bad_limit_unit", req("edge", badUnit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.ShouldRateLimit(context.Background(), tc.r)
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("got %v, want INVALID_ARGUMENT", err)
			}
			if got := f.sum(t, "admit.rls.refused", "admit.rls.reason", tc.reason); got != 1 {
				t.Fatalf("admit.rls.refused{%s} = %d, want 1", tc.reason, got)
			}
		})
	}
	if st := f.decide(t, req("edge", desc("user", "ann"))).GetStatuses()[0]; st.GetLimitRemaining() != 1 {
		t.Fatalf("after the refused requests: remaining %d, want 1 (none was counted)", st.GetLimitRemaining())
	}
	// A value at the bound is decided, by its hash.
	if st := f.decide(t, req("edge", desc("user", strings.Repeat("v", rls.MaxValueBytes)))).GetStatuses()[0]; st.GetLimitRemaining() != 1 {
		t.Fatalf("long value: got %v", st)
	}
	// A hits_addend past every limit spends the window rather than fail
	// (an error lets Envoy admit by default).
	huge := desc("user", "cat")
	huge.HitsAddend = wrapperspb.UInt64(1 << 63)
	if st := f.decide(t, req("edge", huge)).GetStatuses()[0]; st.GetCode() != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("hits_addend 2^63: got %v, want OVER_LIMIT", st)
	}
	if got := f.sum(t, "admit.rls.refused", "admit.rls.reason", "hits_clamped"); got != 1 {
		t.Fatalf("hits_clamped = %d, want 1", got)
	}
	if st := f.decide(t, req("nowhere", desc("user", "ann"))).GetStatuses()[0]; st.GetCode() != pb.RateLimitResponse_OK || st.GetCurrentLimit() != nil {
		t.Fatalf("unknown domain: got %v, want OK without a limit", st)
	}
	if got := f.sum(t, "admit.rls.refused", "admit.rls.reason", "unknown_domain"); got != 1 {
		t.Fatalf("unknown_domain = %d, want 1", got)
	}
}

// TestMetricCardinality sends more detailed_metric values than
// MaxMetricLimits and wants the series bounded.
func TestMetricCardinality(t *testing.T) {
	f := newFixture(t, rls.Options{})
	for i := range rls.MaxMetricLimits + 500 {
		f.decide(t, req("edge", desc("tenant", "t"+time.Duration(i).String())))
	}
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	limits := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "admit.rls.hits" {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					v, _ := dp.Attributes.Value("admit.rls.limit")
					limits[v.AsString()] = true
				}
			}
		}
	}
	if len(limits) > rls.MaxMetricLimits+1 || !limits["edge.tenant"] {
		t.Fatalf("%d limits named in admit.rls.hits, want at most %d, the file's name among them", len(limits), rls.MaxMetricLimits+1)
	}
}

// failing is a counter whose store is down.
type failing struct{}

func (failing) Count(context.Context, []rls.Hit) (time.Time, error) {
	return time.Time{}, errors.New("connection refused")
}

// TestFailurePolicies decides with a counter that fails, under each policy.
func TestFailurePolicies(t *testing.T) {
	for _, tc := range []struct {
		failure   rls.Failure
		code      connect.Code // 0: answered
		status    pb.RateLimitResponse_Code
		remaining uint32
	}{
		{rls.FailError, connect.CodeUnavailable, 0, 0},
		{rls.FailClosed, 0, pb.RateLimitResponse_OVER_LIMIT, 0},
		{rls.FailOpen, 0, pb.RateLimitResponse_OK, 2},
		{rls.FailLocal, 0, pb.RateLimitResponse_OK, 1},
	} {
		t.Run(tc.failure.String(), func(t *testing.T) {
			f := newFixture(t, rls.Options{Counter: failing{}, Failure: tc.failure})
			resp, err := f.svc.ShouldRateLimit(context.Background(), req("edge", desc("user", "ann")))
			if tc.code != 0 {
				if connect.CodeOf(err) != tc.code {
					t.Fatalf("got %v, want %v", err, tc.code)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				st := resp.GetStatuses()[0]
				if st.GetCode() != tc.status || st.GetLimitRemaining() != tc.remaining {
					t.Fatalf("got %v, want %v with %d remaining", st, tc.status, tc.remaining)
				}
			}
			if got := f.sum(t, "admit.rls.store_failures", "admit.rls.policy", tc.failure.String()); got != 1 {
				t.Fatalf("store_failures{%s} = %d, want 1", tc.failure, got)
			}
			// A request that limits nothing needs no counter.
			if _, err := f.svc.ShouldRateLimit(context.Background(), req("edge", desc("none", "x"))); err != nil {
				t.Fatalf("unlimited request with the store down: %v", err)
			}
		})
	}
}

// TestReload keeps counts across a reload that keeps a limit, and keeps the
// old configuration when the new one is refused.
func TestReload(t *testing.T) {
	f := newFixture(t, rls.Options{})
	f.decide(t, req("edge", desc("user", "ann")))
	dir := t.TempDir()
	write(t, dir+"/edge.yaml", testConfig+"  - key: extra\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	if err := f.svc.LoadFile(dir); err != nil {
		t.Fatal(err)
	}
	if st := f.decide(t, req("edge", desc("user", "ann"))).GetStatuses()[0]; st.GetLimitRemaining() != 0 {
		t.Fatalf("after reload: remaining %d, want 0 (the count carried over)", st.GetLimitRemaining())
	}
	write(t, dir+"/edge.yaml", "domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight}\n")
	if err := f.svc.LoadFile(dir); err == nil || !strings.Contains(err.Error(), "edge.yaml:4:") {
		t.Fatalf("got %v, want the bad unit's place", err)
	}
	if st := f.decide(t, req("edge", desc("extra", "x"))).GetStatuses()[0]; st.GetCurrentLimit() == nil {
		t.Fatalf("after a refused reload the previous configuration is gone: %v", st)
	}
	if got := f.sum(t, "admit.rls.config_loads", "admit.rls.result", "failed"); got != 1 {
		t.Fatalf("config_loads{failed} = %d, want 1", got)
	}
	// The configuration New was given counts, as envoyproxy/ratelimit's
	// config_load_success counts its first load.
	if got := f.sum(t, "admit.rls.config_loads", "admit.rls.result", "loaded"); got != 2 {
		t.Fatalf("config_loads{loaded} = %d, want 2: the first and the reload", got)
	}
}

// TestHeaders adds the limit headers of the descriptor closest to its limit.
func TestHeaders(t *testing.T) {
	f := newFixture(t, rls.Options{Headers: rls.DefaultHeaders})
	resp := f.decide(t, req("edge", desc("tenant", "a"), desc("user", "ann")))
	wantHeaders(t, resp, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "1", "RateLimit-Reset": "50"})
}

// wantHeaders checks that resp asks Envoy to add each header of want.
func wantHeaders(t *testing.T, resp *pb.RateLimitResponse, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, h := range resp.GetResponseHeadersToAdd() {
		got[h.GetKey()] = h.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("headers %v, want %v", got, want)
		}
	}
}

// TestCountersDoNotCollide: a value holding the reference's "_" joints
// cannot name another descriptor's counter, so a client who chooses a
// header value cannot spend another user's budget.
func TestCountersDoNotCollide(t *testing.T) {
	cfg, err := rls.Parse("edge.yaml", []byte(`
domain: edge
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100}
    descriptors:
      - key: path
        rate_limit: {unit: minute, requests_per_unit: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, rls.Options{Config: cfg})
	for range 6 {
		f.decide(t, req("edge", desc("user", "bob_path_/login")))
	}
	if code := f.decide(t, req("edge", desc("user", "bob", "path", "/login"))).GetOverallCode(); code != pb.RateLimitResponse_OK {
		t.Errorf("bob's first /login after another user's six: %v, want OK", code)
	}
}

// TestLongMetricNamesAreCut: a detailed_metric name that holds a long
// request value is cut to a bounded length, distinct values staying
// distinct.
func TestLongMetricNamesAreCut(t *testing.T) {
	f := newFixture(t, rls.Options{})
	for _, v := range []string{strings.Repeat("a", 60000), strings.Repeat("a", 59999) + "b"} {
		f.decide(t, req("edge", desc("tenant", v)))
	}
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "admit.rls.hits" {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					v, _ := dp.Attributes.Value("admit.rls.limit")
					if len(v.AsString()) > 128 {
						t.Errorf("a limit named with %d bytes, want at most 128", len(v.AsString()))
					}
					names[v.AsString()] = true
				}
			}
		}
	}
	if len(names) != 2 {
		t.Errorf("%d names for two long values, want 2: %v", len(names), names)
	}
}
