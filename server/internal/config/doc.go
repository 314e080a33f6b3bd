// Package config is the server's configuration model and its loading: one
// table of options (Options: each setting's flag, environment variable,
// default, parser and, for those only a restart applies, how a reload
// compares it), the config file's reader, with one table of a budget's
// fields (budgetFields) that reads, validates and writes each field back,
// the routes as the configuration gives them, and the door their budgets
// make. Every error names the flag, variable or file line at fault, in the
// configuration's own words; the door reports a refused combination of
// fields by their Go names, and BudgetsError rewords it with the file's.
//
// It is internal to the server: a program embeds the server through
// server.Load and server.New, which read the same flags and file.
package config
