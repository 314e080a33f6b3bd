package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
)

// budgetOverride changes some fields of a group's default budget. A nil field
// keeps the default; apply puts the others onto a budget.
type budgetOverride struct {
	Rate            *rate.Limit    `yaml:"rate"` // tokens/s; .inf means unlimited
	Burst           *int           `yaml:"burst"`
	SharedRate      *rate.Limit    `yaml:"shared_rate"`
	SharedBurst     *int           `yaml:"shared_burst"`
	PerClient       *int           `yaml:"per_client"`
	Inflight        *int           `yaml:"inflight"`
	MaxClients      *int           `yaml:"max_clients"`
	ReadTimeout     *time.Duration `yaml:"read_timeout"`   // "10s"; 0 keeps the server's
	MaxBodyBytes    *int64         `yaml:"max_body_bytes"` // 0: no cap
	HoldTimeout     *time.Duration `yaml:"hold_timeout"`   // 0: no bound
	ChargeOnFailure *bool          `yaml:"charge_on_failure"`
}

// fileConfig is the schema of --config. Unknown fields are errors, so a typo
// never silently keeps a default.
type fileConfig struct {
	Routes []struct {
		Group   string `yaml:"group"`
		Pattern string `yaml:"pattern"`
	} `yaml:"routes"`
	Budgets map[string]budgetOverride `yaml:"budgets"`
}

// readFile reads the YAML config file at path: its routes come before those of
// --route, and its budgets are checked for the limits every door enforces.
func (c *config) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		var perr *os.PathError
		if errors.As(err, &perr) {
			return perr.Err // the path is in the message already
		}
		return err
	}
	var f fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && err != io.EOF {
		return yamlError(err)
	}
	if err := dec.Decode(new(fileConfig)); err != io.EOF {
		return errors.New("more than one YAML document")
	}
	c.ConfigFile = path
	for i, r := range f.Routes {
		if err := c.addRouteOf(r.Group, r.Pattern); err != nil {
			if checkGroup(r.Group) != nil {
				return fmt.Errorf("routes[%d]: %w", i, err)
			}
			return fmt.Errorf("routes[%d] %q: %w", i, r.Pattern, err)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(f.Budgets)) {
		if err := checkGroup(g); err != nil {
			return fmt.Errorf("budgets: %w", err)
		}
		o := f.Budgets[g]
		if err := o.validate(); err != nil {
			return fmt.Errorf("budgets.%s.%w", g, err)
		}
		if o.Rate != nil && math.IsInf(float64(*o.Rate), 1) {
			*o.Rate = rate.Inf
		}
		if o.SharedRate != nil && math.IsInf(float64(*o.SharedRate), 1) {
			*o.SharedRate = rate.Inf
		}
		if c.Budgets == nil {
			c.Budgets = make(map[admit.Group]budgetOverride)
		}
		c.Budgets[admit.Group(g)] = o
	}
	return nil
}

// yamlError turns the decoder's errors into one line, without Go type names.
func yamlError(err error) error {
	var terr *yaml.TypeError
	if !errors.As(err, &terr) {
		return err
	}
	msg := strings.Join(terr.Errors, "; ")
	return errors.New(inType.ReplaceAllString(msg, ""))
}

var inType = regexp.MustCompile(` in type main\.\w+`)

// validate checks what every door requires of a budget, naming the field as
// the config file spells it. The door checks again; checking here ties the
// message to the file.
func (o budgetOverride) validate() error {
	for _, f := range []struct {
		name string
		v    *int
	}{
		{"burst", o.Burst}, {"shared_burst", o.SharedBurst}, {"per_client", o.PerClient},
		{"inflight", o.Inflight}, {"max_clients", o.MaxClients},
	} {
		if f.v != nil && *f.v < 1 {
			return fmt.Errorf("%s: must be at least 1, got %d", f.name, *f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *rate.Limit
	}{{"rate", o.Rate}, {"shared_rate", o.SharedRate}} {
		if f.v != nil && (*f.v < 0 || math.IsNaN(float64(*f.v))) {
			return fmt.Errorf("%s: must not be negative, got %v", f.name, float64(*f.v))
		}
	}
	if o.ReadTimeout != nil && *o.ReadTimeout < 0 {
		return fmt.Errorf("read_timeout: must not be negative, got %v", *o.ReadTimeout)
	}
	if o.MaxBodyBytes != nil && *o.MaxBodyBytes < 0 {
		return fmt.Errorf("max_body_bytes: must not be negative, got %d", *o.MaxBodyBytes)
	}
	if o.HoldTimeout != nil && *o.HoldTimeout < 0 {
		return fmt.Errorf("hold_timeout: must not be negative, got %v", *o.HoldTimeout)
	}
	return nil
}

// apply returns b with the fields o sets replaced.
func (o budgetOverride) apply(b admit.Budget) admit.Budget {
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	if o.Rate != nil {
		b.Rate = *o.Rate
	}
	if o.SharedRate != nil {
		b.SharedRate = *o.SharedRate
	}
	set(&b.Burst, o.Burst)
	set(&b.SharedBurst, o.SharedBurst)
	set(&b.PerClient, o.PerClient)
	set(&b.Inflight, o.Inflight)
	set(&b.MaxClients, o.MaxClients)
	if o.ReadTimeout != nil {
		b.ReadTimeout = *o.ReadTimeout
	}
	if o.MaxBodyBytes != nil {
		b.MaxBodyBytes = *o.MaxBodyBytes
	}
	if o.HoldTimeout != nil {
		b.HoldTimeout = *o.HoldTimeout
	}
	if o.ChargeOnFailure != nil {
		b.Charge = admit.ChargeAlways
		if *o.ChargeOnFailure {
			b.Charge = admit.ChargeOnFailure
		}
	}
	return b
}

// String lists the fields that are set, for logs and tests.
func (o budgetOverride) String() string {
	var parts []string
	add := func(name string, v any) { parts = append(parts, name+"="+fmt.Sprint(v)) }
	if o.Rate != nil {
		add("rate", float64(*o.Rate))
	}
	if o.Burst != nil {
		add("burst", *o.Burst)
	}
	if o.SharedRate != nil {
		add("shared_rate", float64(*o.SharedRate))
	}
	if o.SharedBurst != nil {
		add("shared_burst", *o.SharedBurst)
	}
	if o.PerClient != nil {
		add("per_client", *o.PerClient)
	}
	if o.Inflight != nil {
		add("inflight", *o.Inflight)
	}
	if o.MaxClients != nil {
		add("max_clients", *o.MaxClients)
	}
	if o.ReadTimeout != nil {
		add("read_timeout", *o.ReadTimeout)
	}
	if o.MaxBodyBytes != nil {
		add("max_body_bytes", *o.MaxBodyBytes)
	}
	if o.HoldTimeout != nil {
		add("hold_timeout", *o.HoldTimeout)
	}
	if o.ChargeOnFailure != nil {
		add("charge_on_failure", *o.ChargeOnFailure)
	}
	return strings.Join(parts, " ")
}
