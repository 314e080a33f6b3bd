package reference

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// suiteVar runs TestReferenceSuite outside CI.
const suiteVar = "ADMIT_TEST_REFERENCE_SUITE"

// suiteTests is how many tests (subtests, and tests without any) the
// pinned suite runs.
const suiteTests = 47

// suiteLeftOut is every test of the reference's integration suite that
// fails against admit rls, with the reason; docs/rls.md lists them too.
// A test listed here that passes fails TestReferenceSuite, as does one
// that fails and is not listed (a parent's failure is explained by a
// listed test under it).
var suiteLeftOut = map[string]string{}

// TestCheckSuite holds checkSuite to its rules: the list explains every
// failure and nothing else.
func TestCheckSuite(t *testing.T) {
	leftOut := map[string]string{"A/x": "lacks x"}
	for _, c := range []struct {
		name    string
		results map[string]string
		want    []string
	}{
		{"all pass or listed", map[string]string{"A": "fail", "A/x": "fail", "A/y": "pass", "B": "pass"}, nil},
		{"listed passes", map[string]string{"A": "pass", "A/x": "pass"}, []string{"A/x passes and is listed as failing (lacks x): take it off the list here and in docs/rls.md"}},
		{"unlisted fails", map[string]string{"A": "fail", "A/x": "fail", "B": "fail"}, []string{"B fails and is not listed"}},
		{"parent fails alone", map[string]string{"A": "fail", "A/x": "pass"}, []string{"A fails and is not listed", "A/x passes and is listed as failing (lacks x): take it off the list here and in docs/rls.md"}},
		{"listed did not run", map[string]string{"A": "pass"}, []string{"A/x is listed and did not run"}},
		{"skipped", map[string]string{"A": "fail", "A/x": "fail", "C": "skip"}, []string{"C skipped"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, _ := checkSuite(c.results, leftOut)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestReferenceSuite runs envoyproxy/ratelimit's own integration suite
// (test/integration of the pinned version, build tag integration) against
// the admit binary, in a copy of the reference's module whose in-process
// runner is replaced by testdata/suite, which starts admit rls as a child
// process in reference mode (see docs/rls.md). The suite's assertions are
// its own; the servers it expects beside those it starts are started here
// (startSuiteServers). It takes minutes, so it runs under CI=true or with
// ADMIT_TEST_REFERENCE_SUITE=1.
func TestReferenceSuite(t *testing.T) {
	if os.Getenv("CI") != "true" && os.Getenv(suiteVar) == "" {
		t.Skipf("runs under CI=true or %s=1", suiteVar)
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "ratelimit")
	copyModule(t, referenceDir(t), mod)
	runnerDir := filepath.Join(mod, "src", "service_cmd", "runner")
	if err := os.RemoveAll(runnerDir); err != nil {
		t.Fatal(err)
	}
	copyModule(t, filepath.Join("testdata", "suite"), runnerDir)

	admit := filepath.Join(dir, "admit")
	goCmd(t, "../../..", "build", "-o", admit, "./cmd/admit")
	suite := filepath.Join(dir, "integration.test")
	goCmd(t, mod, "test", "-c", "-tags", "integration", "-o", suite, "./test/integration")

	project := filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	startSuiteServers(t, project, filepath.Join(mod, "test", "integration", "conf"))

	list, err := exec.Command(suite, "-test.list", ".").Output()
	if err != nil {
		t.Fatalf("%s -test.list: %v", suite, err)
	}
	results := map[string]string{}
	start := time.Now()
	// One test at a time, each in a process of its own: the suite's
	// servers and ports are fixed, and a test that panics (the suite
	// indexes answers it did not get) ends only its own process.
	for _, name := range strings.Fields(string(list)) {
		runSuiteTest(t, mod, suite, name, admit, project, results)
	}
	t.Logf("the suite ran in %v", time.Since(start).Round(time.Second))
	problems, passed, leaves := checkSuite(results, suiteLeftOut)
	for _, p := range problems {
		t.Error(p)
	}
	// A suite that listed or ran fewer tests (a moved package, a build tag
	// that no longer matches) would pass with nothing checked.
	if leaves < suiteTests {
		t.Errorf("%d tests ran; the pinned suite has %d", leaves, suiteTests)
	}
	t.Logf("%d of the %d tests that ran (subtests, and tests without any) passed; %d are listed as failing", passed, leaves, len(suiteLeftOut))
}

// runSuiteTest runs the top-level test name of the suite and records the
// result of it and of each of its subtests.
func runSuiteTest(t *testing.T, mod, suite, name, admit, project string, results map[string]string) {
	t.Helper()
	cmd := exec.Command("go", "tool", "test2json", "-p", "integration", suite,
		"-test.v=test2json", "-test.run", "^"+name+"$", "-test.timeout", "5m")
	cmd.Dir = filepath.Join(mod, "test", "integration")
	cmd.Env = append(os.Environ(), "GOFLAGS=",
		"ADMIT_SUITE_BINARY="+admit, "PROJECT_DIR="+project,
		// The suite's Redis over TLS presents the project's certificate,
		// which the reference's Makefile adds to the system's roots.
		"SSL_CERT_FILE="+filepath.Join(project, "cert.pem"))
	// A process group of its own, killed once the test has ended: a test
	// that panics (as the suite's do after a refused start) skips its
	// deferred stops, and would leave its Redis, memcached or admit
	// running on the suite's fixed ports for every later test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "output":
			if output[ev.Test] == nil {
				output[ev.Test] = &strings.Builder{}
			}
			output[ev.Test].WriteString(ev.Output)
		case "pass", "fail", "skip":
			results[ev.Test] = ev.Action
			if _, listed := suiteLeftOut[ev.Test]; ev.Action == "fail" && !listed && output[ev.Test] != nil {
				t.Logf("%s:\n%s", ev.Test, output[ev.Test])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Errorf("%s: reading its events: %v", name, err)
	}
	// A failing test exits 1 and the events say which; an exit that is
	// not explained by one (a TestMain failing after the tests) is a
	// failure of its own.
	if err := cmd.Wait(); err != nil && results[name] != "fail" {
		results[name] = "fail"
		t.Errorf("%s: %v, with no failing test", name, err)
	}
	if _, ok := results[name]; !ok {
		results[name] = "fail"
		t.Errorf("%s: no result", name)
	}
}

// checkSuite returns what is wrong with results against leftOut: a test
// that fails and is not listed (a parent's failure is explained by a
// listed test under it), a listed test that passes or did not run; and
// how many of the tests without subtests passed, of how many.
func checkSuite(results, leftOut map[string]string) (problems []string, passed, leaves int) {
	names := slices.Sorted(maps.Keys(results))
	for _, name := range names {
		res := results[name]
		reason, listed := leftOut[name]
		leaf := !slices.ContainsFunc(names, func(other string) bool { return strings.HasPrefix(other, name+"/") })
		if leaf {
			leaves++
		}
		switch {
		case res == "pass" && !listed:
			if leaf {
				passed++
			}
		case res == "pass" && listed:
			problems = append(problems, fmt.Sprintf("%s passes and is listed as failing (%s): take it off the list here and in docs/rls.md", name, reason))
		case res == "skip":
			problems = append(problems, name+" skipped")
		case !listed && !hasListedChild(name, results, leftOut):
			problems = append(problems, name+" fails and is not listed")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(leftOut)) {
		if _, ran := results[name]; !ran {
			problems = append(problems, name+" is listed and did not run")
		}
	}
	return problems, passed, leaves
}

// hasListedChild reports whether a test under name failed and is listed.
func hasListedChild(name string, results, leftOut map[string]string) bool {
	for child := range leftOut {
		if strings.HasPrefix(child, name+"/") && results[child] == "fail" {
			return true
		}
	}
	return false
}

// referenceDir is the pinned reference's module in the module cache.
func referenceDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/envoyproxy/ratelimit@"+version)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v, %s", err, out)
	}
	return mod.Dir
}

// copyModule copies the tree src to dst, writable: the module cache's
// files are read-only, and the suite writes into its runtime directory.
func copyModule(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// goCmd runs go with args in dir.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
