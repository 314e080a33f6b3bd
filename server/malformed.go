package server

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/server/routes"
)

// malformedReasons names each canon error in the admit.server.malformed
// counter.
var malformedReasons = [...]struct {
	err    error
	reason string
}{
	{canon.ErrEncodedSlash, "encoded_slash"},
	{canon.ErrBadEscape, "bad_escape"},
	{canon.ErrNUL, "nul"},
	{canon.ErrFragment, "fragment"},
	{canon.ErrTarget, "target"},
	{canon.ErrMethod, "method"},
	{canon.ErrConnect, "connect"},
	{errMethodNotServed, "method_not_served"},
	{errAmbiguousOverride, "method_override"},
	{errNotAsForwarded, "not_as_forwarded"},
	{errForwarded, "not_one_request"},
	{errUntrusted, "untrusted_front"},
	{routes.ErrFormBody, "form_body"},
	{canon.ErrPathParameter, canon.PathParameter.String()},
	{canon.ErrEncodedPercent, canon.EncodedPercent.String()},
	{canon.ErrControl, canon.Control.String()},
	{canon.ErrNonASCII, canon.NonASCII.String()},
	{canon.ErrDelimiter, canon.EncodedDelimiter.String()},
	{canon.ErrHost, canon.BadHost.String()},
}

// malformedCounts counts the requests refused for having no canonical
// form, an ambiguous method override or a method admit does not forward,
// by reason.
type malformedCounts struct {
	n [len(malformedReasons)]atomic.Int64 // indexed like malformedReasons
}

// add counts err under its reason, and returns the reason.
func (m *malformedCounts) add(err error) string {
	for i, r := range malformedReasons {
		if errors.Is(err, r.err) {
			m.n[i].Add(1)
			return r.reason
		}
	}
	return "other"
}

// register reports the counts as admit.server.malformed.
func (m *malformedCounts) register(meter metric.Meter) (metric.Registration, error) {
	c, err := meter.Int64ObservableCounter("admit.server.malformed",
		metric.WithDescription("Requests refused before routing because they have no canonical form or an ambiguous method override (400), or a method admit does not forward (501), by reason."),
		metric.WithUnit("{request}"))
	if err != nil {
		return nil, err
	}
	opts := make([][]metric.ObserveOption, len(malformedReasons))
	for i, r := range malformedReasons {
		opts[i] = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.server.reason", r.reason)))}
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range malformedReasons {
			o.ObserveInt64(c, m.n[i].Load(), opts[i]...)
		}
		return nil
	}, c)
}
