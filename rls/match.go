package rls

import (
	"fmt"
	"strings"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// match is the limit a descriptor gets, as envoyproxy/ratelimit's GetLimit
// finds it.
type match struct {
	rule *rule // nil: no limit applies
	// patterns, when not nil, holds per entry the share_threshold wildcard
	// value that entry counts under instead of its own value ("" for
	// entries that count by their value).
	patterns []string
	// metricKey names the limit in metrics when it is not rule.fullKey:
	// detailed_metric and value_to_metric put request values in it.
	metricKey string
}

// lookup finds the limit of descriptor d in domain. An unknown domain, or a
// descriptor no rule matches, gets no limit. A descriptor that carries its
// own limit (Envoy sends one from dynamic metadata) gets that limit
// whatever the file says, in a known domain only, never in shadow mode; an
// error means its unit is not one Envoy defines.
func (c *Config) lookup(domain string, d *rlv3.RateLimitDescriptor) (match, bool, error) {
	top := c.domains[domain]
	if top == nil {
		return match{}, false, nil
	}
	if l := d.GetLimit(); l != nil {
		u := pb.RateLimitResponse_RateLimit_Unit(l.GetUnit())
		w, ok := unitWindow(u)
		if !ok {
			return match{}, true, fmt.Errorf("descriptor limit unit %d: want second, minute, hour, day, week, month or year", l.GetUnit())
		}
		return match{rule: &rule{
			fullKey:  descriptorKey(domain, d),
			limit:    &pb.RateLimitResponse_RateLimit{RequestsPerUnit: l.GetRequestsPerUnit(), Unit: u},
			window:   w,
			override: true,
		}}, true, nil
	}
	return top.walk(domain, d.GetEntries()), true, nil
}

// walk follows entries down the tree from n: at each level the entry's key
// and value first, then the wildcards in file order, then the key alone. A
// rule applies only when found at the last entry; more entries than the
// tree is deep match nothing.
func (n *node) walk(domain string, entries []*rlv3.RateLimitDescriptor_Entry) match {
	var m match
	var shared map[int]string
	dynamic := false
	prev := n
	for i, e := range entries {
		final := e.GetKey() + "_" + e.GetValue()
		next := prev.children[final]
		wildcard := ""
		if next == nil {
			for _, w := range prev.wildcards {
				if strings.HasPrefix(final, strings.TrimSuffix(w, "*")) {
					next, wildcard = prev.children[w], w
					break
				}
			}
		}
		if next == nil {
			next = prev.children[e.GetKey()]
		}
		if wildcard != "" && next.shareThreshold && next.wildcardPattern != "" {
			if shared == nil {
				shared = make(map[int]string)
			}
			shared[i] = strings.TrimPrefix(next.wildcardPattern, e.GetKey()+"_")
		}
		if next != nil && next.valueToMetric {
			dynamic = true
		}
		if next != nil && next.rule != nil && i == len(entries)-1 {
			m.rule = next.rule
			if len(shared) > 0 {
				m.patterns = make([]string, len(entries))
				for k, p := range shared {
					m.patterns[k] = p
				}
			}
		}
		if next == nil || len(next.children) == 0 {
			break
		}
		prev = next
	}
	switch {
	case m.rule == nil:
	case m.rule.detailed:
		m.metricKey = detailedKey(domain, entries, m.patterns)
	case dynamic:
		m.metricKey = n.valueKey(domain, entries, shared)
	}
	return m
}

// detailedKey is a detailed_metric limit's metric name: the domain and
// every entry's key and value, a share_threshold entry's wildcard in place
// of its value.
func detailedKey(domain string, entries []*rlv3.RateLimitDescriptor_Entry, patterns []string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.GetKey())
		v := e.GetValue()
		if i < len(patterns) && patterns[i] != "" {
			v = patterns[i]
		} else if patterns == nil {
			b.WriteByte('_')
			b.WriteString(v)
			continue
		}
		if v != "" {
			b.WriteByte('_')
			b.WriteString(v)
		}
	}
	return b.String()
}

// valueKey is the metric name of a limit on a path with value_to_metric:
// each entry's key, with the value it matched by, or its request value
// where value_to_metric asks for it.
func (n *node) valueKey(domain string, entries []*rlv3.RateLimitDescriptor_Entry, shared map[int]string) string {
	var b strings.Builder
	b.WriteString(domain)
	prev := n
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.GetKey())
		final := e.GetKey() + "_" + e.GetValue()
		next := prev.children[final]
		byValue, wildcard := next != nil, ""
		if next == nil {
			for _, w := range prev.wildcards {
				if strings.HasPrefix(final, strings.TrimSuffix(w, "*")) {
					next, wildcard, byValue = prev.children[w], w, true
					break
				}
			}
		}
		if next == nil {
			next = prev.children[e.GetKey()]
		}
		if next == nil {
			break
		}
		v := ""
		switch {
		case wildcard != "" && shared[i] != "":
			v = shared[i]
		case wildcard != "" && next.valueToMetric:
			v = e.GetValue()
		case wildcard != "":
			v = strings.TrimPrefix(wildcard, e.GetKey()+"_")
		case byValue || next.valueToMetric:
			v = e.GetValue()
		}
		if v != "" {
			b.WriteByte('_')
			b.WriteString(v)
		}
		if len(next.children) == 0 {
			break
		}
		prev = next
	}
	return b.String()
}

// descriptorKey is the metric name of a descriptor's own limit: the domain
// and its entries.
func descriptorKey(domain string, d *rlv3.RateLimitDescriptor) string {
	var b strings.Builder
	b.WriteString(domain)
	b.WriteByte('.')
	for i, e := range d.GetEntries() {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.GetKey())
		if e.GetValue() != "" {
			b.WriteByte('_')
			b.WriteString(e.GetValue())
		}
	}
	return b.String()
}
