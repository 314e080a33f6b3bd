// Package deploy_test checks the deployment files beside it: the container
// image, the systemd unit, the example configuration and the Prometheus
// alerts. The folder holds no Go package of its own, so nothing here can be
// imported.
//
// The tests need podman, promtool and, where it exists, systemd-analyze;
// scripts/services --install installs them. A missing tool fails its test
// with the command that installs it, rather than skipping it.
package deploy_test

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/admitgo/admit/internal/testneed"
)

const (
	// The server's default --drain-timeout, and the --drain-delay
	// docs/operators.md suggests behind a balancer: systemd must wait longer
	// than both before it kills a draining admit.
	drainTimeout = 25 * time.Second
	drainDelay   = 5 * time.Second
)

// built is the admit binary the tests share, built once.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// admitBinary returns the path of an admit binary built from this checkout,
// static as the image's is.
func admitBinary(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "admit-deploy-")
		if built.err != nil {
			return
		}
		// Cold, on two cores, beside other packages' tests: minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		built.path = filepath.Join(built.dir, "admit")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", built.path, "./cmd/admit")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/admit: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// moduleRoot returns the folder of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		t.Fatal("go env GOMOD: not in a module")
	}
	return filepath.Dir(mod)
}

// need returns the path of tool, or fails the test saying which Debian
// package installs it.
func need(t *testing.T, tool, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		testneed.Missing(t, "%s is not installed: run 'apt-get install %s' (or 'scripts/services --install')", tool, pkg)
	}
	return path
}

// bounded returns a context that ends after d, or with the test.
func bounded(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// run runs a command and returns its combined output, failing the test if
// it fails.
func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return string(out)
}

// checkVersion fails unless out is what admit --version prints.
func checkVersion(t *testing.T, out string) {
	t.Helper()
	out = strings.TrimSpace(out)
	if !strings.HasPrefix(out, "admit ") || !strings.Contains(out, " go1.") || strings.Contains(out, "\n") {
		t.Errorf("admit --version printed %q, want one line \"admit VERSION ... goVERSION\"", out)
	}
}

// imageConfig is the part of podman image inspect's Config the tests read.
type imageConfig struct {
	User         string
	Env          []string
	ExposedPorts map[string]struct{}
	Entrypoint   []string
	Cmd          []string
}

// TestImageChecksEngineFirst: build-image finds a container engine that
// does not run before it compiles anything, and says which.
func TestImageChecksEngineFirst(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	compiled := filepath.Join(bin, "compiled")
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("go", "touch "+compiled+"\n")
	write("broken-engine", "echo 'cannot connect to the engine' >&2\nexit 125\n")
	cmd := exec.CommandContext(bounded(t, time.Minute), filepath.Join(moduleRoot(t), "deploy", "build-image"), "admit:never")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "CONTAINER_ENGINE="+filepath.Join(bin, "broken-engine"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("build-image with an engine that does not run succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "broken-engine info") || !strings.Contains(string(out), "cannot connect to the engine") {
		t.Errorf("build-image printed\n%s\nwant the engine's check named, with its error", out)
	}
	if _, err := os.Stat(compiled); err == nil {
		t.Error("build-image compiled admit before checking the container engine")
	}
}

func TestImage(t *testing.T) {
	t.Parallel()
	podman := need(t, "podman", "podman")
	root := moduleRoot(t)
	// build-image compiles as admitBinary does, so once that has run, the
	// script only links.
	admitBinary(t)
	ctx := bounded(t, 5*time.Minute)
	tag := fmt.Sprintf("localhost/admit:test-%d", os.Getpid())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		exec.CommandContext(ctx, podman, "rmi", "--force", tag).Run()
	})

	build := exec.CommandContext(ctx, filepath.Join(root, "deploy", "build-image"), tag)
	build.Env = append(os.Environ(), "CONTAINER_ENGINE="+podman)
	run(t, build)

	var configs []struct{ Config imageConfig }
	if err := json.Unmarshal([]byte(run(t, exec.CommandContext(ctx, podman, "image", "inspect", tag))), &configs); err != nil || len(configs) != 1 {
		t.Fatalf("podman image inspect %s: %v (%d images)", tag, err, len(configs))
	}
	c := configs[0].Config
	if c.User != "65532:65532" {
		t.Errorf("image user %q, want 65532:65532", c.User)
	}
	if want := []string{"/admit"}; !slices.Equal(c.Entrypoint, want) || len(c.Cmd) != 0 {
		t.Errorf("image entrypoint %q, cmd %q; want %q and no cmd", c.Entrypoint, c.Cmd, want)
	}
	for _, port := range []string{"8080/tcp", "8081/tcp", "9464/tcp"} {
		if _, ok := c.ExposedPorts[port]; !ok {
			t.Errorf("image exposes %v, want %s among them", c.ExposedPorts, port)
		}
	}
	for _, env := range []string{"ADMIT_LISTEN=:8080", "ADMIT_METRICS_LISTEN=0.0.0.0:9464", "ADMIT_RLS_METRICS_LISTEN=0.0.0.0:9464"} {
		if !slices.Contains(c.Env, env) {
			t.Errorf("image environment %q, want %s in it", c.Env, env)
		}
	}

	// The files as the image holds them, whether or not containers can run
	// here.
	id := strings.TrimSpace(run(t, exec.CommandContext(ctx, podman, "create", tag)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		exec.CommandContext(ctx, podman, "rm", "--force", id).Run()
	})
	dir := t.TempDir()
	bin, certs := filepath.Join(dir, "admit"), filepath.Join(dir, "ca-certificates.crt")
	run(t, exec.CommandContext(ctx, podman, "cp", id+":/admit", bin))
	run(t, exec.CommandContext(ctx, podman, "cp", id+":/etc/ssl/certs/ca-certificates.crt", certs))
	checkStatic(t, bin)
	if fi, err := os.Stat(bin); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm()&0o005 != 0o005 {
		t.Errorf("/admit in the image has mode %v, want it readable and executable by any user", fi.Mode())
	}
	if pem, err := os.ReadFile(certs); err != nil || !bytes.Contains(pem, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt in the image: %v, want PEM certificates", err)
	}

	out, err := exec.CommandContext(ctx, podman, "run", "--rm", "--network=none", tag, "--version").CombinedOutput()
	if err != nil {
		t.Logf("podman cannot run the container here (%v: %s); running the binary taken from the image instead", err, bytes.TrimSpace(out))
		out = []byte(run(t, exec.CommandContext(ctx, bin, "--version")))
	}
	checkVersion(t, string(out))
}

// checkStatic fails unless path is an ELF executable for this architecture
// that loads no shared library, as FROM scratch requires.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader: want a static binary (CGO_ENABLED=0)", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs %q: want a static binary (CGO_ENABLED=0)", path, libs)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if want, ok := machines[runtime.GOARCH]; ok && f.Machine != want {
		t.Errorf("%s is for %v, want %v", path, f.Machine, want)
	}
}

// unit is a systemd unit file: each section's keys, with every value a key
// was given in order.
type unit map[string]map[string][]string

// readUnit parses the subset of systemd's unit syntax the unit uses.
func readUnit(t *testing.T, path string) unit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := make(unit)
	section := ""
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: continued lines are not read here", path, i+1)
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = make(map[string][]string)
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q is no key=value in a section", path, i+1, line)
			}
			key = strings.TrimSpace(key)
			u[section][key] = append(u[section][key], strings.TrimSpace(value))
		}
	}
	return u
}

func TestUnit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(moduleRoot(t), "deploy", "admit.service")
	u := readUnit(t, path)
	service := u["Service"]
	for _, want := range []struct{ key, value string }{
		{"ExecStart", "/usr/local/bin/admit --config /etc/admit/admit.yaml"},
		{"ExecReload", "/bin/kill -HUP $MAINPID"},
		{"EnvironmentFile", "-/etc/admit/admit.env"},
		{"Restart", "on-failure"},
		{"DynamicUser", "yes"},
		{"NoNewPrivileges", "yes"},
		{"ProtectSystem", "strict"},
		{"ProtectHome", "yes"},
		{"PrivateTmp", "yes"},
		{"PrivateDevices", "yes"},
		{"ProtectKernelTunables", "yes"},
		{"ProtectKernelModules", "yes"},
		{"ProtectKernelLogs", "yes"},
		{"ProtectControlGroups", "yes"},
		{"RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"RestrictNamespaces", "yes"},
		{"LockPersonality", "yes"},
		{"MemoryDenyWriteExecute", "yes"},
		{"SystemCallFilter", "@system-service"},
		{"CapabilityBoundingSet", ""},
		// ProtectSystem=strict leaves no path writable but those the
		// unit names: an access log needs its directory.
		{"LogsDirectory", "admit"},
	} {
		if got := service[want.key]; !slices.Contains(got, want.value) {
			t.Errorf("[Service] %s=%q, want %s=%s", want.key, got, want.key, want.value)
		}
	}
	env, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "admit.env"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(env, []byte("\n#ADMIT_ACCESS_LOG=/var/log/admit/")) {
		t.Error("deploy/admit.env suggests no ADMIT_ACCESS_LOG under /var/log/admit, the unit's LogsDirectory")
	}
	if got := service["CapabilityBoundingSet"]; len(got) != 1 {
		t.Errorf("[Service] CapabilityBoundingSet=%q, want it once and empty", got)
	}
	if got, ok := service["AmbientCapabilities"]; ok {
		t.Errorf("[Service] AmbientCapabilities=%q: the default ports need none", got)
	}
	if got := service["TimeoutStopSec"]; len(got) != 1 {
		t.Errorf("[Service] TimeoutStopSec=%q, want it once", got)
	} else if d, err := time.ParseDuration(got[0]); err != nil || d <= drainTimeout+drainDelay {
		t.Errorf("[Service] TimeoutStopSec=%s (%v), want a Go-readable duration above %v", got[0], err, drainTimeout+drainDelay)
	}

	analyze := need(t, "systemd-analyze", "systemd")
	// verify wants ExecStart's binary to exist: point it at a built one.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "admit.service")
	data = bytes.ReplaceAll(data, []byte("ExecStart=/usr/local/bin/admit "), []byte("ExecStart="+admitBinary(t)+" "))
	if err := os.WriteFile(copied, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := bounded(t, time.Minute)
	if out := run(t, exec.CommandContext(ctx, analyze, "verify", copied)); out != "" {
		t.Errorf("systemd-analyze verify: %s", out)
	}
	// The exposure score runs from 0 to 10; the threshold is in tenths.
	out, err := exec.CommandContext(ctx, analyze, "security", "--offline=true", "--threshold=20", copied).CombinedOutput()
	switch {
	case err != nil && bytes.Contains(out, []byte("unrecognized option")):
		t.Logf("this systemd-analyze cannot score a unit file: %s", bytes.TrimSpace(out))
	case err != nil:
		t.Errorf("systemd-analyze security: exposure above 2.0, or %v:\n%s", err, out)
	}
}

// TestExampleConfig runs the unit's command line, with the example config
// and environment files in place of /etc/admit's, through admit validate.
func TestExampleConfig(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	u := readUnit(t, filepath.Join(root, "deploy", "admit.service"))
	execStart := u["Service"]["ExecStart"]
	if len(execStart) != 1 || strings.ContainsAny(execStart[0], `"'\$%`) {
		t.Fatalf("ExecStart=%q: want one command line without quotes, variables or specifiers", execStart)
	}
	args := strings.Fields(execStart[0])[1:]
	for i, a := range args {
		if a == "/etc/admit/admit.yaml" {
			args[i] = filepath.Join(root, "deploy", "admit.yaml")
		}
	}

	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "admit.env"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(name, "ADMIT_") {
			t.Fatalf("admit.env:%d: %q, want ADMIT_NAME=value", i+1, line)
		}
		env = append(env, line)
	}

	bin := admitBinary(t)
	ctx := bounded(t, time.Minute)
	cmd := exec.CommandContext(ctx, bin, append([]string{"validate"}, args...)...)
	cmd.Env = env
	out := run(t, cmd)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] != "ok" {
		t.Errorf("admit validate %s printed\n%s\nwant it to end with ok", strings.Join(args, " "), out)
	}
}

// rules is the part of a Prometheus rule file the tests read.
type rules struct {
	Groups []struct {
		Name  string
		Rules []struct {
			Alert       string
			Expr        string
			For         string
			Labels      map[string]string
			Annotations map[string]string
		}
	}
}

// ruleTests is the part of a promtool test file the tests read.
type ruleTests struct {
	Tests []struct {
		Name          string
		AlertRuleTest []struct {
			Alertname string
			ExpAlerts []any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	}
}

// templateLabels are the labels an annotation may name: none of them holds a
// client address.
var templateLabels = []string{"instance", "job", "admit_door_group"}

func TestAlerts(t *testing.T) {
	t.Parallel()
	promtool := need(t, "promtool", "prometheus")
	dir := filepath.Join(moduleRoot(t), "deploy")
	ctx := bounded(t, 2*time.Minute)
	check := exec.CommandContext(ctx, promtool, "check", "rules", "alerts.yml")
	check.Dir = dir
	run(t, check)
	test := exec.CommandContext(ctx, promtool, "test", "rules", "alerts_test.yml")
	test.Dir = dir
	run(t, test)

	var rs rules
	readYAML(t, filepath.Join(dir, "alerts.yml"), &rs)
	var ts ruleTests
	readYAML(t, filepath.Join(dir, "alerts_test.yml"), &ts)
	fires, quiet := make(map[string]bool), make(map[string]bool)
	for _, tc := range ts.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	label := regexp.MustCompile(`\$labels\.(\w+)`)
	n := 0
	for _, g := range rs.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" {
				t.Errorf("group %s: a rule without an alert name", g.Name)
				continue
			}
			if r.For == "" {
				t.Errorf("%s: no for: duration", r.Alert)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: annotations %q, want a summary and a description", r.Alert, r.Annotations)
			}
			for name, text := range r.Annotations {
				for _, m := range label.FindAllStringSubmatch(text, -1) {
					if !slices.Contains(templateLabels, m[1]) {
						t.Errorf("%s: annotation %s names label %s, want only %q", r.Alert, name, m[1], templateLabels)
					}
				}
			}
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: alerts_test.yml tests it firing: %v, not firing: %v; want both", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
	if n == 0 {
		t.Error("alerts.yml holds no rule")
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
