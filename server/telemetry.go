package server

import (
	"fmt"

	"github.com/admitgo/admit/internal/meter"
	"github.com/admitgo/admit/server/listener"
)

// registerMetrics registers the server's own instruments: reloads,
// malformed requests and connections.
func (s *server) registerMetrics() (err error) {
	m := s.tel.Provider.Meter(meter.Name)
	if err := s.reloads.register(m); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	if s.malformedReg, err = s.malformed.register(m); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	if s.strippedReg, err = s.stripped.register(m); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	if s.connsReg, err = listener.Register(m, s.listenerCounts()); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	return nil
}
