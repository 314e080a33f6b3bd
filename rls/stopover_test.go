package rls_test

import (
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/rls"
)

// multiStep is one request of several descriptors in a step table: after
// advance, the descriptors of r get want, in order, and the request
// overall.
type multiStep struct {
	advance time.Duration
	r       func() *pb.RateLimitRequest
	want    []answer
	overall pb.RateLimitResponse_Code
}

// playMulti sends steps to f.
func playMulti(t *testing.T, f *fixture, steps []multiStep) {
	t.Helper()
	for i, s := range steps {
		f.clock.Advance(s.advance)
		resp := f.decide(t, s.r())
		if resp.GetOverallCode() != s.overall || len(resp.GetStatuses()) != len(s.want) {
			t.Fatalf("step %d: got overall %v with %d statuses, want %v with %d", i, resp.GetOverallCode(), len(resp.GetStatuses()), s.overall, len(s.want))
		}
		for j, st := range resp.GetStatuses() {
			got := answer{st.GetCode(), st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds()}
			if got != s.want[j] {
				t.Fatalf("step %d, descriptor %d: got %+v, want %+v", i, j, got, s.want[j])
			}
		}
	}
}

// userAndTenant is a request of user ann (2 a minute) and tenant t (100 a
// day), 50 seconds before the minute ends.
func userAndTenant() *pb.RateLimitRequest {
	return req("edge", desc("user", "ann"), desc("tenant", "t"))
}

func tenantOnly() *pb.RateLimitRequest { return req("edge", desc("tenant", "t")) }

// resetDay is tenant's duration_until_reset at the fixture's start, and
// after a second.
const resetDay = 86400 - 1_699_999_990%86400

// TestStopIncrementOverLimit counts, when a descriptor of a request would
// pass its limit, only the descriptors that would, as
// envoyproxy/ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: the
// request refused by user's limit leaves tenant's count as it was, and
// tenant's status is its count without the request.
func TestStopIncrementOverLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop bool
		// tenantAfter is tenant's limit_remaining on the request refused
		// by user, and on the next one of tenant alone.
		refused, next uint32
	}{
		{"off", false, 97, 96},
		{"on", true, 98, 97},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, rls.Options{StopIncrementOverLimit: tc.stop})
			playMulti(t, f, []multiStep{
				{0, userAndTenant, []answer{{ok, 1, 50}, {ok, 99, resetDay}}, ok},
				{0, userAndTenant, []answer{{ok, 0, 50}, {ok, 98, resetDay}}, ok},
				{0, userAndTenant, []answer{{over, 0, 50}, {ok, tc.refused, resetDay}}, over},
				{0, tenantOnly, []answer{{ok, tc.next, resetDay}}, ok},
			})
		})
	}
}

// TestStopIncrementStillCountsTheOverLimit counts the descriptor that
// passes its limit, as the reference does: what stops is the counting of
// the request's other descriptors, not of the one over its limit. A look
// (hits_addend 0) at a full window passes nothing.
func TestStopIncrementStillCountsTheOverLimit(t *testing.T) {
	clock := testclock.New(time.Unix(1_699_999_990, 0))
	c := &watched{Counter: memCounter(t, clock)}
	f := newFixtureOn(t, clock, rls.Options{StopIncrementOverLimit: true, Counter: c})
	user := func() *pb.RateLimitRequest { return req("edge", desc("user", "ann")) }
	look := func() *pb.RateLimitRequest {
		d := desc("user", "ann")
		d.HitsAddend = wrapperspb.UInt64(0)
		return req("edge", d, desc("tenant", "t"))
	}
	playMulti(t, f, []multiStep{
		{0, user, []answer{{ok, 1, 50}}, ok},
		{0, user, []answer{{ok, 0, 50}}, ok},
		{0, look, []answer{{ok, 0, 50}, {ok, 99, resetDay}}, ok},
		{0, user, []answer{{over, 0, 50}}, over},
	})
	// Each request reads, then counts: two calls.
	if got := c.asked.Load(); got != 8 {
		t.Fatalf("the counter was asked %d times, want 8 (a read and a count per request)", got)
	}
	if got := f.sum(t, "admit.rls.hits", "admit.rls.outcome", "over_limit"); got != 1 {
		t.Fatalf("over_limit hits: got %d, want 1", got)
	}
}

// TestStopIncrementShadowAndQuota lets a request through that a
// shadow_mode rule found over its limit, without counting its other
// descriptors, as the reference does: a shadow or quota mode rule past
// its limit spends nothing of the request's other limits.
func TestStopIncrementShadowAndQuota(t *testing.T) {
	f := newFixture(t, rls.Options{StopIncrementOverLimit: true})
	planAndTenant := func() *pb.RateLimitRequest { return req("edge", desc("plan", "free"), desc("tenant", "t")) }
	const resetHour = 3600 - 1_699_999_990%3600
	playMulti(t, f, []multiStep{
		{0, planAndTenant, []answer{{ok, 0, resetHour}, {ok, 99, resetDay}}, ok},
		{0, planAndTenant, []answer{{ok, 0, resetHour}, {ok, 99, resetDay}}, ok},
		{0, tenantOnly, []answer{{ok, 98, resetDay}}, ok},
	})
}

// memCounter is a memory counter on clock.
func memCounter(t *testing.T, clock *testclock.Clock) rls.Counter {
	t.Helper()
	c, err := memquota.NewCounter(memquota.CounterConfig{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
