package config

import (
	"errors"
	"io"
	"log/slog"
)

// UsageError is an error in a front's command line or configuration: the
// process exits 2, as the flag package's programs do, where any other
// error exits 1.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ExitCode is the exit code of a front's command that ended with err: 0
// for nil, 2 for a UsageError, 1 for any other.
func ExitCode(err error) int {
	var uerr UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &uerr):
		return 2
	}
	return 1
}

// NewLogger is every front's logger of lifecycle events: --log-format's
// handler (text or json) writing to w at --log-level and above.
func NewLogger(format string, level slog.Level, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
