package storeurl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// Memcached is what a memcache:// URL configures.
type Memcached struct {
	// Servers are the URL's host:port, in its order.
	Servers []string
	// MaxIdleConns is its max_idle_conns, the idle connections kept to
	// each server (envoyproxy/ratelimit's MEMCACHE_MAX_IDLE_CONNS); 0 when
	// not given: memcachequota's default.
	MaxIdleConns int
}

// paramMaxIdle is the one parameter a memcache:// URL takes.
const paramMaxIdle = "max_idle_conns"

// CountsOnly reports a store that counts fixed windows and decides no
// token bucket: memcached, which admit rls alone takes, since the proxy
// and admit auth decide token buckets.
func (k Kind) CountsOnly() bool { return k == Memcache }

// ParseMemcache reads a memcache:// URL: one or more host:port, comma
// separated, and optionally ?max_idle_conns=N. It takes no user, password,
// path or fragment, since memcached's text protocol has none of them, and
// no space or control character.
func ParseMemcache(raw string) (Memcached, error) {
	rest, ok := strings.CutPrefix(raw, "memcache://")
	if !ok {
		return Memcached{}, errors.New("want a memcache:// URL")
	}
	if strings.ContainsFunc(rest, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) ||
		strings.ContainsAny(rest, "@/#") {
		return Memcached{}, errors.New("want memcache://host:port[,host:port...][?max_idle_conns=N]: no user, password, path, space or control character")
	}
	hosts, query, _ := strings.Cut(rest, "?")
	var m Memcached
	for h := range strings.SplitSeq(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			return Memcached{}, fmt.Errorf("memcached server %q: want host:port", h)
		}
		m.Servers = append(m.Servers, h)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Memcached{}, errors.New("not a valid URL query: percent-encode any ';' or '&' in a value")
	}
	for k, vs := range q {
		if k != paramMaxIdle {
			return Memcached{}, fmt.Errorf("unknown parameter %q: a memcache:// URL takes %s only", k, paramMaxIdle)
		}
		n, err := strconv.Atoi(vs[len(vs)-1])
		if len(vs) > 1 || err != nil || n < 1 {
			return Memcached{}, fmt.Errorf("%s %q: want one whole number, at least 1", paramMaxIdle, strings.Join(vs, ","))
		}
		m.MaxIdleConns = n
	}
	return m, nil
}
