package server

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckDescriptors(t *testing.T) {
	upstreamPool, files := 256, fileReserve
	tests := []struct {
		name  string
		args  []string
		limit uint64
		ok    bool
	}{
		{"defaults fit a systemd limit", nil, 524287, true},
		{"defaults need more than 4,096", nil, 4096, false},
		{"exactly the budget", []string{"--max-conns", "1000", "--metrics-max-conns", "10"}, uint64(1000 + 10 + upstreamPool + files), true},
		{"one over", []string{"--max-conns", "1000", "--metrics-max-conns", "10"}, uint64(1000 + 10 + upstreamPool + files - 1), false},
		{"a store's pool counts", []string{"--max-conns", "1000", "--metrics-max-conns", "10", "--store", "postgres://db/admit?pool_max_conns=20"},
			uint64(1000 + 10 + upstreamPool + files + 19), false},
		{"caps as large as an int holds do not wrap", []string{"--max-conns", "9223372036854775807", "--metrics-max-conns", "9223372036854775807"}, 1 << 62, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := serverConfig(t, append([]string{"--upstream", "http://127.0.0.1:1"}, tt.args...)...)
			err := checkDescriptors(cfg, tt.limit)
			if (err == nil) != tt.ok {
				t.Fatalf("limit %d: got %v, want ok %v", tt.limit, err, tt.ok)
			}
			if err != nil {
				for _, w := range []string{"--max-conns", "--metrics-max-conns", "RLIMIT_NOFILE", "LimitNOFILE"} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not name %s: %v", w, err)
					}
				}
			}
		})
	}
}

// TestStartupRefusesCapsOverTheLimit: caps no descriptor limit can hold
// stop the server before it opens anything, with exit status 2.
func TestStartupRefusesCapsOverTheLimit(t *testing.T) {
	if _, ok := openFilesLimit(); !ok {
		t.Skip("no RLIMIT_NOFILE here")
	}
	_, err := runArgs(t, nil, "--demo", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--max-conns", "2000000000")
	var uerr usageError
	if !errors.As(err, &uerr) || !strings.Contains(err.Error(), "RLIMIT_NOFILE") {
		t.Fatalf("got %v, want a usage error naming RLIMIT_NOFILE", err)
	}
}
