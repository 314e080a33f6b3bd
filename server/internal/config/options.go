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

// Target is the configuration of one front (the proxy and admit auth's
// Config, admit rls's RLS), which a table of options sets.
type Target interface {
	// Front names the front in its errors ("admit", "admit rls") and starts
	// its options' variables ("ADMIT_", "ADMIT_RLS_"), so that one
	// environment configures two fronts without one taking the other's
	// listener, certificate or failure policy.
	Front() (name, envPrefix string)
}

// Front names the proxy's and admit auth's errors and variables.
func (Config) Front() (string, string) { return "admit", "ADMIT_" }

// OptionFor is one setting of a front: a flag, the environment variable
// that sets it when the flag is not given, and a default. Set parses a
// value onto the config; the default goes through it too, so that every
// value is checked the same way and an error can name where the value came
// from.
type OptionFor[T Target] struct {
	Name    string   // the flag, without dashes
	aliases []string // older names of the flag, and their variables, for the same setting
	arg     string   // placeholder in the usage; empty for a boolean
	Def     string   // the default, as a value; empty: none
	multi   bool     // repeatable: each value adds to the others
	NoEnv   bool     // no environment variable
	secret  bool     // a store URL, which may hold a password: errors show it through storeurl.Redact
	hidden  bool     // a value that may be a credential throughout (--xds-headers): errors never show it
	oldEnv  []string // variables an earlier release read for it, still read after its own
	Usage   string
	Set     func(c *T, v string) error
	// running is the setting as a server runs it, which a reload compares
	// with what the server started with: only a restart applies a change.
	// Flags and the environment stay as they were at the start, so they
	// differ only when those do. nil: a reload may change it (a setting the
	// config file can give too, or one that only prints), or the front
	// reloads only its files.
	running func(c T) any
}

// Option is a setting of the proxy or admit auth.
type Option = OptionFor[Config]

// isBool reports a boolean option: its flag needs no value.
func (o OptionFor[T]) isBool() bool { return o.arg == "" }

// spellings are the option's flags, its name first.
func (o OptionFor[T]) spellings() []string { return append([]string{o.Name}, o.aliases...) }

// Envs returns the option's environment variables, its own first, then its
// older names', then those of earlier releases.
func (o OptionFor[T]) Envs() []string {
	if o.NoEnv {
		return nil
	}
	var list []string
	for _, name := range o.spellings() {
		list = append(list, EnvNameOf[T](name))
	}
	return append(list, o.oldEnv...)
}

// EnvName returns the environment variable of a flag of the proxy: ADMIT_
// and the flag's name in capitals, with underscores for dashes.
func EnvName(flag string) string { return EnvNameOf[Config](flag) }

// EnvNameOf is EnvName for a flag of T's front.
func EnvNameOf[T Target](flag string) string {
	var t T
	_, prefix := t.Front()
	return prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// frontOf is the name T's front gives its errors.
func frontOf[T Target]() string {
	var t T
	name, _ := t.Front()
	return name
}

// Value is a value from below a front's own variables: another tool's,
// which a front reads in its mode for them (admit rls's reference mode).
type Value struct {
	V    string
	From string // the variables it came from, as errors name them
}

// OptionSetFor binds options to a flag set and applies them to a config:
// for each option the flags given, else its own variables, else the value
// Below holds for it, else its default, in one pass.
type OptionSetFor[T Target] struct {
	FS   *flag.FlagSet
	List []OptionFor[T] // the options it binds
	// Below holds values beneath the options' variables, by option name;
	// an empty one counts as unset, as an empty variable does. nil: none.
	Below    map[string]Value
	given    map[string][]string // option name -> the flag values given, in order
	spelled  map[string]string   // option name -> the spelling of its flags given last
	conflict error               // two spellings of one option given different values
	source   map[string]string   // option name -> where its value came from, once applied
}

// OptionSet is an option set of the proxy or admit auth.
type OptionSet = OptionSetFor[Config]

func NewOptionSet[T Target](name string, options []OptionFor[T]) *OptionSetFor[T] {
	s := &OptionSetFor[T]{FS: flag.NewFlagSet(name, flag.ContinueOnError), List: options,
		given: make(map[string][]string), spelled: make(map[string]string), source: make(map[string]string)}
	s.FS.SetOutput(io.Discard)
	s.FS.Usage = func() {}
	for _, o := range options {
		for _, name := range o.spellings() {
			record := func(v string) error {
				if !o.multi {
					s.checkSpelling(o.Name, name, v)
					s.given[o.Name] = s.given[o.Name][:0] // the last of a repeated flag wins
				}
				s.given[o.Name] = append(s.given[o.Name], v)
				s.spelled[o.Name] = name
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

// checkSpelling records a conflict when a setting's flag spelled one way
// was given a value and another spelling gives it a different one: which
// one the user meant is not the parser's to guess.
func (s *OptionSetFor[T]) checkSpelling(option, name, v string) {
	prev, ok := s.spelled[option]
	if !ok || prev == name || s.conflict != nil {
		return
	}
	if pv := s.given[option][len(s.given[option])-1]; pv != v {
		other := prev
		if other == option {
			other = name
		}
		s.conflict = fmt.Errorf("%s: --%s %q and --%s %q differ: --%s is another name of --%s; give one", frontOf[T](), prev, pv, name, v, other, option)
	}
}

// Parse reads the flags of args; the arguments after them are s.FS.Args().
// Its errors start with prefix.
func (s *OptionSetFor[T]) Parse(prefix string, args []string) error {
	if err := s.FS.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return s.flagError(prefix, err)
	}
	return s.conflict
}

// find returns the option a flag spells.
func (s *OptionSetFor[T]) find(flag string) (OptionFor[T], bool) {
	i := slices.IndexFunc(s.List, func(o OptionFor[T]) bool { return slices.Contains(o.spellings(), flag) })
	if i < 0 {
		return OptionFor[T]{}, false
	}
	return s.List[i], true
}

// flagError words the flag package's error, which spells flags with one dash
// and says nothing of --help, as the rest of the command line's errors are.
// Its messages are stable strings; one it does not know is kept.
func (s *OptionSetFor[T]) flagError(prefix string, err error) error {
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
		if o, ok := s.find(name); ok {
			return fmt.Errorf("%s: %s needs a value (%s %s)", prefix, dashed(name), dashed(name), o.arg)
		}
		return fmt.Errorf("%s: %s needs a value", prefix, dashed(name))
	}
	if arg, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return fmt.Errorf("%s: bad flag syntax %q; %s --help lists the flags", prefix, arg, prefix)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// Lookup returns the value the flags or the option's own variables give
// it (the last flag of a repeatable one), where it came from, and the
// spelling used, its name or an older one's; ok false when neither gives
// it, and its value is then Below's or its default.
func (s *OptionSetFor[T]) Lookup(getenv func(string) string, name string) (v, from, spelling string, ok bool) {
	o, found := s.find(name)
	if !found || o.Name != name {
		panic("admit: no option " + name)
	}
	vals, from, spelling := s.own(o, getenv)
	if vals == nil {
		return "", "", "", false
	}
	return vals[len(vals)-1], from, spelling, true
}

// own returns the values the flags or the option's own variables give it,
// where they came from and the spelling used; nil when neither does.
func (s *OptionSetFor[T]) own(o OptionFor[T], getenv func(string) string) (vals []string, from, spelling string) {
	if vals := s.given[o.Name]; vals != nil {
		return vals, s.source[o.Name], s.spelled[o.Name]
	}
	spellings := o.spellings()
	for i, env := range o.Envs() {
		if v := getenv(env); v != "" {
			spelling := o.Name // a variable of an earlier release
			if i < len(spellings) {
				spelling = spellings[i]
			}
			return []string{v}, env, spelling
		}
	}
	return nil, "", ""
}

// Apply applies every option onto c, from its flags, else its own
// variables, else Below, else its default. Its errors start with the
// front's name ("admit: ") and name the flag or variable and the value
// they refuse.
func (s *OptionSetFor[T]) Apply(getenv func(string) string, c *T) error {
	if e, ok := any(c).(interface{ useEnv(func(string) string) }); ok {
		e.useEnv(getenv)
	}
	for _, o := range s.List {
		vals, from, _ := s.own(o, getenv)
		if b := s.Below[o.Name]; vals == nil && b.V != "" {
			vals, from = []string{b.V}, b.From
		}
		if vals != nil {
			s.source[o.Name] = from
		} else if o.Def != "" {
			vals, from = []string{o.Def}, "the default of --"+o.Name
		}
		for _, v := range vals {
			if err := o.Set(c, v); err != nil {
				switch {
				case o.hidden:
					v = "(not shown)"
				case o.secret:
					v = storeurl.Redact(v)
				}
				return fmt.Errorf("%s: %s %q: %w", frontOf[T](), from, v, err)
			}
		}
	}
	return nil
}

// Unexpected explains the first argument the flag package did not take; the
// usual one is the value of a boolean flag written as a separate word.
func (s *OptionSetFor[T]) Unexpected(args, rest []string) error {
	arg := rest[0]
	if i := len(args) - len(rest); i > 0 {
		if o, ok := s.find(strings.TrimLeft(args[i-1], "-")); ok && o.isBool() {
			return fmt.Errorf("%s: unexpected argument %q (a boolean flag takes its value as --flag=%s)", frontOf[T](), arg, arg)
		}
	}
	return fmt.Errorf("%s: unexpected argument %q", frontOf[T](), arg)
}

// From reports where an option's value came from, a flag, a variable or
// Below's variables, and false when it is the default.
func (s *OptionSetFor[T]) From(name string) (string, bool) {
	src, ok := s.source[name]
	return src, ok
}

// PrintOptions writes the usage of options, each with its placeholder,
// its variable, its default (false for a boolean without one) and its
// older names. Every front's -h is written by it.
func PrintOptions[T Target](w io.Writer, options []OptionFor[T]) {
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
		switch {
		case o.Def != "":
			notes = append(notes, fmt.Sprintf("default %q", o.Def))
		case o.isBool():
			notes = append(notes, `default "false"`) // what Apply leaves it without one
		}
		for _, a := range o.aliases {
			notes = append(notes, fmt.Sprintf("also --%s and %s", a, EnvNameOf[T](a)))
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
func Pick[T Target](options []OptionFor[T], names ...string) []OptionFor[T] {
	var out []OptionFor[T]
	for _, name := range names {
		i := slices.IndexFunc(options, func(o OptionFor[T]) bool { return o.Name == name })
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
