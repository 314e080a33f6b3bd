//go:build race

package outagetest

import "time"

// Fast bounds the p99 of the requests that do not wait for the store. The
// race detector slows every request, and these tests share the machine:
// ten times the bound without it still tells a request that waited for a
// store's timeout (100 ms at least) from one that did not.
const Fast = 50 * time.Millisecond
