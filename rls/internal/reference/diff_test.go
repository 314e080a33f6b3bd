package reference

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/rls/internal/redisproc"
)

// steps is how many requests each differential run sends.
const steps = 1500

// counters returns admit's three counters: memory, Redis (the private
// server, batching) and PostgreSQL (a schema of this test's, batching).
func counters(t testing.TB, srv *redisproc.Server, prefix string) map[string]rls.Counter {
	t.Helper()
	mem, err := memquota.NewCounter(memquota.CounterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	rc, err := redisquota.NewCounter(client, redisquota.CounterConfig{Prefix: prefix, Batch: 64, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	db := testpg.New(t)
	pool := db.Pool(t)
	table := db.Schema + ".admit_quota"
	st, err := pgquota.New(pool, pgquota.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	pc, err := pgquota.NewCounter(pool, pgquota.CounterConfig{Table: table, Batch: 64, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return map[string]rls.Counter{"memory": mem, "redis": rc, "postgres": pc}
}

// setups are the reference's global settings the test runs under, and the
// same in admit's options. With perSecond the reference counts per-second
// limits on a second Redis (REDIS_PERSECOND), and admit on a second
// counter of each store.
var setups = []struct {
	name      string
	env       []string
	opts      rls.Options
	perSecond bool
}{
	{"headers", []string{"LIMIT_RESPONSE_HEADERS_ENABLED=true"}, rls.Options{Headers: rls.DefaultHeaders}, false},
	{"plain", nil, rls.Options{}, false},
	{"global-shadow", []string{"SHADOW_MODE=true", "LIMIT_RESPONSE_HEADERS_ENABLED=true", "LIMIT_LIMIT_HEADER=X-RateLimit-Limit",
		"LIMIT_REMAINING_HEADER=X-RateLimit-Remaining", "LIMIT_RESET_HEADER=X-RateLimit-Reset"},
		rls.Options{ShadowMode: true, Headers: rls.Headers{Limit: "X-RateLimit-Limit", Remaining: "X-RateLimit-Remaining", Reset: "X-RateLimit-Reset"}}, false},
	{"global-quota", []string{"QUOTA_MODE=true"}, rls.Options{QuotaMode: true}, false},
	{"stop-increment", []string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"}, rls.Options{StopIncrementOverLimit: true}, false},
	{"local-cache", []string{"LOCAL_CACHE_SIZE_IN_BYTES=1048576"}, rls.Options{LocalCacheBytes: 1 << 20}, false},
	{"stop-increment, local-cache", []string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true", "LOCAL_CACHE_SIZE_IN_BYTES=1048576"},
		rls.Options{StopIncrementOverLimit: true, LocalCacheBytes: 1 << 20}, false},
	{"per-second", nil, rls.Options{}, true},
	{"per-second, stop-increment", []string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"}, rls.Options{StopIncrementOverLimit: true}, true},
}

// TestDifferential sends the same random requests to envoyproxy/ratelimit
// and to admit on each store, and wants every answer equal, field by field.
//
// Both read the machine's wall clock in whole seconds (admit through the
// store's clock: Redis's TIME, PostgreSQL's now(), time.Now in memory), so
// answers agree exactly when every call of a step falls in one second. A
// step is timed from before the reference's call to after admit's last; one
// that spans a second boundary may legitimately differ, in the windows that
// turned over, so it is not compared and the sequence moves to a new epoch
// (the first entry of every descriptor), whose counts start afresh on both
// sides. Such steps are counted, and more than a tenth of them fails the
// test.
func TestDifferential(t *testing.T) {
	srv := redisproc.Start(t)
	cfg, err := rls.Load("testdata/ratelimit/config")
	if err != nil {
		t.Fatal(err)
	}
	for i, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			refPrefix, admitPrefix := "ref"+strconv.Itoa(i)+":", "admit"+strconv.Itoa(i)+":"
			env := append([]string{"CACHE_KEY_PREFIX=" + refPrefix}, setup.env...)
			var second *redisproc.Server
			var perSecond map[string]rls.Counter
			if setup.perSecond {
				second = redisproc.Start(t)
				env = append(env, "REDIS_PERSECOND=true", "REDIS_PERSECOND_SOCKET_TYPE=tcp", "REDIS_PERSECOND_URL="+second.Addr)
				perSecond = counters(t, second, admitPrefix)
			}
			ref := startReference(t, srv, env...)
			services := map[string]*rls.Service{}
			for name, c := range counters(t, srv, admitPrefix) {
				o := setup.opts
				o.Config, o.Counter, o.PerSecondCounter = cfg, c, perSecond[name]
				s, err := rls.New(o)
				if err != nil {
					t.Fatal(err)
				}
				services[name] = s
			}
			r := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			run(t, r, ref, services)
			if second != nil {
				onSecondStore(t, second, refPrefix, admitPrefix)
			}
		})
	}
}

// onSecondStore checks that the reference and admit each counted on the
// per-second server, and there only the per-second limits: a user alone
// (diff.yaml) and a remote_address (other.yaml). The reference's keys name
// their descriptors; admit's are hashed, so theirs are told by their time
// to live, a window of one second, where the reference adds up to 300 s
// of jitter (EXPIRATION_JITTER_MAX_SECONDS).
func onSecondStore(t *testing.T, srv *redisproc.Server, refPrefix, admitPrefix string) {
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	ctx := context.Background()
	perSecond := regexp.MustCompile(`_(user_u\d|remote_address_[0-9.]+)_\d+$`)
	for _, prefix := range []string{refPrefix, admitPrefix} {
		keys, err := client.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			t.Errorf("%s: no key on the per-second server", prefix)
		}
		for _, k := range keys {
			if prefix == refPrefix && !perSecond.MatchString(k) {
				t.Errorf("the reference counted %q on the per-second server", k)
			}
			if ttl := client.TTL(ctx, k).Val(); prefix == admitPrefix && ttl > 2*time.Second {
				t.Errorf("admit counted %q, which lives %v, on the per-second server: not a one-second window", k, ttl)
			}
		}
	}
}

// run sends steps requests and compares the answers.
func run(t *testing.T, r *rand.Rand, ref *reference, services map[string]*rls.Service) {
	ctx := context.Background()
	epoch, skipped, over, compared := 0, 0, 0, map[string]int{}
	names := []string{"memory", "redis", "postgres"}
	for step := range steps {
		req := request(r, epoch)
		start := time.Now()
		want, werr := ref.client.ShouldRateLimit(ctx, req)
		got := make([]*pb.RateLimitResponse, len(names))
		errs := make([]error, len(names))
		for i, n := range names {
			got[i], errs[i] = services[n].ShouldRateLimit(ctx, proto.Clone(req).(*pb.RateLimitRequest))
		}
		if start.Unix() != time.Now().Unix() {
			skipped++
			epoch++
			continue
		}
		for i, n := range names {
			if (werr != nil) != (errs[i] != nil) {
				t.Fatalf("step %d, %s: request %v\nreference error %v, admit error %v", step, n, js(req), werr, errs[i])
			}
			if werr != nil {
				compared[n]++
				continue
			}
			g := roundTrip(t, got[i])
			if !proto.Equal(want, g) {
				t.Fatalf("step %d, %s: request %v\nreference %v\nadmit     %v", step, n, js(req), js(want), js(g))
			}
			compared[n]++
		}
		for _, st := range want.GetStatuses() {
			if st.GetCurrentLimit() != nil && st.GetLimitRemaining() == 0 {
				over++
			}
		}
	}
	t.Logf("compared %v answers (%d statuses with nothing left), %d steps across a second boundary skipped", compared, over, skipped)
	if over < steps/20 {
		t.Fatalf("only %d statuses with nothing left in %d steps: the sequence does not reach the limits", over, steps)
	}
	if skipped > steps/10 {
		t.Fatalf("%d of %d steps spanned a second boundary", skipped, steps)
	}
}

// roundTrip returns m as the wire gives it back, so that it compares with
// the reference's as a client sees both.
func roundTrip(t *testing.T, m *pb.RateLimitResponse) *pb.RateLimitResponse {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := new(pb.RateLimitResponse)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func js(m proto.Message) string { return protojson.Format(m) }

// templates are the descriptors a request is made of, after its epoch
// entry; each names values in the configuration and values beside it.
var templates = []func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry{
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("user", pick(r, "u0", "u1", "u2"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("user", pick(r, "u0", "u1"), "path", pick(r, "/login", "/x", "/api/v"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("path", pick(r, "/login", "/api/a", "/api/b", "/api/", "/other"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("file", pick(r, "doc1", "doc2", "docs", "doc*", "other"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("file", pick(r, "doc1", "doc2", "x"), "op", pick(r, "read", "write"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("plan", pick(r, "free", "vip", "basic"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("tenant", pick(r, "t0", "t1", "t2"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry { return entries("quota", pick(r, "q0", "q1")) },
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry { return entries("year", "y", "extra", "deeper") },
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry { return entries("year", "y") },
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry { return entries("zero", "z") },
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries(pick(r, "a_b", "a"), pick(r, "", "b", "c"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("remote_address", pick(r, "10.0.0.1", "10.0.0.2"))
	},
	func(r *rand.Rand) []*rlv3.RateLimitDescriptor_Entry {
		return entries("header", pick(r, "", "h1", "h2"))
	},
}

// request returns a random request of the epoch.
func request(r *rand.Rand, epoch int) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: pick(r, "diff", "diff", "diff", "other", "unknown")}
	if r.IntN(8) == 0 {
		req.HitsAddend = uint32(r.IntN(4))
	}
	if r.IntN(100) == 0 {
		return req // no descriptors: refused by both
	}
	for range 1 + r.IntN(4) {
		d := &rlv3.RateLimitDescriptor{Entries: entries("epoch", strconv.Itoa(epoch))}
		if r.IntN(10) == 0 {
			// The descriptor's own limit, as Envoy sends it from dynamic
			// metadata. Each value keeps one unit, since the reference
			// shares a count between units whose windows start together.
			v := pick(r, "o0", "o1")
			unit := typev3.RateLimitUnit_MINUTE
			if v == "o1" {
				unit = typev3.RateLimitUnit_HOUR
			}
			d.Entries = append(d.Entries, entries("override", v)...)
			d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: uint32(1 + r.IntN(3)), Unit: unit}
		} else {
			d.Entries = append(d.Entries, templates[r.IntN(len(templates))](r)...)
		}
		if r.IntN(5) == 0 {
			d.HitsAddend = wrapperspb.UInt64(uint64(r.IntN(4)))
		}
		req.Descriptors = append(req.Descriptors, d)
	}
	return req
}

func entries(kv ...string) []*rlv3.RateLimitDescriptor_Entry {
	var out []*rlv3.RateLimitDescriptor_Entry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func pick(r *rand.Rand, vs ...string) string { return vs[r.IntN(len(vs))] }
