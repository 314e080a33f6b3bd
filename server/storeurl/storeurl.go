// Package storeurl reads the URL that names a shared store (--store): which
// store it is, the drivers' clients it configures, how many connections
// they may pool, and its text without the password, since the drivers'
// own errors repeat the URL.
package storeurl

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/quota/memcachequota"
)

// Kind is the store a URL names.
type Kind string

const (
	Memory   Kind = "memory"   // this process's own buckets
	Postgres Kind = "postgres" // postgres:// and postgresql://
	Redis    Kind = "redis"    // redis:// and rediss://, +cluster and +sentinel
	Memcache Kind = "memcache" // memcache://, fixed-window counts only (CountsOnly)
)

// Store is where token decisions are made. URL is the connection string as
// given: it may hold a password, so print it only through [Redact].
type Store struct {
	Kind Kind
	URL  string // empty for memory
}

// schemes are the URL schemes of each shared store.
var schemes = map[string]Kind{
	"postgres": Postgres, "postgresql": Postgres,
	"redis": Redis, "rediss": Redis,
	"redis+cluster": Redis, "rediss+cluster": Redis,
	"redis+sentinel": Redis, "rediss+sentinel": Redis,
	"memcache": Memcache,
}

// errUnparsable refuses a URL that is not one, or that two readers could
// take apart differently: a raw '@' in a password among them, where pgx
// ends the user part at the first '@' and net/url at the last. Its words hold nothing of the URL: a password
// with an unescaped '/', '?', '#' or '@' is what makes most URLs so, and
// url.Parse's error would quote its start.
var errUnparsable = errors.New("not a valid URL: percent-encode any '/', '?', '#', '@', ';' or space in the user name, the password and the parameters")

// Parse reads --store: memory, or a URL of a scheme a shared store takes.
// Its errors never hold the URL. A URL is taken only when net/url, pgx's
// parser and go-redis's read it alike: an '@' after the host (most likely
// a password with an unescaped '/', '?' or '#', which url.Parse would read
// as a path holding it), a '#' (pgx reads it as data, url.Parse as a
// fragment), a raw space or control character (pgx trims spaces around a
// parameter's name), and a query url.ParseQuery refuses (a ';', which it
// drops) are refused, so that Redact masks what every driver reads.
func Parse(v string) (Store, error) {
	if v == string(Memory) {
		return Store{Kind: Memory}, nil
	}
	scheme, _, ok := strings.Cut(v, "://")
	if !ok || schemes[scheme] == "" {
		return Store{}, errors.New("want memory or a postgres://, redis://, redis+cluster://, redis+sentinel:// or memcache:// URL")
	}
	if scheme == "memcache" {
		// Several hosts, comma separated, which net/url refuses; and
		// nothing secret, so nothing that Redact would mask.
		if _, err := ParseMemcache(v); err != nil {
			return Store{}, err
		}
		return Store{Kind: Memcache, URL: v}, nil
	}
	if !readAlike(v) {
		return Store{}, errUnparsable
	}
	return Store{Kind: schemes[scheme], URL: v}, nil
}

// readAlike reports a URL that net/url parses and that every store's
// parser reads as net/url does (see Parse).
func readAlike(v string) bool {
	_, rest, _ := strings.Cut(v, "://")
	u, err := url.Parse(v)
	if err != nil || strings.ContainsAny(v, "# ") || strings.ContainsFunc(v, unicode.IsControl) {
		return false
	}
	// One '@' at most, ending the user part: pgx splits the authority at
	// its first '@', net/url and go-redis at its last.
	if strings.Count(rest, "@") > 1 {
		return false
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 && strings.Contains(rest[i:], "@") {
		return false
	}
	_, err = url.ParseQuery(u.RawQuery)
	return err == nil
}

// secretParams are the query parameters of store URLs that hold secrets:
// go-redis's and libpq's password, and libpq's key passphrase.
var secretParams = []string{"password", "sslpassword"}

// isSecret reports a parameter of secretParams, in any case: a driver that
// does not know PASSWORD passes it on to the server, and it was meant as a
// password all the same.
func isSecret(param string) bool {
	return slices.ContainsFunc(secretParams, func(p string) bool { return strings.EqualFold(p, param) })
}

// Redact returns a store URL with its password, in the user part or as a
// parameter, replaced, and the rest as given. A URL Parse refuses is not
// shown at all: where its password ends is what is in doubt.
func Redact(v string) string {
	scheme, _, ok := strings.Cut(v, "://")
	if !ok {
		if v == string(Memory) || !strings.ContainsAny(v, ":@") {
			return v // nothing that could be a password
		}
		return "(not shown: not a store URL)"
	}
	if scheme == "memcache" && !strings.Contains(v, "@") {
		return v // no user part, so no password: memcached has none
	}
	if !readAlike(v) {
		return scheme + "://(not shown: not a valid URL)"
	}
	u, _ := url.Parse(v) // readAlike parsed it
	pairs := strings.Split(u.RawQuery, "&")
	for i, p := range pairs {
		k, _, _ := strings.Cut(p, "=")
		if k, err := url.QueryUnescape(k); err == nil && isSecret(k) {
			pairs[i] = k + "=xxxxx"
		}
	}
	u.RawQuery = strings.Join(pairs, "&")
	return u.Redacted()
}

// Check reports whether the store's driver takes its URL, without
// connecting.
func (s Store) Check() error {
	switch s.Kind {
	case Postgres:
		if _, query, _ := strings.Cut(s.URL, "?"); query != "" {
			if _, own, err := cutOwn("?" + query); err != nil || own[batchScriptParam] != nil {
				return errors.New("batch_script is a Redis URL's parameter: PostgreSQL would refuse it as unknown")
			}
		}
		_, err := pgxpool.ParseConfig(s.URL)
		return clean(s.URL, err)
	case Redis:
		o, err := parseRedis(s.URL)
		if err == nil {
			err = o.loadTLS()
		}
		return clean(s.URL, err)
	case Memcache:
		_, err := ParseMemcache(s.URL)
		return err
	}
	return nil
}

// clean drops raw, the URL, from a driver's error, which may repeat it:
// pgx redacts it on a best-effort basis only, and url.Error not at all.
// Whatever the error's type, the password and the parameters that hold
// secrets are then masked wherever its text still holds them.
func clean(raw string, err error) error {
	if err == nil {
		return nil
	}
	var perr *pgconn.ParseConfigError
	if errors.As(err, &perr) && perr.Unwrap() != nil {
		err = perr.Unwrap()
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	msg := err.Error()
	masked := msg
	for _, secret := range secrets(raw) {
		masked = strings.ReplaceAll(masked, secret, "xxxxx")
	}
	if masked != msg {
		return errors.New(masked)
	}
	return err
}

// secrets returns the secrets of a store URL as its text and the drivers'
// errors may spell them: the password, raw and unescaped, and the values
// of secretParams.
func secrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw, url.QueryEscape(pw), url.PathEscape(pw))
	}
	for k, vs := range u.Query() {
		if !isSecret(k) {
			continue
		}
		for _, v := range vs {
			if v != "" {
				out = append(out, v, url.QueryEscape(v))
			}
		}
	}
	return out
}

// Pool returns the PostgreSQL pool the URL configures; it connects lazily,
// on first use.
func Pool(ctx context.Context, raw string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, raw)
	return pool, clean(raw, err)
}

// errOffline answers every call of an offline pool or client.
var errOffline = errors.New("the store is offline: this client never connects")

// OfflinePool returns the pool the URL configures, unable to connect: its
// every dial fails, so that a store built on it checks its rules, and
// answers every call with an error, without reaching its server.
func OfflinePool(raw string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, clean(raw, err)
	}
	pc.MinConns, pc.MinIdleConns = 0, 0
	pc.ConnConfig.LookupFunc = func(context.Context, string) ([]string, error) { return nil, errOffline }
	pc.ConnConfig.DialFunc = func(context.Context, string, string) (net.Conn, error) { return nil, errOffline }
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	return pool, clean(raw, err)
}

// Offline is a Redis client that sends nothing: a store built on it checks
// its rules and answers every call with an error.
type Offline struct{}

// EvalSha answers with an error, sending nothing.
func (Offline) EvalSha(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return offlineCmd(ctx)
}

// Eval answers with an error, sending nothing.
func (Offline) Eval(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return offlineCmd(ctx)
}

func offlineCmd(ctx context.Context) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(errOffline)
	return cmd
}

// RedisClient builds the go-redis client a Redis store URL names: one
// server (redis://, rediss://), a cluster (redis+cluster://, every node
// after the first as an addr= parameter) or a Sentinel group
// (redis+sentinel://, the sentinels as host and addr= parameters, the
// master's name as master_name=). Each one is told never to send a command
// twice (a retried script could count a request twice) and to honour
// deadlines, so the store's timeout bounds a decision.
func RedisClient(raw string) (redis.UniversalClient, error) {
	o, err := parseRedis(raw)
	if err == nil {
		err = o.loadTLS()
	}
	if err != nil {
		return nil, clean(raw, err)
	}
	switch {
	case o.cluster != nil:
		o.cluster.MaxRetries, o.cluster.MaxRedirects, o.cluster.ContextTimeoutEnabled = -1, -1, true
		return redis.NewClusterClient(o.cluster), nil
	case o.failover != nil:
		o.failover.MaxRetries, o.failover.ContextTimeoutEnabled = -1, true
		return redis.NewFailoverClient(o.failover), nil
	}
	o.single.MaxRetries, o.single.ContextTimeoutEnabled = -1, true
	return redis.NewClient(o.single), nil
}

// Refused reports an error of a Redis command that Redis answered: a wrong
// password or database number, which waiting will not mend, rather than a
// server that does not answer.
func Refused(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// redisOptions are the parsed options of a Redis store URL; one of
// single, cluster and failover is set.
type redisOptions struct {
	single   *redis.Options
	cluster  *redis.ClusterOptions
	failover *redis.FailoverOptions
	// oneServer is the URL's batch_script=on: the URL reaches a Redis
	// server itself, not a proxy that routes commands by key.
	oneServer bool
	// files are the TLS files the URL names, which loadTLS reads.
	files tlsFiles
}

// parseRedis parses a Redis store URL by the rules of go-redis's parser
// for its topology, the +cluster or +sentinel suffix of the scheme removed,
// once admit's own parameters (batch_script and the TLS files) are taken
// out. It reads no file: loadTLS does.
func parseRedis(raw string) (redisOptions, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	base, topology, _ := strings.Cut(scheme, "+")
	var o redisOptions
	rest, own, err := cutOwn(rest)
	if err != nil {
		return o, err
	}
	if o.oneServer, err = batchScript(own[batchScriptParam]); err != nil {
		return o, err
	}
	if own[batchScriptParam] != nil && topology == "cluster" {
		return o, errors.New("batch_script is for one server: a cluster's buckets live on several")
	}
	if o.files, err = readTLSFiles(scheme, base == "rediss", own); err != nil {
		return o, err
	}
	plain := base + "://" + rest
	switch topology {
	case "cluster":
		o.cluster, err = redis.ParseClusterURL(plain)
	case "sentinel":
		o.failover, err = redis.ParseFailoverURL(plain)
		if err == nil && o.failover.MasterName == "" {
			err = errors.New("a redis+sentinel URL needs master_name=, the name the sentinels know the master by")
		}
	default:
		o.single, err = redis.ParseURL(plain)
	}
	return o, err
}

// Conns returns how many connections the client of a shared store may
// pool, as its URL sets them or by the driver's defaults: pgxpool's
// pool_max_conns (the larger of 4 and the CPUs); go-redis's pool_size and
// pipeline_pool_size for each node the URL names, and a connection to each
// sentinel; memcached's idle connections to each server (a call that finds
// none dials one, closed after it when the idle ones are enough). A URL it cannot parse counts nothing: opening the store reports
// it.
func (s Store) Conns() int {
	switch s.Kind {
	case Postgres:
		c, err := pgxpool.ParseConfig(s.URL)
		if err != nil {
			return 0
		}
		return int(c.MaxConns)
	case Redis:
		o, err := parseRedis(s.URL)
		if err != nil {
			return 0
		}
		switch {
		case o.cluster != nil:
			return len(o.cluster.Addrs) * redisPool(o.cluster.PoolSize, 5, o.cluster.PipelinePoolSize)
		case o.failover != nil:
			return redisPool(o.failover.PoolSize, 10, o.failover.PipelinePoolSize) + len(o.failover.SentinelAddrs)
		}
		return redisPool(o.single.PoolSize, 10, o.single.PipelinePoolSize)
	case Memcache:
		m, err := ParseMemcache(s.URL)
		if err != nil {
			return 0
		}
		return len(m.Servers) * cmp.Or(m.MaxIdleConns, memcachequota.DefaultMaxIdleConns)
	}
	return 0
}

// redisPool returns a go-redis node's connections: its pool, perProc for
// each GOMAXPROCS unless set, and its pipeline pool.
func redisPool(pool, perProc, pipeline int) int {
	if pool <= 0 {
		pool = perProc * runtime.GOMAXPROCS(0)
	}
	if pipeline <= 0 {
		pipeline = redis.DefaultPipelinePoolSize
	}
	return pool + pipeline
}
