package redisquota

import (
	"context"
	_ "embed"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is what the store needs from a go-redis client. *redis.Client (a
// failover client from redis.NewFailoverClient too), *redis.ClusterClient,
// *redis.Ring and *redis.AutoPipeliner satisfy it.
type Client interface {
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
}

// A script is a Lua source and its SHA-1, the name Redis caches it under.
type script struct {
	src  string
	hash string
	body string // src without clock.lua
	// A script a batch script can run on many buckets (see batch.lua): its
	// number there, and how many values it replies; 0 for the others.
	number, replies int
}

// newScript returns the script that is clock.lua followed by src: Redis
// scripts cannot include one another, so each carries the shared functions.
func newScript(src string) script {
	full := clockSrc + "\n" + src
	return script{src: full, hash: redis.NewScript(full).Hash(), body: src}
}

var (
	//go:embed clock.lua
	clockSrc string
	//go:embed fixed.lua
	fixedSrc string
	//go:embed gcra.lua
	gcraSrc string

	fixedScript = newScript(fixedSrc).batched(1, 3)
	gcraScript  = newScript(gcraSrc).batched(2, 4)
)

// eval runs sc on key by its SHA-1 and, when Redis answers NOSCRIPT (its
// script cache was flushed, or it restarted or failed over), once more with
// the source, which also caches it again. That second send is not a retry:
// Redis answers NOSCRIPT without running anything, so the script runs at most
// once.
func (s *Store) eval(ctx context.Context, sc script, key string, args ...any) *redis.Cmd {
	keys := []string{key}
	cmd := s.client.EvalSha(ctx, sc.hash, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = s.client.Eval(ctx, sc.src, keys, args...)
	}
	if cmd.Err() != nil {
		s.failed()
	}
	return cmd
}

// clockArgs returns the first two arguments of every script: the injected
// clock's time as Unix seconds and nanoseconds, or two empty strings, which
// tell the script to read the server's clock.
func (s *Store) clockArgs() (sec, nsec any) {
	if s.now == nil {
		return "", ""
	}
	now := s.now()
	return now.Unix(), now.Nanosecond()
}

// reloadEvery is how often, at most, a store asks a cluster client to reload
// its slot map after failed calls.
const reloadEvery = time.Second

// failed tells a cluster client that a call failed, so that it reloads its
// slot map, at most once per reloadEvery. After a master fails over,
// go-redis keeps sending the master's slots to the dead address, dial after
// refused dial, until a MOVED reply or its periodic reload
// (ClusterStateReloadInterval, a minute by default) shows it the new
// master; a refused dial is no reason for it to look. Asking after every
// failure, whatever it was, ends the outage within about a second of the
// failover; a reload costs one CLUSTER SLOTS, and go-redis runs at most one
// at a time.
func (s *Store) failed() {
	if s.cluster == nil {
		return
	}
	now := time.Now().UnixNano()
	last := s.reloaded.Load()
	if now-last < int64(reloadEvery) || !s.reloaded.CompareAndSwap(last, now) {
		return
	}
	s.cluster.ReloadState(context.Background()) // asynchronous: it only marks the map stale
}

// reloadState is what the store keeps to reload a cluster client's slot map.
type reloadState struct {
	cluster  *redis.ClusterClient // nil unless the client is one
	reloaded atomic.Int64         // when failed last asked for a reload, in Unix nanoseconds
}

// checkClient refuses clients New can see would retry commands or ignore
// context deadlines. go-redis normalises MaxRetries when it builds a client:
// -1 (off) becomes 0, and 0 (unset) becomes 3, except on a ClusterClient, which
// leaves retries off unless asked. A failover client is a *redis.Client whose
// Options are the FailoverOptions' own.
func checkClient(c Client) error {
	retries, deadlines := 0, true
	switch c := c.(type) {
	case *redis.Client:
		retries, deadlines = c.Options().MaxRetries, c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		retries, deadlines = c.Options().MaxRetries, c.Options().ContextTimeoutEnabled
		// The cluster client also re-sends a command after a dropped
		// connection, up to MaxRedirects times, whatever MaxRetries says.
		if r := c.Options().MaxRedirects; r > 0 {
			return fmt.Errorf("%w: the cluster client re-sends commands after a dropped connection (MaxRedirects %d), so a script could run twice; set MaxRedirects to -1", ErrConfig, r)
		}
	case *redis.Ring:
		retries, deadlines = c.Options().MaxRetries, c.Options().ContextTimeoutEnabled
	}
	if retries > 0 {
		return fmt.Errorf("%w: the client retries commands (MaxRetries %d), so a retried script could count one call twice; set MaxRetries to -1", ErrConfig, retries)
	}
	if !deadlines {
		return fmt.Errorf("%w: the client ignores context deadlines, so Timeout cannot bound a call; set ContextTimeoutEnabled", ErrConfig)
	}
	return nil
}
