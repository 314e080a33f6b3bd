// Package bench puts admit's door beside the rate-limiting middleware that
// Go services commonly use, under one HTTP workload, so that anyone can rerun
// the comparison.
//
// Every [Peer] wraps the same trivial handler, sees the same requests and
// writes to the same [Discard] writer. Each is keyed by the TCP peer
// (RemoteAddr) and trusts no forwarding header, which is each library's safe
// setting for a server that faces clients directly. [Ample] budgets admit
// every request of the allowed cases; [Tight] budgets reject all but the
// first request of a client.
//
// The module is separate from admit's own so that the peers' dependencies
// never reach admit's users. Run everything with bench/run.
package bench
