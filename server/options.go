package server

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

// option is one setting: a flag, the environment variable that sets it when
// the flag is not given, and a default. set parses a value onto the config;
// the default goes through it too, so that every value is checked the same
// way and an error can name where the value came from.
type option struct {
	name    string   // the flag, without dashes
	aliases []string // further flags, and their variables, for the same setting
	arg     string   // placeholder in the usage; empty for a boolean
	def     string   // the default, as a value; empty: none
	multi   bool     // repeatable: each value adds to the others
	noEnv   bool     // no environment variable
	oldEnv  []string // variables an earlier release read for it, still read after its own
	usage   string
	set     func(c *config, v string) error
	// running is the setting as a server runs it, which a reload compares
	// with what the server started with: only a restart applies a change.
	// Flags and the environment stay as they were at the start, so they
	// differ only when those do. nil: a reload may change it (a setting the
	// config file can give too, or one that only prints).
	running func(c config) any
}

// isBool reports a boolean option: its flag needs no value.
func (o option) isBool() bool { return o.arg == "" }

// envs returns the option's environment variables, its own first.
func (o option) envs() []string {
	if o.noEnv {
		return nil
	}
	list := []string{envName(o.name)}
	for _, a := range o.aliases {
		list = append(list, envName(a))
	}
	return append(list, o.oldEnv...)
}

// envName returns the environment variable of a flag: ADMIT_ and the flag's
// name in capitals, with underscores for dashes.
func envName(flag string) string {
	return "ADMIT_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// optionSet binds options to a flag set and applies them to a config: the
// flags given, then for each option not given its environment variable, then
// its default, in one pass.
type optionSet struct {
	fs      *flag.FlagSet
	options []option
	given   map[string][]string // option name -> the flag values given, in order
	source  map[string]string   // option name -> where its value came from, once applied
}

func newOptionSet(name string, options []option) *optionSet {
	s := &optionSet{fs: flag.NewFlagSet(name, flag.ContinueOnError), options: options,
		given: make(map[string][]string), source: make(map[string]string)}
	s.fs.SetOutput(io.Discard)
	s.fs.Usage = func() {}
	for _, o := range options {
		for _, name := range append([]string{o.name}, o.aliases...) {
			record := func(v string) error {
				if !o.multi {
					s.given[o.name] = s.given[o.name][:0] // the last of a repeated flag wins
				}
				s.given[o.name] = append(s.given[o.name], v)
				s.source[o.name] = "--" + name
				return nil
			}
			if o.isBool() {
				s.fs.BoolFunc(name, o.usage, record)
			} else {
				s.fs.Func(name, o.usage, record)
			}
		}
	}
	return s
}

// parse reads the flags of args; the arguments after them are s.fs.Args().
// Its errors start with prefix.
func (s *optionSet) parse(prefix string, args []string) error {
	if err := s.fs.Parse(args); err != nil {
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
func (s *optionSet) flagError(prefix string, err error) error {
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
		if i := slices.IndexFunc(s.options, func(o option) bool { return o.name == name || slices.Contains(o.aliases, name) }); i >= 0 {
			return fmt.Errorf("%s: %s needs a value (%s %s)", prefix, dashed(name), dashed(name), s.options[i].arg)
		}
		return fmt.Errorf("%s: %s needs a value", prefix, dashed(name))
	}
	if arg, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return fmt.Errorf("%s: bad flag syntax %q; %s --help lists the flags", prefix, arg, prefix)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// apply applies every option onto c, from its flags, else its variable, else
// its default. Its errors start with "admit: " and name the flag or variable
// and the value they refuse.
func (s *optionSet) apply(getenv func(string) string, c *config) error {
	for _, o := range s.options {
		vals := s.given[o.name]
		from := s.source[o.name]
		if vals == nil {
			for _, env := range o.envs() {
				if v := getenv(env); v != "" {
					vals, from = []string{v}, env
					s.source[o.name] = env
					break
				}
			}
		}
		if vals == nil && o.def != "" {
			vals, from = []string{o.def}, "the default of --"+o.name
		}
		for _, v := range vals {
			if err := o.set(c, v); err != nil {
				if o.name == "store" {
					v = storeurl.Redact(v)
				}
				return fmt.Errorf("admit: %s %q: %w", from, v, err)
			}
		}
	}
	return nil
}

// unexpected explains the first argument the flag package did not take; the
// usual one is the value of a boolean flag written as a separate word.
func (s *optionSet) unexpected(args, rest []string) error {
	arg := rest[0]
	if i := len(args) - len(rest); i > 0 {
		name := strings.TrimLeft(args[i-1], "-")
		if i := slices.IndexFunc(s.options, func(o option) bool { return o.name == name || slices.Contains(o.aliases, name) }); i >= 0 && s.options[i].isBool() {
			return fmt.Errorf("admit: unexpected argument %q (a boolean flag takes its value as --flag=%s)", arg, arg)
		}
	}
	return fmt.Errorf("admit: unexpected argument %q", arg)
}

// from reports where an option's value came from, a flag or a variable, and
// false when it is the default.
func (s *optionSet) from(name string) (string, bool) {
	src, ok := s.source[name]
	return src, ok
}

// printOptions writes the usage of options.
func printOptions(w io.Writer, options []option) {
	for _, o := range options {
		fmt.Fprintf(w, "  --%s", o.name)
		if !o.isBool() {
			fmt.Fprintf(w, " %s", o.arg)
		}
		fmt.Fprintf(w, "\n    \t%s", o.usage)
		var notes []string
		if envs := o.envs(); len(envs) > 0 {
			notes = append(notes, "env "+envs[0])
		}
		if o.def != "" {
			notes = append(notes, fmt.Sprintf("default %q", o.def))
		}
		for _, a := range o.aliases {
			notes = append(notes, fmt.Sprintf("also --%s and %s", a, envName(a)))
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

// pick returns the options named, in the order given.
func pick(options []option, names ...string) []option {
	var out []option
	for _, name := range names {
		i := slices.IndexFunc(options, func(o option) bool { return o.name == name })
		if i < 0 {
			panic("admit: no option " + name)
		}
		out = append(out, options[i])
	}
	return out
}

// checkRestartOnly refuses a reload that changes a setting only a restart
// applies, naming it; never its value, which may hold a password.
func checkRestartOnly(old, c config) error {
	for _, o := range options {
		if o.running != nil && !reflect.DeepEqual(o.running(old), o.running(c)) {
			env := ""
			if envs := o.envs(); len(envs) > 0 {
				env = " (" + envs[0] + ")"
			}
			return fmt.Errorf("admit: reload: --%s%s differs from what admit started with, and only a restart applies it; change it and restart, or change it back", o.name, env)
		}
	}
	return nil
}
