// Package h1 is the proxy's own HTTP/1.1 engine for the requests that
// are most of its traffic and all of a flood's: bodiless HTTP/1.1
// requests with a plain head. It serves them without net/http's server
// around the handler (a goroutine and deadline changes per request to
// watch the client, a copy of the header at WriteHeader), which costs a
// refusal and an allowed request about a sixth less CPU; a request that
// runs longer than a millisecond is watched as net/http watches every
// request.
//
// Anything else it hands over, with its connection and before it has
// read a byte of that request, to the net/http server it is given: a
// request with a body or Expect, an upgrade, a head over 4 KiB, a target
// that is not a path, a byte outside printable ASCII, a header line
// net/http might read in a way of its own (obs-fold, bare LF, a Pragma
// that net/http turns into Cache-Control), HTTP/1.0, HTTP/2's preface.
// Every request the engine serves is one net/http's server reads to the
// same *http.Request (FuzzHead holds it to that), every answer reaches
// the client as net/http's server would send it (TestAnswersAsNetHTTP),
// so the handler cannot tell the two apart; and once handed over, the
// connection goes on with net/http.
package h1
