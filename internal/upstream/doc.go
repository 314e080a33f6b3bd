// Package upstream holds the HTTP client admit forwards requests with.
//
// Client is net/http's Transport, configured for a proxy (Standard), with a
// direct path beside it (Direct) for plain-HTTP/1.1 upstreams: it runs in the
// handler's goroutine over pooled connections, writes a request in one
// system call and hands the answer's head to the client's header map in one
// allocation. The direct path takes the requests that need no second
// goroutine (no upgrade, no Expect, a body of known length up to 32 KiB);
// the proxy sends the others through the Transport. It sends what
// httputil.ReverseProxy with SetURL sends over the Transport, and reads
// answers more strictly than net/http does: what it refuses becomes a 502,
// never a guess.
//
// No answer is read from another answer's bytes. A connection carries a
// further request only when whatever comes next on it can be nothing but
// the next answer: both paths drop it after an answer whose end the
// upstream may see elsewhere than the proxy (unfit: a HEAD, a 204 or 304
// that frames a body), after more than five 1xx answers (refused), and when
// a byte waits past the answer's framing; the direct path asks the
// upstream to close after a HEAD, as Client.RoundTrip asks the Transport
// to on HTTP/1. The Transport puts a connection back in its pool after an
// answer with no body before Client.RoundTrip has that answer and can
// drop the connection, so a request that takes it in between waits until
// the RoundTrip before it has judged its answer (watched).
//
// An idle connection's stray bytes must make it unusable, and the two
// paths see them differently. net/http's Transport reads every idle
// connection in a goroutine of its own and closes one that sends what
// nobody asked for, but it puts a connection back in its pool, and may
// hand it to a waiting request, before that goroutine has looked at what
// it holds past the answer; Client.RoundTrip therefore waits, before a
// reused connection carries a request, until that reader waits on the
// socket with nothing unread (watched). The direct path has no goroutine
// per connection and adds none: it peeks at a connection (one
// non-blocking recv with MSG_PEEK) as it hands it out, which sees every
// byte that arrived while it was idle, at the only moment it matters. A
// watcher, one goroutine per idle connection or one on the poller for
// all, would close such a connection sooner but protect no request
// better: a byte that comes after the peek races the request as it races
// the Transport's reader, and is kept from mattering only by the rules
// above, which leave no answer whose body may come late on a connection
// that is reused. The idle timeout bounds how long a connection a peek
// would refuse stays open.
//
// The bare proxy that scripts/bench-proxy compares admit against uses
// Standard, the Transport alone.
package upstream
