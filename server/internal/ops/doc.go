// Package ops is the operations surface every front of admit serves
// beside its own listener (the proxy, admit auth, admit rls): a meter
// provider of its own, exported at /metrics in the Prometheus text
// format, and the HTTP server of an operations listener, which answers
// only to its own names (package opshost) and bounds every phase of a
// request, since its clients are scrapers and probes that send one small
// request at once; admit rls's --http-listen (/healthcheck, /json) is
// served by it too.
//
// Each Telemetry has its own Prometheus registry, so that several fronts
// in one process (tests) do not share series.
package ops
