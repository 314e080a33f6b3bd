package rlsd

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/server/internal/config"
)

// TestRLSGRPCListenPrecedence takes admit rls's gRPC listener from
// --grpc-listen or its older name --listen, then ADMIT_RLS_GRPC_LISTEN or
// ADMIT_RLS_LISTEN, then in reference mode GRPC_HOST and GRPC_PORT (with
// the reference's defaults), then the default; an error names the layer
// the value came from.
func TestRLSGRPCListenPrecedence(t *testing.T) {
	const (
		flagAddr  = "127.0.0.1:9001"
		aliasAddr = "127.0.0.1:9002"
		varAddr   = "127.0.0.1:9003"
		aliasVar  = "127.0.0.1:9004"
	)
	ref := map[string]string{"GRPC_HOST": "127.0.0.5", "GRPC_PORT": "9005"}
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		reference bool
		want      string // the address, or with wantErr the error's start
		wantErr   bool
	}{
		{"default", nil, nil, false, ":8081", false},
		{"the reference's default in its mode", nil, nil, true, "0.0.0.0:8081", false},
		{"the reference's variables outside its mode", nil, ref, false, ":8081", false},
		{"the reference's variables", nil, ref, true, "127.0.0.5:9005", false},
		{"the variable over the reference's", nil, merge(ref, map[string]string{"ADMIT_RLS_GRPC_LISTEN": varAddr}), true, varAddr, false},
		{"the older name's variable over the reference's", nil, merge(ref, map[string]string{"ADMIT_RLS_LISTEN": aliasVar}), true, aliasVar, false},
		{"the variable over the older name's", nil, map[string]string{"ADMIT_RLS_GRPC_LISTEN": varAddr, "ADMIT_RLS_LISTEN": aliasVar}, false, varAddr, false},
		{"the flag over every variable", []string{"--grpc-listen", flagAddr}, merge(ref, map[string]string{"ADMIT_RLS_GRPC_LISTEN": varAddr, "ADMIT_RLS_LISTEN": aliasVar}), true, flagAddr, false},
		{"the older name's flag over every variable", []string{"--listen", aliasAddr}, merge(ref, map[string]string{"ADMIT_RLS_GRPC_LISTEN": varAddr}), true, aliasAddr, false},
		{"both flags, one value", []string{"--listen", flagAddr, "--grpc-listen", flagAddr}, nil, false, flagAddr, false},
		{"both flags, two values", []string{"--grpc-listen", flagAddr, "--listen", aliasAddr}, nil, false,
			`admit rls: --grpc-listen "` + flagAddr + `" and --listen "` + aliasAddr + `" differ`, true},
		{"a bad flag", []string{"--grpc-listen", "nowhere"}, ref, true, `admit rls: --grpc-listen "nowhere": missing port in address`, true},
		{"a bad older name's variable", nil, map[string]string{"ADMIT_RLS_LISTEN": "nowhere"}, false, `admit rls: ADMIT_RLS_LISTEN "nowhere": missing port in address`, true},
		{"a bad reference's variable", nil, map[string]string{"GRPC_PORT": "65536"}, true, `admit rls: GRPC_HOST, GRPC_PORT "0.0.0.0:65536": port must be a number from 0 to 65535`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := merge(tc.env, map[string]string{"ADMIT_RLS_CONFIG": "edge.yaml"})
			getenv := func(k string) string { return env[k] }
			if tc.reference {
				env = merge(env, map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379"})
				getenv = referenceEnv(env)
			}
			o, err := parseFlags(tc.args, getenv, io.Discard)
			switch {
			case tc.wantErr && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error starting %q", err, tc.want)
			case tc.wantErr:
				if code := config.ExitCode(Run(context.Background(), append([]string{"validate"}, tc.args...), getenv, io.Discard, io.Discard)); code != 2 {
					t.Errorf("admit rls validate: exit %d, want 2", code)
				}
			case err != nil:
				t.Fatalf("got %v, want %s", err, tc.want)
			case o.GRPCListen != tc.want:
				t.Errorf("got %q, want %q", o.GRPCListen, tc.want)
			}
		})
	}
}

// merge returns the variables of a and b, b's winning.
func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// TestRLSDrainTimeout takes how long calls in flight may finish after
// SIGTERM from --drain-timeout, as the proxy does, else from
// ADMIT_RLS_DRAIN_TIMEOUT, else 10 seconds; a value that is not a
// positive duration exits 2 naming where it came from.
func TestRLSDrainTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
		err  string
	}{
		{"default", nil, nil, 10 * time.Second, ""},
		{"flag", []string{"--drain-timeout", "3s"}, map[string]string{"ADMIT_RLS_DRAIN_TIMEOUT": "1s"}, 3 * time.Second, ""},
		{"variable", nil, map[string]string{"ADMIT_RLS_DRAIN_TIMEOUT": "250ms"}, 250 * time.Millisecond, ""},
		{"zero", []string{"--drain-timeout", "0s"}, nil, 0, `admit rls: --drain-timeout "0s": must be positive`},
		{"not a duration", nil, map[string]string{"ADMIT_RLS_DRAIN_TIMEOUT": "10"}, 0, `admit rls: ADMIT_RLS_DRAIN_TIMEOUT "10": not a duration`},
	} {
		env := merge(tc.env, map[string]string{"ADMIT_RLS_CONFIG": "edge.yaml"})
		getenv := func(k string) string { return env[k] }
		o, err := parseFlags(tc.args, getenv, io.Discard)
		switch {
		case tc.err != "":
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%s: got %v, want an error starting %q", tc.name, err, tc.err)
			}
			if code := config.ExitCode(Run(context.Background(), append([]string{"validate"}, tc.args...), getenv, io.Discard, io.Discard)); code != 2 {
				t.Errorf("%s: admit rls validate: exit %d, want 2", tc.name, code)
			}
		case err != nil || o.DrainTimeout != tc.want:
			t.Errorf("%s: got %v, %v; want %v", tc.name, o.DrainTimeout, err, tc.want)
		}
	}
}

// TestRLSNearLimitRatio takes the share of a limit past which hits count
// as near_limit from --near-limit-ratio, ADMIT_RLS_NEAR_LIMIT_RATIO or,
// in reference mode, NEAR_LIMIT_RATIO, else 0.8, the reference's default;
// a ratio that is not above 0 and at most 1 exits 2 naming where it came
// from.
func TestRLSNearLimitRatio(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		reference bool
		want      float64
		err       string
	}{
		{"default", nil, nil, false, 0.8, ""},
		{"the reference's default", nil, nil, true, 0.8, ""},
		{"flag", []string{"--near-limit-ratio", "0.5"}, map[string]string{"ADMIT_RLS_NEAR_LIMIT_RATIO": "0.6"}, false, 0.5, ""},
		{"variable", nil, map[string]string{"ADMIT_RLS_NEAR_LIMIT_RATIO": "1"}, false, 1, ""},
		{"the reference's variable", nil, map[string]string{"NEAR_LIMIT_RATIO": "0.25"}, true, 0.25, ""},
		{"the reference's variable outside its mode", nil, map[string]string{"NEAR_LIMIT_RATIO": "0.25"}, false, 0.8, ""},
		{"zero", []string{"--near-limit-ratio", "0"}, nil, false, 0, `admit rls: --near-limit-ratio "0": want a number above 0 and at most 1`},
		{"above 1", nil, map[string]string{"ADMIT_RLS_NEAR_LIMIT_RATIO": "1.5"}, false, 0, `admit rls: ADMIT_RLS_NEAR_LIMIT_RATIO "1.5": want a number above 0 and at most 1`},
		{"not a number", []string{"--near-limit-ratio", "NaN"}, nil, false, 0, `admit rls: --near-limit-ratio "NaN": want a number above 0 and at most 1`},
		{"the reference's, above 1", nil, map[string]string{"NEAR_LIMIT_RATIO": "2"}, true, 0, `admit rls: NEAR_LIMIT_RATIO "2": want a number above 0 and at most 1`},
	} {
		env := merge(tc.env, map[string]string{"ADMIT_RLS_CONFIG": "edge.yaml"})
		getenv := func(k string) string { return env[k] }
		if tc.reference {
			env = merge(env, map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379"})
			getenv = referenceEnv(env)
		}
		o, err := parseFlags(tc.args, getenv, io.Discard)
		switch {
		case tc.err != "":
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%s: got %v, want an error starting %q", tc.name, err, tc.err)
			}
			if code := config.ExitCode(Run(context.Background(), append([]string{"validate"}, tc.args...), getenv, io.Discard, io.Discard)); code != 2 {
				t.Errorf("%s: admit rls validate: exit %d, want 2", tc.name, code)
			}
		case err != nil || o.NearLimitRatio != tc.want:
			t.Errorf("%s: got %v, %v; want %v", tc.name, o.NearLimitRatio, err, tc.want)
		}
	}
}

// TestRLSStorePasswordNotShown: a store URL the driver cannot read is
// named without its password, --per-second-store's as --store's, given as
// a flag or made from the reference's variables.
func TestRLSStorePasswordNotShown(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--config", "x", "--store", "redis://:hunter2@r:6379/#x"}, nil},
		{[]string{"--config", "x", "--per-second-store", "redis://:hunter2@ps:6379/#x"}, nil},
		{nil, map[string]string{"ADMIT_RLS_ENV": "envoy", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "r:6379", "REDIS_PERSECOND": "true",
			"REDIS_PERSECOND_SOCKET_TYPE": "tcp", "REDIS_PERSECOND_AUTH": "hunter2", "REDIS_PERSECOND_URL": "ps:6379 "}},
	} {
		_, err := parseFlags(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q %v: got %v, want refused without the password", tc.args, tc.env, err)
		}
	}
}

// TestRLSMetricsCaps: the metrics listener's caps are the proxy's flags,
// with the proxy's defaults and checks.
func TestRLSMetricsCaps(t *testing.T) {
	o, err := parseFlags([]string{"--config", "x"}, func(string) string { return "" }, io.Discard)
	if err != nil || o.MetricsMaxConns != 64 || o.MetricsPerClient != 8 {
		t.Errorf("defaults: got %d, %d, %v; want 64, 8", o.MetricsMaxConns, o.MetricsPerClient, err)
	}
	if _, err := parseFlags([]string{"--config", "x", "--metrics-max-conns", "0"}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), "--metrics-max-conns") {
		t.Errorf("--metrics-max-conns 0: got %v, want refused naming the flag", err)
	}
}
