package rls_test

import (
	"strings"
	"testing"

	confpb "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admitgo/admit/rls"
)

// resources packs configs as an xDS server sends them.
func resources(t *testing.T, configs ...proto.Message) []*anypb.Any {
	t.Helper()
	out := make([]*anypb.Any, 0, len(configs))
	for _, c := range configs {
		a, err := anypb.New(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

func limit(unit confpb.RateLimitUnit, n uint32) *confpb.RateLimitPolicy {
	return &confpb.RateLimitPolicy{Unit: unit, RequestsPerUnit: n}
}

// TestXDSAsFile wants a resource to load as the file of the same domain
// loads: the same limits, printed alike.
func TestXDSAsFile(t *testing.T) {
	res := resources(t, &confpb.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*confpb.RateLimitDescriptor{
		{Key: "user", RateLimit: limit(confpb.RateLimitUnit_MINUTE, 10), Descriptors: []*confpb.RateLimitDescriptor{
			{Key: "path", Value: "/login", RateLimit: &confpb.RateLimitPolicy{Unit: confpb.RateLimitUnit_SECOND, RequestsPerUnit: 2, Name: "login",
				Replaces: []*confpb.RateLimitReplace{{Name: "other"}}}, ShadowMode: true, DetailedMetric: true},
		}},
		{Key: "ip", RateLimit: &confpb.RateLimitPolicy{Unlimited: true}},
		{Key: "week", RateLimit: limit(confpb.RateLimitUnit_WEEK, 0)},
	}}, &confpb.RateLimitConfig{Domain: "other"})
	got, err := rls.ParseXDS(res)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rls.Parse("f.yaml", []byte(`domain: edge
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10}
    descriptors:
      - key: path
        value: /login
        shadow_mode: true
        detailed_metric: true
        rate_limit: {unit: second, requests_per_unit: 2, name: login, replaces: [{name: other}]}
  - key: ip
    rate_limit: {unlimited: true}
  - key: week
    rate_limit: {unit: week}
`))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.Dump(), want.Dump(); g != w {
		t.Fatalf("xDS config:\n%s\nwant the file's:\n%s", g, w)
	}
	if d := got.Domains(); len(d) != 2 || d[0] != "edge" || d[1] != "other" {
		t.Fatalf("domains %v, want [edge other]", d)
	}
}

// TestXDSErrors wants what a file may not hold refused in a resource too,
// by the file's check, naming the resource and the field.
func TestXDSErrors(t *testing.T) {
	d := func(ds ...*confpb.RateLimitDescriptor) *confpb.RateLimitConfig {
		return &confpb.RateLimitConfig{Name: "r", Domain: "d", Descriptors: ds}
	}
	for _, tc := range []struct {
		name string
		res  []proto.Message
		want string
	}{
		{"no domain", []proto.Message{&confpb.RateLimitConfig{Name: "r"}}, `rls: xDS resource "r": domain: missing or empty`},
		{"unnamed", []proto.Message{d(), &confpb.RateLimitConfig{}}, `rls: xDS resource [1]: domain: missing or empty`},
		{"domain twice", []proto.Message{d(), d()}, `domain: "d" is already configured`},
		{"no unit", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a", RateLimit: limit(confpb.RateLimitUnit_UNKNOWN, 1)})}, `descriptors[0].rate_limit.unit: "": want second`},
		{"undefined unit", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a", RateLimit: limit(99, 1)})}, `descriptors[0].rate_limit.unit: "99": want second`},
		{"unit with unlimited", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a", RateLimit: &confpb.RateLimitPolicy{Unit: confpb.RateLimitUnit_HOUR, Unlimited: true}})}, `descriptors[0].rate_limit.unit: not with unlimited`},
		{"empty key", []proto.Message{d(&confpb.RateLimitDescriptor{Value: "x"})}, `descriptors[0].key: missing or empty`},
		{"duplicate", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a"}, &confpb.RateLimitDescriptor{Key: "a"})}, `descriptors[1]: duplicate descriptor "d.a"`},
		{"collision", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a", Value: "b"}, &confpb.RateLimitDescriptor{Key: "a_b"})}, `duplicate descriptor "d.a_b"`},
		{"nested", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a", Descriptors: []*confpb.RateLimitDescriptor{{Key: "b", RateLimit: limit(0, 1)}}})}, `descriptors[0].descriptors[0].rate_limit.unit`},
		{"empty replaces", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a", RateLimit: &confpb.RateLimitPolicy{Unit: 1, Replaces: []*confpb.RateLimitReplace{{}}}})}, `replaces[0].name: missing or empty`},
		{"self replaces", []proto.Message{d(&confpb.RateLimitDescriptor{Key: "a", RateLimit: &confpb.RateLimitPolicy{Unit: 1, Name: "x", Replaces: []*confpb.RateLimitReplace{{Name: "x"}}}})}, `"x" is this limit's own name`},
		{"another type", []proto.Message{wrapperspb.String("domain: d")}, `rls: xDS resource [0]: type "type.googleapis.com/google.protobuf.StringValue": want ` + rls.XDSType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rls.ParseXDS(resources(t, tc.res...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error holding %q", err, tc.want)
			}
		})
	}
}

// TestXDSBounded refuses a resource larger than a file may be, before it
// is unpacked, and bytes that are not the type they claim.
func TestXDSBounded(t *testing.T) {
	big := &anypb.Any{TypeUrl: rls.XDSType, Value: make([]byte, 16<<20+1)}
	if _, err := rls.ParseXDS([]*anypb.Any{big}); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("got %v, want the file's bound", err)
	}
	junk := &anypb.Any{TypeUrl: rls.XDSType, Value: []byte{0xff, 0xff}}
	if _, err := rls.ParseXDS([]*anypb.Any{junk}); err == nil || !strings.Contains(err.Error(), "xDS resource [0]") {
		t.Fatalf("got %v, want the resource named", err)
	}
}

// TestLoadXDS reloads from resources, and keeps the configuration in force
// when they are refused, counting the failure as a file's is counted.
func TestLoadXDS(t *testing.T) {
	f := newFixture(t, rls.Options{})
	good := resources(t, &confpb.RateLimitConfig{Domain: "xds", Descriptors: []*confpb.RateLimitDescriptor{{Key: "k", RateLimit: limit(confpb.RateLimitUnit_HOUR, 1)}}})
	if err := f.svc.LoadXDS(good); err != nil {
		t.Fatal(err)
	}
	if st := f.decide(t, req("xds", desc("k", "v"))).GetStatuses()[0]; st.GetCurrentLimit().GetRequestsPerUnit() != 1 {
		t.Fatalf("after the xDS load: %v, want the limit of 1 an hour", st)
	}
	bad := resources(t, &confpb.RateLimitConfig{Domain: "xds", Descriptors: []*confpb.RateLimitDescriptor{{Key: "k", RateLimit: limit(0, 5)}}})
	if err := f.svc.LoadXDS(bad); err == nil {
		t.Fatal("a resource without a unit loaded")
	}
	if st := f.decide(t, req("xds", desc("k", "v"))).GetStatuses()[0]; st.GetCurrentLimit().GetRequestsPerUnit() != 1 {
		t.Fatalf("after a refused load: %v, want the limit in force kept", st)
	}
	if got := f.sum(t, "admit.rls.config_loads", "admit.rls.result", "failed"); got != 1 {
		t.Fatalf("config_loads{failed} = %d, want 1", got)
	}
	if got := f.sum(t, "admit.rls.config_loads", "admit.rls.result", "loaded"); got != 2 {
		t.Fatalf("config_loads{loaded} = %d, want 2", got)
	}
}
