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
// The bare proxy that scripts/bench-proxy compares admit against uses
// Standard, the Transport alone.
package upstream
