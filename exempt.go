package admit

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strings"

	"github.com/admitgo/admit/quota"
)

// exemptions are a group's Exempt prefixes and ExemptKeys, read once in
// newGroup: the keys as the table keys hashes (hashKey), so a lookup is a
// map probe on the key admission found anyway.
type exemptions struct {
	prefixes []netip.Prefix
	keys     map[netip.Prefix]struct{}
}

func newExemptions(b Budget) exemptions {
	e := exemptions{prefixes: b.Exempt}
	if len(b.ExemptKeys) > 0 {
		e.keys = make(map[netip.Prefix]struct{}, len(b.ExemptKeys))
		for _, k := range b.ExemptKeys {
			var sum [16]byte
			hex.Decode(sum[:], []byte(k)) // checked by validateExempt
			e.keys[netip.PrefixFrom(netip.AddrFrom16(sum), 0)] = struct{}{}
		}
	}
	return e
}

// validateExempt names the first bad Exempt prefix or ExemptKeys entry of
// a budget, and refuses keys on a group whose key a client could choose.
func (b Budget) validateExempt(g Group) error {
	for _, p := range b.Exempt {
		if !p.IsValid() || p.Addr().Zone() != "" {
			return fieldsError(g, "{Exempt} %v, want a CIDR prefix such as 10.0.0.0/8", p)
		}
		if p.Addr().Is4In6() {
			// Client keys are unmapped, so such a prefix would match
			// nobody while it reads as an exemption.
			return fieldsError(g, "{Exempt} %v is IPv4-mapped and matches no client: write the IPv4 prefix, such as 10.0.0.0/8", p)
		}
	}
	if len(b.ExemptKeys) == 0 {
		return nil
	}
	k := b.Key
	switch {
	case k.Func == nil && k.Header == "" && k.PathValue == "":
		return fieldsError(g, "{ExemptKeys} applies only to a key by {Key.Header}, {Key.PathValue} or {Key.Func}")
	case k.Func == nil && !k.Authenticated:
		return fieldsError(g, "{ExemptKeys} needs {Key.Authenticated}: a client could send a listed value of its own")
	}
	for _, s := range b.ExemptKeys {
		if _, err := hex.DecodeString(s); err != nil || len(s) != quota.SubjectLen || s != strings.ToLower(s) {
			// The entry is a hash, not the secret: naming it leaks nothing.
			return fieldsError(g, "{ExemptKeys} entry %q, want quota.Subject of the value: %d lower-case hex digits", s, quota.SubjectLen)
		}
	}
	return nil
}

// exempt reports whether a request keyed key passes g without spending,
// and by which rule: its client address within a prefix, or its hashed
// key listed. The address is the client key Config.Key resolved, so only
// a trusted proxy can name another. r is nil for a request that is not
// HTTP, whose client key is found already.
func (g *group) exempt(r *http.Request, key netip.Prefix, client *clientKey) (netip.Prefix, bool) {
	if key.Bits() == 0 && g.exemptions.keys != nil {
		if _, ok := g.exemptions.keys[key]; ok {
			return key, true
		}
	}
	if len(g.exemptions.prefixes) == 0 {
		return netip.Prefix{}, false
	}
	c := client.of(g.set, r)
	for _, p := range g.exemptions.prefixes {
		if p.Bits() <= c.Bits() && p.Contains(c.Addr()) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// admitExempt admits an exempt request under the group cap
// alone, recording it in t: it spends no token and takes no client slot.
func (g *group) admitExempt(key netip.Prefix, cost int32, unslotted bool, t *ticket) verdict {
	*t = ticket{key: key, shard: g.shardOf(key), cost: cost, slot: -1, unslotted: unslotted, exempt: true}
	if !g.takeSlotFor(t) {
		return g.refusal(outcomeGroupConcurrency, 1)
	}
	t.taken = true
	// Its RateLimit field says the whole burst is there: nothing is spent.
	return verdict{admitted: true, outcome: outcomeExempt, left: g.budget.Burst}
}

// cancel undoes the admission recorded in t, as its engine cancels it; an
// exempt request took only the group's slot.
func (g *group) cancel(ctx context.Context, t *ticket) {
	if t.exempt {
		g.releaseExempt(t)
		return
	}
	g.engine.cancel(ctx, t)
}

// settle ends the request recorded in t, as its engine settles it.
func (g *group) settle(ctx context.Context, t *ticket, status int) {
	if t.exempt {
		g.releaseExempt(t)
		return
	}
	g.engine.settle(ctx, t, status)
}

// releaseExempt gives back the group slot of an exempt request.
func (g *group) releaseExempt(t *ticket) {
	t.taken = false
	if !t.unslotted {
		g.inflight.Add(-1)
	}
}
