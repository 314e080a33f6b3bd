package server

import (
	"fmt"
	"math"

	"github.com/admitgo/admit/internal/upstream"
	"github.com/admitgo/admit/server/internal/config"
)

// fileReserve is what the process holds open beside its connections: the
// two listeners, the runtime's poller, the standard streams, and the
// config, token and certificate files while they are read.
const fileReserve = 64

// descriptors is what a configuration may hold open at once, by what holds
// it.
type descriptors struct {
	proxy    int // --max-conns
	metrics  int // --metrics-max-conns
	upstream int // the upstream transport's idle pool
	store    int // a shared store's client pool
	files    int // fileReserve
}

// total returns the sum, saturated rather than overflowing on caps as large
// as an int holds.
func (d descriptors) total() uint64 {
	var sum uint64
	for _, n := range []int{d.proxy, d.metrics, d.upstream, d.store, d.files} {
		if sum+uint64(n) < sum {
			return math.MaxUint64
		}
		sum += uint64(n)
	}
	return sum
}

// budget returns the descriptors cfg needs at least. Each request in flight
// to the upstream holds one more while it is forwarded, so a proxy whose
// connections are all busy needs up to --max-conns beyond this; the budget
// counts what idle connections alone can take, the resource the caps exist
// to bound.
func budget(cfg config.Config) descriptors {
	d := descriptors{proxy: cfg.MaxConns, metrics: cfg.MetricsMaxConns,
		upstream: upstream.MaxIdleConnsPerHost, store: cfg.Store.Conns(), files: fileReserve}
	if cfg.Upstream == nil {
		d.upstream *= 2 // the demo app serves the other end in this process
	}
	return d
}

// checkDescriptors refuses cfg when its budget does not fit under limit, the
// process's RLIMIT_NOFILE. It refuses rather than warns: with caps above
// the limit, the limit is what bounds the process, and it does so by
// failing accepts and dials to the upstream and the store alike, the outage
// the caps exist to prevent, met under load or an attack instead of at
// startup, where a warning is easy to miss and exit 2 names the fix.
func checkDescriptors(cfg config.Config, limit uint64) error {
	d := budget(cfg)
	if d.total() <= limit {
		return nil
	}
	return fmt.Errorf("admit: --max-conns (ADMIT_MAX_CONNS) %d and --metrics-max-conns (ADMIT_METRICS_MAX_CONNS) %d, with %d for the upstream's idle connections, %d for the store's and %d for files, need %d open files, but the process may open %d (RLIMIT_NOFILE): lower --max-conns or --metrics-max-conns, or raise the limit (LimitNOFILE= in a systemd unit, ulimit -n)",
		d.proxy, d.metrics, d.upstream, d.store, d.files, d.total(), limit)
}
