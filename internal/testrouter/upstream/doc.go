// Package upstream is the bookkeeping the Go upstream apps of testrouter share:
// the hit counter of the limited handler, the record of the last request, and
// the control endpoints that report both. Each app brings only its router.
//
// It imports the standard library only, so that the apps built from it show
// their own router's behaviour and nothing else. The gorilla app, a module of
// its own, imports it through a replace directive to this tree.
package upstream
