package asyncquota_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/asyncquota"
	"github.com/admitgo/admit/quota/memquota"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// flaky is a store that counts the calls it decides and fails while down,
// by its failure policy, as a store whose server is unreachable would.
type flaky struct {
	*memquota.Memory
	down    atomic.Bool
	decided atomic.Int64
}

var errDown = errors.New("store down")

func newFlaky(t *testing.T, clk *testclock.Clock) *flaky {
	t.Helper()
	m, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &flaky{Memory: m}
}

func (f *flaky) AllowN(ctx context.Context, rule quota.Rule, subject string, n int) (quota.Decision, error) {
	f.decided.Add(1)
	if f.down.Load() {
		return quota.FailClosed.Fail(rule, errDown)
	}
	return f.Memory.AllowN(ctx, rule, subject, n)
}

func (f *flaky) Allow(ctx context.Context, rule quota.Rule, subject string) (quota.Decision, error) {
	return f.AllowN(ctx, rule, subject, 1)
}

func (f *flaky) Reconcile(ctx context.Context, tallies []quota.Tally) error {
	if f.down.Load() {
		return errDown
	}
	return f.Memory.Reconcile(ctx, tallies)
}

func reconcile(t *testing.T, c *asyncquota.Charger) {
	t.Helper()
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	m, _ := memquota.New(memquota.Config{})
	for _, tt := range []struct {
		name string
		s    quota.Reconciler
		cfg  asyncquota.Config
		want string // in the error; "" when valid
	}{
		{"zero config", m, asyncquota.Config{}, ""},
		{"nil store", nil, asyncquota.Config{}, "nil store"},
		{"negative interval", m, asyncquota.Config{Interval: -time.Second}, "Interval -1s"},
		{"negative max keys", m, asyncquota.Config{MaxKeys: -1}, "MaxKeys -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := asyncquota.New(tt.s, tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("New: got %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, asyncquota.ErrConfig) || !strings.Contains(fmt.Sprint(err), tt.want)):
				t.Errorf("New: got %v, want %v naming %q", err, asyncquota.ErrConfig, tt.want)
			}
		})
	}
}

// TestFirstCallsGoToTheStore wants a bucket decided by the store until a
// reconcile has loaded it, and locally afterwards, with the same answers an
// exact store gives one replica.
func TestFirstCallsGoToTheStore(t *testing.T) {
	clk := testclock.New(t0)
	s := newFlaky(t, clk)
	c := newCharger(t, s, asyncquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "r", Limit: 5, Window: time.Minute, Algorithm: quota.TokenBucket}
	subject := quota.Subject("a")
	for range 2 {
		allowed(t, c, rule, subject)
	}
	if got := s.decided.Load(); got != 2 {
		t.Fatalf("before a reconcile: the store decided %d calls, want 2", got)
	}
	reconcile(t, c)
	for i := range 5 {
		d, err := c.Allow(context.Background(), rule, subject)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 3; d.Allowed != want || d.Remaining != max(0, 2-i) {
			t.Errorf("local call %d: got %+v, want allowed %v with %d remaining", i, d, want, max(0, 2-i))
		}
	}
	if got := s.decided.Load(); got != 2 {
		t.Errorf("after a reconcile: the store decided %d calls, want still 2", got)
	}
	reconcile(t, c)
	if d, _ := s.Memory.AllowN(context.Background(), rule, subject, 0); d.Allowed || d.Remaining != 0 {
		t.Errorf("the store after the second reconcile: got %+v, want the bucket spent", d)
	}
}

// TestFloodStaysBounded floods a replica with more subjects than it may
// track: it must track no more than MaxKeys, decide every untracked
// subject's calls at the store, and never forget a bucket with admissions
// the store has not seen, nor give a forgotten one a fresh burst.
func TestFloodStaysBounded(t *testing.T) {
	clk := testclock.New(t0)
	s := newFlaky(t, clk)
	const maxKeys = 64
	c := newCharger(t, s, asyncquota.Config{Now: clk.Now, MaxKeys: maxKeys})
	rule := quota.Rule{Name: "r", Limit: 10, Window: time.Minute, Algorithm: quota.TokenBucket}
	hot := quota.Subject("hot")
	allowed(t, c, rule, hot)
	reconcile(t, c)
	for range 9 {
		if !allowed(t, c, rule, hot) {
			t.Fatal("the hot subject was refused within its limit")
		}
	}
	// Its nine local admissions are not sent yet: the flood must not push
	// the hot bucket out.
	for i := range 10_000 {
		allowed(t, c, rule, quota.Subject(fmt.Sprint("flood ", i)))
		if i%1000 == 999 {
			if n := c.Len(); n > maxKeys {
				t.Fatalf("after %d flood subjects: tracking %d buckets, want at most %d", i+1, n, maxKeys)
			}
		}
	}
	if allowed(t, c, rule, hot) {
		t.Error("the hot subject, spent, was admitted after the flood")
	}
	// Once sent, the hot bucket may be forgotten; it must then be decided
	// by the store, which knows it is spent.
	reconcile(t, c)
	for i := range 10_000 {
		allowed(t, c, rule, quota.Subject(fmt.Sprint("second flood ", i)))
	}
	before := s.decided.Load()
	if allowed(t, c, rule, hot) {
		t.Error("the hot subject, spent, was admitted after being forgotten")
	}
	if n := c.Len(); n > maxKeys {
		t.Errorf("tracking %d buckets, want at most %d", n, maxKeys)
	}
	if d, _ := s.Memory.AllowN(context.Background(), rule, hot, 0); d.Remaining != 0 {
		t.Errorf("the store holds %d remaining for the hot subject, want 0", d.Remaining)
	}
	t.Logf("the store decided %d of 20,002 flood and hot calls; the last hot call by the store: %v", before, s.decided.Load() > before)
}

// TestOutageFallsBackToTheStore wants a failed reconcile to send every call
// to the store, whose failure policy decides while it is down, and the
// replica to decide locally again once the store answers and a reconcile
// has reloaded the bucket.
func TestOutageFallsBackToTheStore(t *testing.T) {
	clk := testclock.New(t0)
	s := newFlaky(t, clk)
	c := newCharger(t, s, asyncquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "r", Limit: 100, Window: time.Minute}
	subject := quota.Subject("a")
	allowed(t, c, rule, subject)
	reconcile(t, c)
	allowed(t, c, rule, subject)

	s.down.Store(true)
	if err := c.Reconcile(context.Background()); !errors.Is(err, errDown) {
		t.Fatalf("Reconcile while down: got %v, want %v", err, errDown)
	}
	before := s.decided.Load()
	d, err := c.Allow(context.Background(), rule, subject)
	if !errors.Is(err, errDown) || d.Allowed || d.RetryAfter != rule.Window {
		t.Errorf("while down: got %+v, %v, want the store's fail-closed decision and its error", d, err)
	}
	if s.decided.Load() != before+1 {
		t.Error("while down: the call was not sent to the store")
	}

	s.down.Store(false)
	if !allowed(t, c, rule, subject) {
		t.Fatal("after the outage: refused")
	}
	reconcile(t, c)
	before = s.decided.Load()
	for range 10 {
		allowed(t, c, rule, subject)
	}
	if got := s.decided.Load() - before; got != 0 {
		t.Errorf("after the store answered and a reconcile: the store decided %d calls, want 0", got)
	}
}

// TestDecidesByTheStoresClock gives the store a clock 45 s ahead of the
// replica's: the replica must count in the store's windows.
func TestDecidesByTheStoresClock(t *testing.T) {
	local := testclock.New(t0.Add(10 * time.Second))
	remote := testclock.New(t0.Add(55 * time.Second))
	s := newFlaky(t, remote)
	c := newCharger(t, s, asyncquota.Config{Now: local.Now})
	rule := quota.Rule{Name: "r", Limit: 3, Window: time.Minute}
	subject := quota.Subject("a")
	allowed(t, c, rule, subject)
	reconcile(t, c)
	d, err := c.Allow(context.Background(), rule, subject)
	if err != nil {
		t.Fatal(err)
	}
	if d.RetryAfter != 5*time.Second || d.Remaining != 1 {
		t.Errorf("got %+v, want RetryAfter 5s (the store's window) and 1 remaining", d)
	}
	local.Advance(5 * time.Second)
	remote.Advance(5 * time.Second)
	if d, _ := c.Allow(context.Background(), rule, subject); !d.Allowed || d.Remaining != 2 {
		t.Errorf("in the store's next window: got %+v, want allowed with 2 remaining", d)
	}
}

// TestOneReplicaNeverPassesTheLimit drives one replica alone, reconciling
// every 100 ms, with far more calls than its GCRA limit: over every span
// it admits no more than an exact store.
func TestOneReplicaNeverPassesTheLimit(t *testing.T) {
	clk := testclock.New(t0)
	c := newCharger(t, newFlaky(t, clk), asyncquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "r", Limit: 50, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 10}
	subject := quota.Subject("a")
	step := 5 * time.Millisecond
	admitted := make([]int64, 400)
	for i := range admitted {
		if i%20 == 7 {
			reconcile(t, c)
		}
		for range 3 {
			if allowed(t, c, rule, subject) {
				admitted[i]++
			}
		}
		clk.Advance(step)
	}
	checkBound(t, rule, admitted, step, 20*step, 0)
}

func TestRefund(t *testing.T) {
	clk := testclock.New(t0)
	s := newFlaky(t, clk)
	c := newCharger(t, s, asyncquota.Config{Now: clk.Now})
	ctx := context.Background()
	for _, rule := range []quota.Rule{
		{Name: "fixed", Limit: 3, Window: time.Minute},
		{Name: "gcra", Limit: 3, Window: time.Minute, Algorithm: quota.TokenBucket},
	} {
		t.Run(rule.Algorithm.String(), func(t *testing.T) {
			subject := quota.Subject("a")
			allowed(t, c, rule, subject) // by the store
			reconcile(t, c)
			allowed(t, c, rule, subject)
			allowed(t, c, rule, subject)
			if allowed(t, c, rule, subject) {
				t.Fatal("admitted past the limit")
			}
			// Two unsent admissions come back locally, the third from the
			// store.
			if err := c.Refund(ctx, rule, subject, 2); err != nil {
				t.Fatal(err)
			}
			if d, _ := c.AllowN(ctx, rule, subject, 0); d.Remaining != 2 {
				t.Errorf("after a local refund of 2: got %+v, want 2 remaining", d)
			}
			if err := c.Refund(ctx, rule, subject, 3); err != nil {
				t.Fatal(err)
			}
			reconcile(t, c)
			if d, _ := s.Memory.AllowN(ctx, rule, subject, 0); d.Remaining != 3 {
				t.Errorf("the store after refunds: got %+v, want 3 remaining", d)
			}
			if err := c.Refund(ctx, rule, "raw", 1); !errors.Is(err, quota.ErrSubject) {
				t.Errorf("Refund of a raw subject: got %v, want %v", err, quota.ErrSubject)
			}
		})
	}
}

func TestCallerErrors(t *testing.T) {
	clk := testclock.New(t0)
	s := newFlaky(t, clk)
	c := newCharger(t, s, asyncquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "r", Limit: 3, Window: time.Minute}
	for _, tt := range []struct {
		name    string
		rule    quota.Rule
		subject string
		n       int
		want    error
	}{
		{"raw subject", rule, "203.0.113.7", 1, quota.ErrSubject},
		{"negative cost", rule, quota.Subject("a"), -1, quota.ErrRule},
		{"zero rule", quota.Rule{}, quota.Subject("a"), 1, quota.ErrRule},
	} {
		d, err := c.AllowN(context.Background(), tt.rule, tt.subject, tt.n)
		if !errors.Is(err, tt.want) || d.Allowed {
			t.Errorf("%s: got %+v, %v, want refused with %v", tt.name, d, err, tt.want)
		}
	}
	if got := s.decided.Load(); got != 0 {
		t.Errorf("the store decided %d caller errors, want 0", got)
	}
}

func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	clk := testclock.New(t0)
	s := newFlaky(t, clk)
	c := newCharger(t, s, asyncquota.Config{Now: clk.Now, MeterProvider: mp})
	rule := quota.Rule{Name: "r", Limit: 2, Window: time.Minute}
	subject := quota.Subject("a")
	allowed(t, c, rule, subject) // store
	reconcile(t, c)
	allowed(t, c, rule, subject) // local
	allowed(t, c, rule, subject) // local, refused
	// Another replica admitted 3 more meanwhile: the store shows 5, 3
	// beyond the limit of 2.
	if err := s.Memory.Reconcile(context.Background(), []quota.Tally{{Rule: rule, Subject: subject, Hits: 3}}); err != nil {
		t.Fatal(err)
	}
	reconcile(t, c)
	allowed(t, c, rule, subject) // local, refused
	s.down.Store(true)
	if err := c.Reconcile(context.Background()); !errors.Is(err, errDown) {
		t.Fatalf("Reconcile while down: got %v, want %v", err, errDown)
	}
	reconcile(t, c) // nothing to send: not counted

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					mode, _ := dp.Attributes.Value("admit.quota.mode")
					oc, _ := dp.Attributes.Value("admit.quota.outcome")
					got[m.Name+"/"+mode.AsString()+"/"+oc.AsString()] += dp.Value
				}
			case metricdata.Gauge[int64]:
				for _, dp := range data.DataPoints {
					got[m.Name] = dp.Value
				}
			case metricdata.Histogram[int64]:
				for _, dp := range data.DataPoints {
					got[m.Name+"/count"] += int64(dp.Count)
					if v, ok := dp.Max.Value(); ok {
						got[m.Name+"/max"] = max(got[m.Name+"/max"], v)
					}
				}
			}
		}
	}
	want := map[string]int64{
		"admit.quota.async.decisions/store/allowed": 1,
		"admit.quota.async.decisions/local/allowed": 1,
		"admit.quota.async.decisions/local/refused": 2,
		"admit.quota.async.reconciles//ok":          2,
		"admit.quota.async.reconciles//failed":      1,
		"admit.quota.async.reconcile.buckets/count": 3,
		"admit.quota.async.reconcile.buckets/max":   1,
		"admit.quota.async.overadmission/count":     2,
		"admit.quota.async.overadmission/max":       3,
		"admit.quota.async.keys":                    1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %d, want %d", k, got[k], v)
		}
	}
}

// TestConcurrentCallsOneReplica races calls from 16 goroutines with
// reconciles on one replica: it alone must never admit more than the
// limit, however the first calls, decided by the store, interleave with
// the reconcile that loads the bucket. The load counts a call the store
// decided while it ran twice rather than miss it, never more, so the
// replica admits at least the limit less the calls the store decided.
func TestConcurrentCallsOneReplica(t *testing.T) {
	for _, rule := range []quota.Rule{
		{Name: "fixed", Limit: 100, Window: time.Hour},
		{Name: "gcra", Limit: 100, Window: time.Hour, Algorithm: quota.TokenBucket},
	} {
		t.Run(rule.Algorithm.String(), func(t *testing.T) {
			clk := testclock.New(t0)
			store := newFlaky(t, clk)
			c := newCharger(t, store, asyncquota.Config{Now: clk.Now})
			subject := quota.Subject("hot")
			var admitted atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var reconciler sync.WaitGroup
			reconciler.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						if err := c.Reconcile(context.Background()); err != nil {
							t.Error(err)
						}
					}
				}
			})
			for range 16 {
				wg.Go(func() {
					for range 50 {
						if d, err := c.Allow(context.Background(), rule, subject); err != nil {
							t.Error(err)
						} else if d.Allowed {
							admitted.Add(1)
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			reconciler.Wait()
			byStore := store.decided.Load()
			t.Logf("admitted %d; the store decided %d", admitted.Load(), byStore)
			if got := admitted.Load(); got > int64(rule.Limit) || got < int64(rule.Limit)-byStore {
				t.Errorf("admitted %d of 800, want the limit %d, less at most the %d calls the store decided", got, rule.Limit, byStore)
			}
		})
	}
}

// TestFailedReconcileSendsItsHitsAgain: hits a failed reconcile carried
// reach the store with the next one, so that other replicas learn of them
// even when reconciles fail.
func TestFailedReconcileSendsItsHitsAgain(t *testing.T) {
	clk := testclock.New(t0)
	s := newFlaky(t, clk)
	c := newCharger(t, s, asyncquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "r", Limit: 100, Window: time.Minute}
	subject := quota.Subject("a")
	allowed(t, c, rule, subject) // decided by the store: it loads the bucket
	reconcile(t, c)
	for range 5 {
		allowed(t, c, rule, subject) // decided here, unknown to the store
	}
	s.down.Store(true)
	if err := c.Reconcile(context.Background()); !errors.Is(err, errDown) {
		t.Fatalf("Reconcile while down: got %v, want %v", err, errDown)
	}
	s.down.Store(false)
	reconcile(t, c)
	d, err := s.Memory.AllowN(context.Background(), rule, subject, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Remaining != rule.Limit-6 {
		t.Errorf("the store's remaining after the reconcile that followed a failed one: %d, want %d (the store's call and the 5 decided here)", d.Remaining, rule.Limit-6)
	}
}
