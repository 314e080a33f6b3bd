package server

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// strippedCounts counts the request headers the proxy stripped as forged
// facts, by family: the rows of factTable a client's headers matched, less
// the forwarding headers admit replaces on every request. Its zero value is
// ready to use, a nil one counts nothing, and it is safe for concurrent
// use.
type strippedCounts struct {
	n [numFamilies]atomic.Int64
}

func (s *strippedCounts) add(f family) {
	if s != nil {
		s.n[f].Add(1)
	}
}

// register reports the counts as admit.server.stripped_headers, one series
// per family, their attribute sets built here once.
func (s *strippedCounts) register(meter metric.Meter) (metric.Registration, error) {
	c, err := meter.Int64ObservableCounter("admit.server.stripped_headers",
		metric.WithDescription("Request headers removed before the upstream because they claim a fact about the connection or the routing that only a trusted proxy may state, by family."),
		metric.WithUnit("{header}"))
	if err != nil {
		return nil, err
	}
	var opts [numFamilies][]metric.ObserveOption
	for f := range numFamilies {
		opts[f] = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.server.family", f.String())))}
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for f := range numFamilies {
			o.ObserveInt64(c, s.n[f].Load(), opts[f]...)
		}
		return nil
	}, c)
}
