package memcachequota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/admitgo/admit/quota"
)

// DefaultCountPrefix starts every counter's key when [CounterConfig].Prefix
// is empty, as redisquota's.
const DefaultCountPrefix = "admit:count:"

// DefaultTimeout bounds a Count when [CounterConfig].Timeout is 0.
const DefaultTimeout = 100 * time.Millisecond

// DefaultMaxIdleConns is how many idle connections to each server a
// Counter keeps when [CounterConfig].MaxIdleConns is 0.
const DefaultMaxIdleConns = 16

// DefaultMaxConns is how many calls a Counter has in flight to each server
// at most when [CounterConfig].MaxConns is 0.
const DefaultMaxConns = 128

// maxPrefix is the longest Prefix: with a counter's key, its window and
// its window's start, a key stays within memcached's 250 bytes.
const maxPrefix = 128

// maxRelative is the longest expiry memcached reads as seconds from now,
// 30 days; a longer one it reads as a Unix time.
const maxRelative = 30 * 24 * 60 * 60

// addTries bounds the rounds of incr and add one counter takes: a round
// ends without a count only when the key appeared between the incr and the
// add, and then expired or was evicted before the next incr.
const addTries = 3

var (
	// ErrConfig reports a configuration the counter cannot work with.
	ErrConfig = errors.New("memcachequota: invalid config")
	// ErrClosed is the error of a call after [Counter.Close].
	ErrClosed = errors.New("memcachequota: counter closed")
)

// CounterConfig configures a [Counter]. Servers is required; every other
// zero field means its default.
type CounterConfig struct {
	// Servers are the memcached servers, host:port each; a counter lives on
	// one of them, chosen by the CRC-32 of its key.
	Servers []string
	// Prefix starts every key; empty means [DefaultCountPrefix]. It must be
	// printable ASCII without spaces, at most 128 bytes.
	Prefix string
	// MaxIdleConns is how many idle connections to each server are kept
	// for later calls; 0 means [DefaultMaxIdleConns]. A call that finds none
	// dials one.
	MaxIdleConns int
	// MaxConns is how many calls are in flight to each server at most, and
	// so how many connections it has open beyond the idle ones; 0 means
	// [DefaultMaxConns]. A call past them waits for one within its
	// Timeout: a memcached that stops answering is not handed a new
	// connection for every call.
	MaxConns int
	// Timeout bounds each Count, dialling and every round trip included;
	// 0 means [DefaultTimeout].
	Timeout time.Duration
	// Now is the clock windows are aligned by; nil means time.Now.
	// memcached has no clock a client can count by, so replicas that
	// share a memcached should keep theirs in step, as
	// envoyproxy/ratelimit's must. Tests inject one.
	Now func() time.Time
}

// Counter counts hits in fixed windows aligned to the Unix epoch in
// memcached, as envoyproxy/ratelimit's memcache backend counts: every hit
// is added, over a limit or not, and the caller decides from the count
// after. Each counter's window is one key, Prefix + Key + ":" + window
// seconds + ":" + the window's start in Unix seconds, holding the count
// as memcached's decimal number.
//
// A hit is added with incr, which memcached applies atomically and
// answers with the count after. A key that is not there is created with
// add, holding the hit's N and expiring a second after its window ends;
// when add finds that another caller created it in between, incr adds to
// it. Unlike the reference, which reads the counts and adds them
// afterwards, the count a hit gets is the one its own incr made, so
// concurrent callers each see a distinct count.
//
// Use [NewCounter]; the zero Counter is not usable. It is safe for
// concurrent use.
type Counter struct {
	client  *client
	prefix  string
	timeout time.Duration
	now     func() time.Time
}

// NewCounter returns a counter on cfg.Servers. It does not connect.
func NewCounter(cfg CounterConfig) (*Counter, error) {
	if len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("%w: no server", ErrConfig)
	}
	for _, s := range cfg.Servers {
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			return nil, fmt.Errorf("%w: server %q, want host:port", ErrConfig, s)
		}
	}
	if cfg.Timeout < 0 || cfg.MaxIdleConns < 0 || cfg.MaxConns < 0 {
		return nil, fmt.Errorf("%w: Timeout %v, MaxIdleConns %d and MaxConns %d, want 0 (the default) or more", ErrConfig, cfg.Timeout, cfg.MaxIdleConns, cfg.MaxConns)
	}
	if len(cfg.Prefix) > maxPrefix || (cfg.Prefix != "" && checkKey(cfg.Prefix) != nil) {
		return nil, fmt.Errorf("%w: Prefix %q, want printable ASCII without spaces, at most %d bytes", ErrConfig, cfg.Prefix, maxPrefix)
	}
	var d net.Dialer
	maxConns := cmp.Or(cfg.MaxConns, DefaultMaxConns)
	slots := make(map[string]chan struct{}, len(cfg.Servers))
	for _, s := range cfg.Servers {
		slots[s] = make(chan struct{}, maxConns)
	}
	c := &Counter{
		client: &client{servers: cfg.Servers, maxIdle: cfg.MaxIdleConns, dial: d.DialContext, idle: map[string][]*conn{}, slots: slots},
		prefix: cfg.Prefix, timeout: cfg.Timeout, now: cfg.Now,
	}
	if c.prefix == "" {
		c.prefix = DefaultCountPrefix
	}
	if c.client.maxIdle == 0 {
		c.client.maxIdle = DefaultMaxIdleConns
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Close closes the idle connections; later calls fail with [ErrClosed].
// It always returns nil.
func (c *Counter) Close() error {
	c.client.close()
	return nil
}

// countGroup is the hits of one Count call on one counter, in order.
type countGroup struct {
	key   string
	exp   int64 // memcached's exptime of a new key
	total uint64
	hits  []*quota.Hit
}

// Count adds each hit's N to its counter's count in the window that holds
// the clock's current time, in order, and sets the hit's Count to the
// count after, so that two hits on one counter see one another as two
// requests would; hits on one counter are added with one incr. It returns
// the time it counted by, in whole seconds. A hit whose key memcached
// cannot carry (see [quota.Hit]) refuses the whole call before anything
// is sent. An error means memcached did not answer within the timeout or
// failed; some hits may then have been counted. A failed call is never
// retried.
func (c *Counter) Count(ctx context.Context, hits []quota.Hit) (time.Time, error) {
	sec := c.now().Unix()
	var groups []*countGroup
	index := make(map[string]*countGroup, len(hits))
	for i := range hits {
		h := &hits[i]
		if h.Window < time.Second || h.Window%time.Second != 0 {
			return time.Time{}, fmt.Errorf("memcachequota: window %v, want whole seconds, at least one", h.Window)
		}
		w := int64(h.Window / time.Second)
		start := sec - sec%w
		key := c.prefix + h.Key + ":" + strconv.FormatInt(w, 10) + ":" + strconv.FormatInt(start, 10)
		g := index[key]
		if g == nil {
			if err := checkKey(key); err != nil {
				return time.Time{}, fmt.Errorf("memcachequota: counter key %q: %w", quoteStart(h.Key), err)
			}
			g = &countGroup{key: key, exp: expiry(sec, start, w)}
			index[key] = g
			groups = append(groups, g)
		}
		g.total += h.N
		g.hits = append(g.hits, h)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for _, g := range groups {
		after, err := c.add(ctx, g)
		if err == nil && after < g.total {
			err = fmt.Errorf("count %d below the %d just added", after, g.total)
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("memcachequota: count: %w", err)
		}
		count := after - g.total
		for _, h := range g.hits {
			count += h.N
			h.Count = count
		}
	}
	return time.Unix(sec, 0), nil
}

// add adds g's total to its counter and returns the count after; a total
// of 0 reads it.
func (c *Counter) add(ctx context.Context, g *countGroup) (uint64, error) {
	if g.total == 0 {
		v, _, err := c.client.read(ctx, g.key)
		return v, err
	}
	for range addTries {
		v, found, err := c.client.incr(ctx, g.key, g.total)
		if err != nil || found {
			return v, err
		}
		stored, err := c.client.add(ctx, g.key, g.total, g.exp)
		if err != nil || stored {
			return g.total, err
		}
		// Another caller created the key since the incr: add to it.
	}
	return 0, fmt.Errorf("the counter was created and gone again %d times in one call", addTries)
}

// expiry is memcached's exptime for a counter of the window of w seconds
// starting at start, created at sec: a second after the window ends, in
// seconds from now while that is at most 30 days, which memcached reads as
// such, else as the Unix time it reads beyond them.
func expiry(sec, start, w int64) int64 {
	if rel := start + w - sec + 1; rel <= maxRelative {
		return rel
	}
	return start + w + 1
}

// quoteStart is the start of a refused key, for errors: enough to find it,
// never all of an over-long one.
func quoteStart(key string) string {
	if len(key) > 40 {
		return strings.ToValidUTF8(key[:40], "?") + "..."
	}
	return key
}
