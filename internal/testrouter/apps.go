package testrouter

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testneed"
)

// python is Debian's interpreter, which python3-flask installs for: the
// python3 first on PATH may be another build without Flask.
const python = "/usr/bin/python3"

// installTimeout bounds npm ci and each go build.
const installTimeout = 5 * time.Minute

// appCommand readies what kind needs (fails t when it is missing) and
// returns the command that runs the app on a port. For NginxGo the app is
// the Go app behind nginx; Start asks for the other kinds behind nginx by
// the kind of their app.
func appCommand(t testing.TB, kind Kind) func(port int) *exec.Cmd {
	t.Helper()
	src, err := sourceDir()
	if err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	switch kind {
	case Flask:
		if err := flaskReady(); err != nil {
			testneed.Missing(t, "testrouter: %v; the Flask kind needs Debian's Flask: apt-get install python3-flask", err)
		}
		dir := filepath.Join(src, "flask")
		return func(port int) *exec.Cmd {
			// -I keeps PYTHONPATH and user site-packages from bringing in
			// another Flask, -u leaves the log unbuffered for failure
			// messages, and -B writes no bytecode into the source tree.
			cmd := exec.Command(python, "-I", "-u", "-B", "app.py", strconv.Itoa(port))
			cmd.Dir = dir
			return cmd
		}
	case WSGIRef:
		return func(port int) *exec.Cmd {
			cmd := exec.Command(python, "-I", "-u", "-B", "app.py", strconv.Itoa(port))
			cmd.Dir = filepath.Join(src, "wsgiref")
			return cmd
		}
	case Django:
		if err := djangoReady(); err != nil {
			testneed.Missing(t, "testrouter: %v; the Django kind needs Debian's Django: apt-get install python3-django", err)
		}
		return func(port int) *exec.Cmd {
			cmd := exec.Command(python, "-I", "-u", "-B", "app.py", strconv.Itoa(port)) // as Flask
			cmd.Dir = filepath.Join(src, "django")
			return cmd
		}
	case Express:
		node, err := exec.LookPath("node")
		if err == nil {
			_, err = exec.LookPath("npm")
		}
		if err != nil {
			testneed.Missing(t, "testrouter: %v; the Express kind needs Node.js 18 or later and npm (Debian: apt-get install nodejs npm)", err)
		}
		if err := expressInstalled(); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		return func(port int) *exec.Cmd {
			cmd := exec.Command(node, "app.js", strconv.Itoa(port))
			cmd.Dir = filepath.Join(src, "express")
			return cmd
		}
	case Rails, Sinatra:
		return rackCommand(t, src, kind)
	case Tornado:
		if err := tornadoReady(); err != nil {
			testneed.Missing(t, "testrouter: %v; the Tornado kind needs Debian's Tornado: apt-get install python3-tornado", err)
		}
		return func(port int) *exec.Cmd {
			cmd := exec.Command(python, "-I", "-u", "-B", "app.py", strconv.Itoa(port))
			cmd.Dir = filepath.Join(src, "tornado")
			return cmd
		}
	case Jetty:
		return jettyCommand(t, src)
	case Tomcat, TomcatValves:
		return tomcatCommand(t, src, kind == TomcatValves)
	case PHP:
		return phpCommand(t, src)
	case Hypercorn:
		return hypercornCommand(t, src)
	default:
		bin, err := goBuilds[kind]()
		if err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		env := os.Environ()
		switch kind {
		case PrefixMux:
			env = append(env, godebug("httpmuxgo121=1"))
		case NginxGo:
			env = append(env, godebug("httpmuxgo121=0"))
		}
		return func(port int) *exec.Cmd {
			cmd := exec.Command(bin, strconv.Itoa(port))
			cmd.Env = env
			return cmd
		}
	}
}

// godebug returns the environment's GODEBUG with setting added last, where
// it wins over an earlier one of the same name. The apps check the mux mode
// they run in and refuse the wrong one, so a setting lost here fails loudly.
func godebug(setting string) string {
	if old := os.Getenv("GODEBUG"); old != "" {
		return "GODEBUG=" + old + "," + setting
	}
	return "GODEBUG=" + setting
}

// sourceDir returns the directory of this package's source, which holds the
// apps: the directory of this file, or, in a binary built with -trimpath,
// the go command's answer.
var sourceDir = sync.OnceValues(func() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(dir, "flask", "app.py")); err == nil {
			return dir, nil
		}
	}
	const pkg = "github.com/admitgo/admit/internal/testrouter"
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("find the source of %s: go list: %w", pkg, err)
	}
	return string(bytes.TrimSpace(out)), nil
})

// flaskReady checks once per test binary that Debian's Python imports what
// the Flask app imports.
var flaskReady = sync.OnceValue(func() error {
	out, err := exec.Command(python, "-I", "-c", "import flask, werkzeug.middleware.proxy_fix").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s cannot import flask (%v): %s", python, err, bytes.TrimSpace(out))
	}
	return nil
})

// djangoReady checks once per test binary that Debian's Python imports
// Django.
var djangoReady = sync.OnceValue(func() error {
	out, err := exec.Command(python, "-I", "-c", "import django").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s cannot import django (%v): %s", python, err, bytes.TrimSpace(out))
	}
	return nil
})

// tornadoReady checks once per test binary that Debian's Python imports
// Tornado.
var tornadoReady = sync.OnceValue(func() error {
	out, err := exec.Command(python, "-I", "-c", "import tornado.web").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s cannot import tornado (%v): %s", python, err, bytes.TrimSpace(out))
	}
	return nil
})

// expressInstalled runs npm ci in express/ unless node_modules is there and
// no older than package-lock.json. It runs once per test binary, under a lock
// on package-lock.json, since go test runs several packages' test binaries
// at once and two installs into one node_modules would break each other.
var expressInstalled = sync.OnceValue(func() error {
	src, err := sourceDir()
	if err != nil {
		return err
	}
	return npmCI(filepath.Join(src, "express"))
})

func npmCI(dir string) error {
	lockfile := filepath.Join(dir, "package-lock.json")
	f, err := os.Open(lockfile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lockfile, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)

	want, err := f.Stat()
	if err != nil {
		return err
	}
	// npm ci writes this file last, so its presence means a finished install.
	got, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err == nil && !got.ModTime().Before(want.ModTime()) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return nil
}

// goBuilds builds each Go app once per test binary and returns its path.
var goBuilds = map[Kind]func() (string, error){
	PrefixMux: sync.OnceValues(func() (string, error) { return goBuild("prefixmux", ".", "./prefixmux") }),
	Gorilla:   sync.OnceValues(func() (string, error) { return goBuild("gorilla", "gorilla", ".") }),
	NginxGo:   sync.OnceValues(func() (string, error) { return goBuild("servemux", ".", "./servemux") }),
}

// goBuild builds pkg, run from the directory moduleDir of the package's
// source, into .bin/name there. A test's temporary directory would not do:
// it goes with the test that built it, and the build serves every test of
// the binary. The file is written under a temporary name and renamed, so
// that test binaries building at once, and apps started from the old file,
// never see a half-written one.
func goBuild(name, moduleDir, pkg string) (string, error) {
	src, err := sourceDir()
	if err != nil {
		return "", err
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%v; the %s app is built with the go command: install Go 1.26 or later and put go on PATH", err, name)
	}
	binDir := filepath.Join(src, ".bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(binDir, name+".*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed

	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", tmp.Name(), pkg)
	cmd.Dir = filepath.Join(src, moduleDir)
	// The gorilla app is a module of its own; a go.work in the environment
	// must not pull it into another.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the %s app: go build %s in %s: %v\n%s", name, pkg, cmd.Dir, err, out)
	}
	bin := filepath.Join(binDir, name)
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", fmt.Errorf("build the %s app: %w", name, err)
	}
	return bin, nil
}
