package testrouter

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// recordTB records Fatalf instead of failing the real test.
type recordTB struct {
	testing.TB
	msg string
}

func (r *recordTB) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func testClient() *http.Client {
	return &http.Client{Timeout: controlTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestServeRetriesBindFailure(t *testing.T) {
	bin, err := goBuilds[PrefixMux]()
	if err != nil {
		t.Fatal(err)
	}
	attempts := 0
	p, port := serve(t, testClient(), t.TempDir(), "retry", func(port int) *exec.Cmd {
		attempts++
		if attempts == 1 {
			// What Go's net.Listen says when another process took the port.
			return exec.Command("/bin/sh", "-c", "echo 'listen tcp 127.0.0.1:1: bind: address already in use' >&2; exit 1")
		}
		cmd := exec.Command(bin, strconv.Itoa(port))
		cmd.Env = append(os.Environ(), "GODEBUG=httpmuxgo121=1")
		return cmd
	}, 0)
	if attempts != 2 {
		t.Errorf("serve made %d attempts, want 2", attempts)
	}
	if err := answers(testClient(), baseURL(port)+"/__router/hits", p.cmd.Process.Pid); err != nil {
		t.Errorf("after the retry: %v", err)
	}
}

func TestServeFailsWithLogTail(t *testing.T) {
	r := &recordTB{TB: t}
	attempts := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(r, testClient(), t.TempDir(), "broken", func(int) *exec.Cmd {
			attempts++
			return exec.Command("/bin/sh", "-c", "echo 'no such module: flask' >&2; exit 3")
		}, 0)
		t.Errorf("serve returned, want it to fail the test")
	}()
	<-done
	if !strings.Contains(r.msg, "exited before answering") || !strings.Contains(r.msg, "no such module: flask") {
		t.Errorf("got Fatalf %q, want it to say the app exited and show its log", r.msg)
	}
	if attempts != 1 {
		t.Errorf("serve made %d attempts, want 1: the failure was not a taken port", attempts)
	}
}
