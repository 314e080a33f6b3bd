//go:build !race

package outagetest

import "time"

// Fast bounds the p99 of the requests that do not wait for the store.
const Fast = 5 * time.Millisecond
