package server

import "github.com/admitgo/admit/server/internal/config"

// ReferenceName is the name the binary answers to as envoyproxy/ratelimit
// does: run as ratelimit (the path its images and examples start,
// /bin/ratelimit), admit is admit rls in reference mode.
const ReferenceName = "ratelimit"

// AsReference returns the arguments of a process started under
// [ReferenceName]: admit rls's in reference mode (--env envoy), so that
// `ratelimit` serves and `ratelimit validate` checks what the reference's
// environment names.
func AsReference(args []string) []string {
	mode := "--env=" + config.EnvReference
	if len(args) > 0 && args[0] == "validate" {
		return append([]string{"rls", "validate", mode}, args[1:]...)
	}
	return append([]string{"rls", mode}, args...)
}
