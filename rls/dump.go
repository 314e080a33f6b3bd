package rls

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Dump returns the configuration as envoyproxy/ratelimit's /rlconfig
// prints it: one line for each descriptor with a limit, its full key, unit,
// requests per unit, shadow and quota modes, sorted by domain and key (the
// reference's order is its maps'). Unlimited descriptors and admit's token
// buckets say so.
func (c *Config) Dump() string {
	var b strings.Builder
	var walk func(n *node)
	walk = func(n *node) {
		if r := n.rule; r != nil {
			switch {
			case r.unlimited:
				fmt.Fprintf(&b, "%s: unlimited", r.fullKey)
			default:
				fmt.Fprintf(&b, "%s: unit=%s requests_per_unit=%d", r.fullKey, r.limit.GetUnit(), r.limit.GetRequestsPerUnit())
			}
			if r.bucket != nil {
				fmt.Fprintf(&b, " algorithm=%s burst=%d", r.bucket.Algorithm, r.bucket.Burst)
			}
			fmt.Fprintf(&b, ", shadow_mode: %t, quota_mode: %t\n", r.shadow, r.quota)
		}
		for _, k := range slices.Sorted(maps.Keys(n.children)) {
			walk(n.children[k])
		}
	}
	for _, d := range slices.Sorted(maps.Keys(c.domains)) {
		walk(c.domains[d])
	}
	return b.String()
}
