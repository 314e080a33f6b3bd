package rls

import (
	"fmt"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"
)

// units are the rate_limit units envoyproxy/ratelimit accepts, in any case,
// and the length of each one's window. A month is 30 days and a year 365,
// as there.
var units = map[string]time.Duration{
	"SECOND": time.Second,
	"MINUTE": time.Minute,
	"HOUR":   time.Hour,
	"DAY":    24 * time.Hour,
	"WEEK":   7 * 24 * time.Hour,
	"MONTH":  30 * 24 * time.Hour,
	"YEAR":   365 * 24 * time.Hour,
}

// unitWindow returns the window of a unit as Envoy sends it, or false for
// UNKNOWN and values no version of the API defines.
func unitWindow(u pb.RateLimitResponse_RateLimit_Unit) (time.Duration, bool) {
	name, ok := pb.RateLimitResponse_RateLimit_Unit_name[int32(u)]
	if !ok {
		return 0, false
	}
	w, ok := units[name]
	return w, ok
}

// descriptors loads a list of descriptors under parent, whose path (as
// metrics name it) is parentKey.
func (r reader) descriptors(parent *node, parentKey string, list []*yaml.Node, field string) error {
	for i, dn := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		m, err := r.fields(dn, f)
		if err != nil {
			return err
		}
		d, err := r.descriptor(m, dn, f)
		if err != nil {
			return err
		}
		key, err := r.str(m, "key", f)
		if err != nil {
			return err
		}
		value, err := r.str(m, "value", f)
		if err != nil {
			return err
		}
		if key == "" {
			return r.errorf(dn, join(f, "key"), "missing or empty: every descriptor names its key")
		}
		// The map key is key, or key_value: envoyproxy/ratelimit's, whose
		// spellings collide (key "a_b" is key "a" with value "b"), and
		// this one collides the same way, so both read a file alike.
		final := key
		if value != "" {
			final += "_" + value
		}
		path := parentKey + final
		if _, dup := parent.children[final]; dup {
			return r.errorf(dn, f, "duplicate descriptor %q", path)
		}
		if d.shareThreshold && !strings.HasSuffix(final, "*") {
			return r.errorf(m["share_threshold"], join(f, "share_threshold"), "only for a value that ends in \"*\", not %q", final)
		}
		if d.shareThreshold {
			d.wildcardPattern = final
		}
		if strings.HasSuffix(final, "*") {
			parent.wildcards = append(parent.wildcards, final)
		}
		if d.rule != nil {
			d.rule.fullKey = path
		}
		children, err := r.list(m, "descriptors", f)
		if err != nil {
			return err
		}
		if err := r.descriptors(d, path+".", children, join(f, "descriptors")); err != nil {
			return err
		}
		parent.children[final] = d
	}
	return nil
}

// descriptor reads one descriptor's own fields and rate_limit.
func (r reader) descriptor(m map[string]*yaml.Node, dn *yaml.Node, f string) (*node, error) {
	d := &node{children: make(map[string]*node)}
	var shadow, quota, detailed bool
	for _, b := range []struct {
		key string
		to  *bool
	}{
		{"shadow_mode", &shadow}, {"quota_mode", &quota}, {"detailed_metric", &detailed},
		{"value_to_metric", &d.valueToMetric}, {"share_threshold", &d.shareThreshold},
	} {
		v, err := r.boolean(m, b.key, f)
		if err != nil {
			return nil, err
		}
		*b.to = v
	}
	if m["rate_limit"] == nil || m["rate_limit"].Tag == "!!null" {
		return d, nil
	}
	rf := join(f, "rate_limit")
	rm, err := r.fieldsWith(m["rate_limit"], rf, ruleKeys)
	if err != nil {
		return nil, err
	}
	ru, err := r.rule(rm, m["rate_limit"], rf)
	if err != nil {
		return nil, err
	}
	ru.shadow, ru.quota, ru.detailed = shadow, quota, detailed
	d.rule = ru
	return d, nil
}

// rule reads a rate_limit mapping.
func (r reader) rule(rm map[string]*yaml.Node, rn *yaml.Node, rf string) (*rule, error) {
	unlimited, err := r.boolean(rm, "unlimited", rf)
	if err != nil {
		return nil, err
	}
	unit, err := r.str(rm, "unit", rf)
	if err != nil {
		return nil, err
	}
	requests, err := r.uint32Field(rm, "requests_per_unit", rf)
	if err != nil {
		return nil, err
	}
	name, err := r.str(rm, "name", rf)
	if err != nil {
		return nil, err
	}
	window, valid := units[strings.ToUpper(unit)]
	switch {
	case unlimited && valid:
		return nil, r.errorf(rm["unit"], join(rf, "unit"), "not with unlimited: an unlimited descriptor has no unit")
	case !unlimited && !valid:
		at := rm["unit"]
		if at == nil {
			at = rn
		}
		return nil, r.errorf(at, join(rf, "unit"), "%q: want second, minute, hour, day, week, month or year", unit)
	}
	ru := &rule{window: window, unlimited: unlimited, name: name}
	var u pb.RateLimitResponse_RateLimit_Unit
	if valid {
		u = pb.RateLimitResponse_RateLimit_Unit(pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(unit)])
	}
	ru.limit = &pb.RateLimitResponse_RateLimit{RequestsPerUnit: requests, Unit: u, Name: name}
	list, err := r.list(rm, "replaces", rf)
	if err != nil {
		return nil, err
	}
	for i, e := range list {
		ef := fmt.Sprintf("%s.replaces[%d]", rf, i)
		em, err := r.fields(e, ef)
		if err != nil {
			return nil, err
		}
		n, err := r.str(em, "name", ef)
		if err != nil {
			return nil, err
		}
		switch {
		case n == "":
			return nil, r.errorf(e, join(ef, "name"), "missing or empty: a replaces entry names the limit it replaces")
		case n == name:
			return nil, r.errorf(e, join(ef, "name"), "%q is this limit's own name", n)
		}
		ru.replaces = append(ru.replaces, n)
	}
	if err := r.bucket(rm, rf, ru); err != nil {
		return nil, err
	}
	return ru, nil
}
