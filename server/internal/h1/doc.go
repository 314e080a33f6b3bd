// Package h1 is the proxy's own HTTP/1.1 engine for the requests that
// are most of its traffic and all of a flood's: bodiless HTTP/1.1
// requests with a plain head. It serves them without net/http's server
// around the handler (a goroutine and deadline changes per request to
// watch the client, a copy of the header at WriteHeader), which
// BenchmarkServe and the proxy's benchmark (docs/performance.md) measure; a
// request that runs longer than 10 ms is watched, within 20 ms, as
// net/http watches every request. It serves plaintext listeners only.
//
// Anything else it hands over, with its connection and the bytes it has
// buffered, before it has consumed any of that request, to the net/http
// server it is given: a request with a body or Expect, an upgrade, a head
// not whole within its 4 KiB buffer or cut short, a target that is not a
// path, CONNECT and PRI, a missing, repeated or invalid Host, a
// Connection other than close or keep-alive, a byte outside printable
// ASCII, a header line net/http might read in a way of its own (obs-fold,
// bare LF, a Pragma that net/http turns into Cache-Control), HTTP/1.0,
// HTTP/2's preface. Every request the engine serves is one net/http's
// server reads to the same *http.Request (FuzzHead holds it to that), and
// its answers reach the client alike (TestAnswersAsNetHTTP compares what
// the client reads: status, fields, body, trailers, framing, reuse); its
// ResponseWriter has no Hijack, CloseNotify or ReadFrom, which no handler
// of the proxy's uses on such a request. Once handed over, the connection
// goes on with net/http. --http-engine net/http leaves every connection
// to net/http, should the engine read something wrongly.
package h1
