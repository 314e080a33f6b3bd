package admit

import (
	"fmt"
	"net/netip"
	"strings"
)

// GroupState is what a group holds at one moment, as [Door.GroupState]
// reports it.
type GroupState struct {
	// Clients is the number of entries in the group's client table; 0 for
	// a group whose tokens a shared store decides, which keeps no table.
	Clients int
	// Inflight is the number of requests admitted and not yet answered.
	Inflight int
	// Waiting is the number of requests waiting for a token they
	// reserved (see Budget.Queue), at most the budget's MaxWaiting.
	Waiting int
	// Shared reports that a shared store decides the group's tokens.
	Shared bool
	// OnFallback reports that the group's shared store failed and the
	// group decides on its local fallback until the store answers again.
	OnFallback bool
}

// GroupState reports what group g holds now, and whether the door knows g.
func (d *Door) GroupState(g Group) (GroupState, bool) {
	grp, ok := d.groups[g]
	if !ok {
		return GroupState{}, false
	}
	var st GroupState
	for i := range grp.shards {
		s := &grp.shards[i]
		s.mu.Lock()
		st.Clients += s.table.Len()
		s.mu.Unlock()
	}
	st.Inflight, st.Waiting = int(grp.inflight.Load()), int(grp.waiting.Load())
	if e, ok := grp.engine.(*shared); ok {
		st.Shared = true
		st.OnFallback = e.fallback != nil && e.down.Down()
	}
	return st, true
}

// ClientState is what a group holds for one key at one moment, as
// [Door.Client] reports it. A request costing n is admitted on tokens while
// Tokens is at least n plus Held.
type ClientState struct {
	// Key is the key the group counts under, as [Door.KeyOf] writes it.
	Key string
	// Entry reports that the key has an entry in the group's client table.
	Entry bool
	// Shared reports a key without an entry while its part of the table is
	// full: its next request spends from the group's shared bucket, unless
	// it reclaims an idle entry first. Without an entry and without Shared,
	// the key's next request gets an entry with a full bucket.
	Shared bool
	// Store reports a group whose tokens a shared store decides: the door
	// does not read them, so Tokens is 0; Inflight and Held are this
	// process's.
	Store bool
	// Tokens is what the key's bucket could spend now: its entry's, the
	// shared bucket's when Shared, or else a fresh bucket's (the Burst). For
	// a fixed window it is what is left of the window's Limit. It is below
	// 0 while the key owes tokens that waiting requests reserved (see
	// Budget.Queue).
	Tokens float64
	// Held is the tokens that unsettled charge-on-failure requests hold on
	// that bucket.
	Held int
	// Inflight is the key's requests admitted and not yet answered.
	Inflight int
}

// Client reports what group g holds for key, which is written as the group
// keys requests:
//
//   - a group keyed by the client takes an address or a prefix
//     ("192.0.2.7", "2001:db8::/64"), masked as the door masks it: to /32
//     or /64, the widths of the default Config.Key, then to the group's
//     IPv4Prefix or IPv6Prefix;
//   - a group keyed by a header or a path value takes the value itself
//     ("Bearer abc"), hashed as the door hashes it;
//   - a Global group takes "global".
//
// The error names a key the group cannot hold, or an unknown group.
// Looking changes nothing, not even the table's order.
func (d *Door) Client(g Group, key string) (ClientState, error) {
	grp, k, err := d.lookup(g, key)
	if err != nil {
		return ClientState{}, err
	}
	return grp.client(k, d.set.now(), false), nil
}

// ResetClient gives the key's table entry in group g a full bucket again,
// as if the client had been away long enough to refill, and reports its
// state after that. It takes key as [Door.Client] does. The key's requests
// in flight, and the tokens they hold, are untouched, and settle as
// usual; its requests waiting for tokens they reserved (Budget.Queue)
// still go in when their wait is over. A key without an entry
// (ClientState.Entry false) has nothing of its own to reset: the group's
// shared bucket is every such client's and is left alone, as are a shared
// store's tokens.
func (d *Door) ResetClient(g Group, key string) (ClientState, error) {
	grp, k, err := d.lookup(g, key)
	if err != nil {
		return ClientState{}, err
	}
	return grp.client(k, d.set.now(), true), nil
}

// lookup returns group g and the table key that key names in it.
func (d *Door) lookup(g Group, key string) (*group, netip.Prefix, error) {
	grp, ok := d.groups[g]
	if !ok {
		return nil, netip.Prefix{}, fmt.Errorf("admit: unknown group %q (known: %v)", g, d.Groups())
	}
	k, err := grp.parseKey(key)
	return grp, k, err
}

// parseKey returns the table key that text names, as keyOf would find it
// in a request.
func (g *group) parseKey(text string) (netip.Prefix, error) {
	k := &g.budget.Key
	switch g.keyKind {
	case keyGlobal:
		if text != "global" {
			return netip.Prefix{}, fmt.Errorf("admit: group %q has one key for every request: want \"global\", not %q", g.name, text)
		}
		return globalKey, nil
	case keyHeader:
		key, ok, err := headerKey(g.authorization, text)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("admit: group %q is keyed by header %s: %w", g.name, k.Header, err)
		}
		if ok {
			return key, nil
		}
		return netip.Prefix{}, fmt.Errorf("admit: group %q is keyed by header %s: want its value, not an empty key", g.name, k.Header)
	case keyPath:
		if text == "" {
			return netip.Prefix{}, fmt.Errorf("admit: group %q is keyed by path value %s: want its value, not an empty key", g.name, k.PathValue)
		}
		return hashKey(text), nil
	case keyFunc:
		if text == "" {
			return netip.Prefix{}, fmt.Errorf("admit: group %q is keyed by its key function: want the value it returns, not an empty key", g.name)
		}
		return hashKey(text), nil
	}
	p, ok := parseClient(text)
	if !ok {
		return netip.Prefix{}, fmt.Errorf("admit: group %q is keyed by the client: key %q is not an address or prefix", g.name, text)
	}
	return g.widen(p), nil
}

// parseClient reads an address or prefix as a client key: IPv4-mapped
// addresses as IPv4, zones dropped, masked to at most /32 or /64.
func parseClient(text string) (netip.Prefix, bool) {
	var a netip.Addr
	bits := -1
	if addr, n, found := strings.Cut(text, "/"); found {
		p, err := netip.ParsePrefix(text)
		if err != nil || strings.Contains(addr, "%") || n == "" {
			return netip.Prefix{}, false
		}
		a, bits = p.Addr(), p.Bits()
		if a.Is4In6() {
			a, bits = a.Unmap(), bits-96
			if bits < 0 {
				return netip.Prefix{}, false
			}
		}
	} else {
		addr, err := netip.ParseAddr(text)
		if err != nil {
			return netip.Prefix{}, false
		}
		a = addr.WithZone("").Unmap()
	}
	most := 64
	if a.Is4() {
		most = 32
	}
	if bits < 0 || bits > most {
		bits = most
	}
	p, err := a.Prefix(bits)
	return p, err == nil
}

// client reports the group's state for key at now, first giving its entry
// a full bucket when reset is set.
func (g *group) client(key netip.Prefix, now int64, reset bool) ClientState {
	st := ClientState{Key: keyText(key)}
	s := &g.shards[g.shardOf(key)]
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := g.engine.(*local)
	if !ok {
		st.Store = true
		st.Inflight, st.Held = int(s.perClient[key]), int(s.held[key])
		return st
	}
	if slot, tabled := s.table.Peek(key); tabled {
		e := s.table.At(slot)
		if reset {
			e.bucket = l.client.full(now)
		}
		st.Entry, st.Tokens, st.Held, st.Inflight = true, e.bucket.available(now, l.client), int(e.held), int(e.inflight)
		return st
	}
	st.Inflight = int(s.perClient[key])
	if !s.table.Full() {
		st.Tokens = l.client.burst
		return st
	}
	st.Shared = true
	l.mu.Lock()
	st.Tokens, st.Held = l.bucket.available(now, l.shared), int(l.sharedHeld)
	l.mu.Unlock()
	return st
}
