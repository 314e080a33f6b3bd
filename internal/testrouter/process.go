package testrouter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testrouter/upstream"
)

// Timeouts of an app's lifecycle: generous, since a loaded machine starts
// Python and Node slowly, but bounded so that a broken app fails the test.
const (
	readyTimeout = 30 * time.Second
	killTimeout  = 10 * time.Second
	pollInterval = 20 * time.Millisecond
)

// proc is one app process.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has been waited for
}

// serve starts the app that command builds for a port, on a free loopback
// port, and returns it and its port once its hits endpoint answers with the
// process id wantPID (0: the started process's own). The id tells our app
// from another that took the port between our choosing it and the app's
// binding it; that app's bind then fails, and serve tries once more with
// another port. The process is killed when t ends.
func serve(t testing.TB, c *http.Client, dir, name string, command func(port int) *exec.Cmd, wantPID int) (*proc, int) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		p := start(t, name, logPath, command(port))
		pid := wantPID
		if pid == 0 {
			pid = p.cmd.Process.Pid
		}
		err := p.waitReady(c, baseURL(port)+upstream.HitsPath, pid)
		if err == nil {
			return p, port
		}
		if attempt == 1 && p.bindFailed() {
			t.Logf("testrouter: %s could not bind 127.0.0.1:%d; trying another port", name, port)
			continue
		}
		t.Fatalf("testrouter: %s on 127.0.0.1:%d: %v\n%s", name, port, err, p.logTail())
	}
}

// start runs cmd with its output appended to logPath and registers its kill
// when t ends.
func start(t testing.TB, name, logPath string, cmd *exec.Cmd) *proc {
	t.Helper()
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("testrouter: %s log: %v", name, err)
	}
	defer log.Close() // the child has its own copy
	// A mark between attempts, so that bindFailed reads only this one's
	// output.
	fmt.Fprintf(log, "--- testrouter: %s\n", strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("testrouter: start %s: %v", name, err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill(t) })
	return p
}

// waitReady polls url until it answers with the process id pid, the process
// exits, or readyTimeout passes.
func (p *proc) waitReady(c *http.Client, url string, pid int) error {
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(pollInterval)
	defer poll.Stop()
	for {
		err := answers(c, url, pid)
		if err == nil {
			return nil
		}
		select {
		case <-poll.C:
		case <-p.exited:
			return fmt.Errorf("exited before answering (%v)", p.cmd.ProcessState)
		case <-deadline.C:
			return fmt.Errorf("did not answer within %v: %w", readyTimeout, err)
		}
	}
}

// answers wants url to answer 200 with the process id pid.
func answers(c *http.Client, url string, pid int) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var v struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if v.PID != pid {
		return fmt.Errorf("GET %s: answered by process %d, want %d", url, v.PID, pid)
	}
	return nil
}

// kill ends the process and its group at once: the apps keep nothing worth
// a clean shutdown.
func (p *proc) kill(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
		return // and its id may be another's by now
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(killTimeout):
		t.Errorf("testrouter: %s (pid %d) still running %v after SIGKILL", p.name, p.cmd.Process.Pid, killTimeout)
	}
}

// bindFailed reports whether the process has exited and its log says, in
// the words of Go, Python, Node or nginx, that its port was taken.
func (p *proc) bindFailed() bool {
	select {
	case <-p.exited: // and so the log is complete
	default:
		return false
	}
	b, _ := os.ReadFile(p.logPath)
	if i := bytes.LastIndex(b, []byte("--- testrouter: ")); i >= 0 {
		b = b[i:]
	}
	s := strings.ToLower(string(b))
	return strings.Contains(s, "address already in use") || strings.Contains(s, "eaddrinuse")
}

// logTail returns the end of the process's log, for failure messages.
func (p *proc) logTail() []byte {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return []byte(err.Error())
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b
}

// freePort returns a loopback port nothing listens on at the moment. Another
// process may take it before the app does; serve then tries another.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func baseURL(port int) string { return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
