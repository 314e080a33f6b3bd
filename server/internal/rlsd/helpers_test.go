package rlsd

import (
	"strings"
	"time"

	"github.com/admitgo/admit/internal/testserver"
)

const testTimeout = 10 * time.Second

// withQuery returns raw with the query parameter kv added.
func withQuery(raw, kv string) string {
	if strings.Contains(raw, "?") {
		return raw + "&" + kv
	}
	return raw + "?" + kv
}

// The helpers every front's tests share (package testserver).
var (
	hostAnswer  = testserver.HostAnswer
	metricValue = testserver.MetricValue
	dialFrom    = testserver.DialFrom
)
