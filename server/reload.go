package server

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/config"
)

// reload reads the configuration again, through the same parse as startup,
// and swaps in the door and routes it builds: groups whose budget is
// unchanged keep their clients' state, changed and new groups start afresh,
// and requests in flight finish as they were admitted. A configuration
// startup would refuse, or one that changes a setting only a restart can
// apply, is refused: the last one goes on serving, and the refusal is
// logged with startup's message. Every reload counts in
// admit.config.reloads. It is safe for concurrent use.
func (s *server) reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	err := s.reloadLocked()
	if aerr := s.access.reopen(); aerr != nil {
		s.log.Error("admit: reload: the access log could not be opened again; writing to the file open before", "err", aerr.Error())
	}
	s.reloads.add(s.clock(), err)
	if err != nil {
		s.log.Error("admit: reload refused; serving the configuration loaded before", "err", err.Error())
		return err
	}
	return nil
}

func (s *server) reloadLocked() error {
	if s.reparse == nil {
		return errors.New("admit: reload: this server has no command line to read again")
	}
	prev := s.gen.Load()
	cfg, err := s.reparse()
	if err != nil {
		return err
	}
	cfg.Now, cfg.Transport = prev.cfg.Now, prev.cfg.Transport // not settings
	if err := config.CheckRestartOnly(prev.cfg, cfg); err != nil {
		return err
	}
	g, err := s.build(cfg, prev.door)
	if err != nil {
		return err
	}
	s.gen.Store(g)
	var kept, afresh []string
	for _, name := range g.door.Groups() {
		nb, _ := g.door.Budget(name)
		if ob, ok := prev.door.Budget(name); ok && sameBudget(ob, nb) {
			kept = append(kept, string(name))
		} else {
			afresh = append(afresh, string(name))
		}
	}
	s.log.Info("admit: reloaded", "config", cfg.ConfigFile, config.FieldRoutes, len(cfg.Routes),
		"kept", strings.Join(kept, ","), "afresh", strings.Join(afresh, ","))
	logRoutes(s.log, cfg, g.door)
	return nil
}

// sameBudget reports whether two resolved budgets decide alike, as the door
// judges whether a reload keeps a group.
func sameBudget(a, b admit.Budget) bool {
	if !sameStore(a.Store, b.Store) || a.Key.Func != nil || b.Key.Func != nil ||
		!slices.Equal(a.Exempt, b.Exempt) || !slices.Equal(a.ExemptKeys, b.ExemptKeys) {
		return false
	}
	a.Store, b.Store = nil, nil
	a.Exempt, b.Exempt, a.ExemptKeys, b.ExemptKeys = nil, nil, nil, nil
	return reflect.DeepEqual(a, b) // == cannot compare a struct holding a func
}

func sameStore(a, b quota.Charger) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// reloadCounter counts reloads by result in admit.config.reloads, and keeps
// the last one for the status page.
type reloadCounter struct {
	counter          metric.Int64Counter
	success, failure metric.AddOption
	registered       bool
	last             atomic.Pointer[reloadResult] // nil until the first reload
}

// reloadResult is how a reload ended: at when, and err its refusal, or nil.
type reloadResult struct {
	at  time.Time
	err error
}

func (c *reloadCounter) register(m metric.Meter) error {
	var err error
	c.counter, err = m.Int64Counter("admit.config.reloads",
		metric.WithDescription("Configuration reloads (SIGHUP), by result: success, or failure when the configuration was refused and the last one kept serving."),
		metric.WithUnit("{reload}"))
	if err != nil {
		return err
	}
	c.success = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "success")))
	c.failure = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "failure")))
	c.registered = true
	return nil
}

func (c *reloadCounter) add(at time.Time, err error) {
	c.last.Store(&reloadResult{at: at, err: err})
	if !c.registered {
		return
	}
	opt := c.failure
	if err == nil {
		opt = c.success
	}
	c.counter.Add(context.Background(), 1, opt)
}
