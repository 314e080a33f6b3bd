package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/admitgo/admit/server/storeurl"
)

// Option is one setting: a flag, the environment variable that sets it when
// the flag is not given, and a default. set parses a value onto the config;
// the default goes through it too, so that every value is checked the same
// way and an error can name where the value came from.
type Option struct {
	Name    string   // the flag, without dashes
	aliases []string // further flags, and their variables, for the same setting
	arg     string   // placeholder in the usage; empty for a boolean
	Def     string   // the default, as a value; empty: none
	multi   bool     // repeatable: each value adds to the others
	NoEnv   bool     // no environment variable
	oldEnv  []string // variables an earlier release read for it, still read after its own
	Usage   string
	Set     func(c *Config, v string) error
	// running is the setting as a server runs it, which a reload compares
	// with what the server started with: only a restart applies a change.
	// Flags and the environment stay as they were at the start, so they
	// differ only when those do. nil: a reload may change it (a setting the
	// config file can give too, or one that only prints).
	running func(c Config) any
}

// isBool reports a boolean option: its flag needs no value.
func (o Option) isBool() bool { return o.arg == "" }

// Envs returns the option's environment variables, its own first.
func (o Option) Envs() []string {
	if o.NoEnv {
		return nil
	}
	list := []string{EnvName(o.Name)}
	for _, a := range o.aliases {
		list = append(list, EnvName(a))
	}
	return append(list, o.oldEnv...)
}

// EnvName returns the environment variable of a flag: ADMIT_ and the flag's
// name in capitals, with underscores for dashes.
func EnvName(flag string) string {
	return "ADMIT_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// OptionSet binds options to a flag set and applies them to a config: the
// flags given, then for each option not given its environment variable, then
// its default, in one pass.
type OptionSet struct {
	FS     *flag.FlagSet
	List   []Option            // the options it binds
	given  map[string][]string // option name -> the flag values given, in order
	source map[string]string   // option name -> where its value came from, once applied
}

func NewOptionSet(name string, options []Option) *OptionSet {
	s := &OptionSet{FS: flag.NewFlagSet(name, flag.ContinueOnError), List: options,
		given: make(map[string][]string), source: make(map[string]string)}
	s.FS.SetOutput(io.Discard)
	s.FS.Usage = func() {}
	for _, o := range options {
		for _, name := range append([]string{o.Name}, o.aliases...) {
			record := func(v string) error {
				if !o.multi {
					s.given[o.Name] = s.given[o.Name][:0] // the last of a repeated flag wins
				}
				s.given[o.Name] = append(s.given[o.Name], v)
				s.source[o.Name] = "--" + name
				return nil
			}
			if o.isBool() {
				s.FS.BoolFunc(name, o.Usage, record)
			} else {
				s.FS.Func(name, o.Usage, record)
			}
		}
	}
	return s
}

// Parse reads the flags of args; the arguments after them are s.FS.Args().
// Its errors start with prefix.
func (s *OptionSet) Parse(prefix string, args []string) error {
	if err := s.FS.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return s.flagError(prefix, err)
	}
	return nil
}

// flagError words the flag package's error, which spells flags with one dash
// and says nothing of --help, as the rest of the command line's errors are.
// Its messages are stable strings; one it does not know is kept.
func (s *OptionSet) flagError(prefix string, err error) error {
	msg := err.Error()
	dashed := func(name string) string {
		if len(name) == 1 {
			return "-" + name
		}
		return "--" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("%s: unknown flag %s; %s --help lists the flags", prefix, dashed(name), prefix)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		if i := slices.IndexFunc(s.List, func(o Option) bool { return o.Name == name || slices.Contains(o.aliases, name) }); i >= 0 {
			return fmt.Errorf("%s: %s needs a value (%s %s)", prefix, dashed(name), dashed(name), s.List[i].arg)
		}
		return fmt.Errorf("%s: %s needs a value", prefix, dashed(name))
	}
	if arg, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return fmt.Errorf("%s: bad flag syntax %q; %s --help lists the flags", prefix, arg, prefix)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// Apply applies every option onto c, from its flags, else its variable, else
// its default. Its errors start with "admit: " and name the flag or variable
// and the value they refuse.
func (s *OptionSet) Apply(getenv func(string) string, c *Config) error {
	c.getenv = getenv
	for _, o := range s.List {
		vals := s.given[o.Name]
		from := s.source[o.Name]
		if vals == nil {
			for _, env := range o.Envs() {
				if v := getenv(env); v != "" {
					vals, from = []string{v}, env
					s.source[o.Name] = env
					break
				}
			}
		}
		if vals == nil && o.Def != "" {
			vals, from = []string{o.Def}, "the default of --"+o.Name
		}
		for _, v := range vals {
			if err := o.Set(c, v); err != nil {
				if o.Name == "store" {
					v = storeurl.Redact(v)
				}
				return fmt.Errorf("admit: %s %q: %w", from, v, err)
			}
		}
	}
	return nil
}

// Unexpected explains the first argument the flag package did not take; the
// usual one is the value of a boolean flag written as a separate word.
func (s *OptionSet) Unexpected(args, rest []string) error {
	arg := rest[0]
	if i := len(args) - len(rest); i > 0 {
		name := strings.TrimLeft(args[i-1], "-")
		if i := slices.IndexFunc(s.List, func(o Option) bool { return o.Name == name || slices.Contains(o.aliases, name) }); i >= 0 && s.List[i].isBool() {
			return fmt.Errorf("admit: unexpected argument %q (a boolean flag takes its value as --flag=%s)", arg, arg)
		}
	}
	return fmt.Errorf("admit: unexpected argument %q", arg)
}

// From reports where an option's value came from, a flag or a variable, and
// false when it is the default.
func (s *OptionSet) From(name string) (string, bool) {
	src, ok := s.source[name]
	return src, ok
}

// PrintOptions writes the usage of options.
func PrintOptions(w io.Writer, options []Option) {
	for _, o := range options {
		fmt.Fprintf(w, "  --%s", o.Name)
		if !o.isBool() {
			fmt.Fprintf(w, " %s", o.arg)
		}
		fmt.Fprintf(w, "\n    \t%s", o.Usage)
		var notes []string
		if envs := o.Envs(); len(envs) > 0 {
			notes = append(notes, "env "+envs[0])
		}
		if o.Def != "" {
			notes = append(notes, fmt.Sprintf("default %q", o.Def))
		}
		for _, a := range o.aliases {
			notes = append(notes, fmt.Sprintf("also --%s and %s", a, EnvName(a)))
		}
		for _, e := range o.oldEnv {
			notes = append(notes, "also "+e)
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, "; "))
		}
		fmt.Fprintln(w)
	}
}

// Pick returns the options named, in the order given.
func Pick(options []Option, names ...string) []Option {
	var out []Option
	for _, name := range names {
		i := slices.IndexFunc(options, func(o Option) bool { return o.Name == name })
		if i < 0 {
			panic("admit: no option " + name)
		}
		out = append(out, options[i])
	}
	return out
}

// CheckRestartOnly refuses a reload that changes a setting only a restart
// applies, naming it; never its value, which may hold a password.
func CheckRestartOnly(old, c Config) error {
	for _, o := range slices.Concat(Options, AuthOptions) {
		if o.running != nil && !reflect.DeepEqual(o.running(old), o.running(c)) {
			env := ""
			if envs := o.Envs(); len(envs) > 0 {
				env = " (" + envs[0] + ")"
			}
			return fmt.Errorf("admit: reload: --%s%s differs from what admit started with, and only a restart applies it; change it and restart, or change it back", o.Name, env)
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: admit [flags]\n"+
		"       admit explain [flags] METHOD PATH   (admit explain -h for its flags)\n"+
		"       admit validate [flags]              check a configuration and print what it enforces\n"+
		"       admit schema [--store-table TABLE]  print the PostgreSQL store's SQL\n"+
		"       admit rls --config DIR [flags]      Envoy's rate limit service (admit rls -h for its flags)\n"+
		"       admit rls validate --config DIR     check its flags, environment and files, and print the limits\n"+
		"       admit auth --trusted-proxy CIDR     decide for nginx, Caddy or Traefik (admit auth -h for its flags)\n\n"+
		"admit is a rate-limiting reverse proxy for the anonymous routes of an app.\n"+
		"Each flag may also be set by the environment variable shown; the flag wins.\n\n")
	PrintOptions(w, Options)
}
