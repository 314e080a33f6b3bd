// Package config is the server's configuration model and its loading: the
// command layer of its three fronts, one kind of option table read by one
// OptionSetFor (Options for the proxy and, with AuthOptions, admit auth;
// RLSOptions for admit rls: each setting's flag and older names,
// environment variable, default, parser and, for those only a restart
// applies, how a reload compares it), the config file's reader, with one table of a budget's
// fields (budgetFields) that reads, validates and writes each field back,
// the routes as the configuration gives them, and the door their budgets
// make. Every error names the flag, variable or file line at fault, in the
// configuration's own words. The door checks budgets and routes and
// refuses them as values (admit.BudgetError, with a store's
// quota.RuleError inside); BudgetsError and the route check word those
// values with the file's keys and the flags' names (doorWords), reading no
// message text. What is checked here is what only the server has: the
// flags that go together (--store-fail and --replicas), the file's own
// syntax, and a path key against the route's pattern. It also holds what
// every front's command shares: UsageError, ExitCode, NewLogger and
// CheckKeyPair (the certificate itself is package servertls's).
//
// It is internal to the server: a program embeds the server through
// server.Load and server.New, which read the same flags and file.
package config
