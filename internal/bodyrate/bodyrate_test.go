package bodyrate

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// webhook is the webhook group's rule.
var webhook = Rule{Timeout: 10 * time.Second, MinRate: 500, Grace: 5 * time.Second}

// step is one write of a sender: n bytes after a pause.
type step struct {
	after time.Duration
	n     int
}

// every returns steps of n bytes every d, for a total of total bytes.
func every(d time.Duration, n, total int) []step {
	var s []step
	for sent := 0; sent < total; sent += n {
		s = append(s, step{d, n})
	}
	return s
}

// send runs a sender over net.Pipe in a bubble and reads its body through
// a Reader of rule, starting the reader at once (or, with wait, after
// delay, as a handler that reads late), and returns how long the read
// took, the bytes read and why it was cut.
func send(t *testing.T, rule Rule, wait bool, delay time.Duration, steps []step) (took time.Duration, n int64, cut int) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		server, client := net.Pipe()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(stop)
		defer server.Close()
		wg.Go(func() {
			defer client.Close()
			for _, s := range steps {
				select {
				case <-stop:
					return
				case <-time.After(s.after):
				}
				if _, err := client.Write(make([]byte, s.n)); err != nil {
					return
				}
			}
		})
		start := time.Now()
		r := NewReader(server, server, rule, time.Time{}, time.Time{}, wait, nil)
		time.Sleep(delay)
		_, err := io.Copy(io.Discard, r)
		took, n, cut = time.Since(start), r.Len(), r.Cut()
		if cut != 0 && err == nil {
			t.Errorf("cut %d, but the read did not fail", cut)
		}
	})
	return took, n, cut
}

func TestRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rule    Rule
		wait    bool
		delay   time.Duration
		steps   []step
		cut     int
		took    time.Duration // when cut, within 100 ms after
		atLeast int64         // bytes read
	}{
		{"a dripper is cut when the grace ends", webhook, false, 0,
			every(500*time.Millisecond, 1, 1<<20), Slow, 5 * time.Second, 9},
		{"an honest sender keeps going", webhook, false, 0,
			every(100*time.Millisecond, 1<<10, 64<<10), 0, 0, 64 << 10},
		{"one lost round-trip spends earned credit", webhook, false, 0,
			append(append(every(100*time.Millisecond, 1<<10, 16<<10), step{3 * time.Second, 1 << 10}), every(100*time.Millisecond, 1<<10, 16<<10)...),
			0, 0, 33 << 10},
		{"a slow start within the grace is forgiven", webhook, false, 0,
			[]step{{4 * time.Second, 3000}, {time.Second, 1 << 10}}, 0, 0, 4024},
		{"1.1 times the rate meets the body deadline", webhook, false, 0,
			every(100*time.Millisecond, 55, 1<<20), Slow, 10 * time.Second, 5400},
		{"below the rate after a fast start", Rule{MinRate: 500, Grace: 5 * time.Second}, false, 0,
			append([]step{{0, 5000}}, every(time.Second, 100, 1<<20)...), Slow, 18600 * time.Millisecond, 6800},
		{"no rate: only the deadline", Rule{Timeout: 10 * time.Second}, false, 0,
			every(500*time.Millisecond, 1, 1<<20), Slow, 10 * time.Second, 19},
		{"with Expect the grace starts at the first read", webhook, true, 4 * time.Second,
			every(500*time.Millisecond, 1, 1<<20), Slow, 9 * time.Second, 9},
		{"without Expect it starts at once", webhook, false, 4 * time.Second,
			every(500*time.Millisecond, 1, 1<<20), Slow, 5 * time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			took, n, cut := send(t, tc.rule, tc.wait, tc.delay, tc.steps)
			if cut != tc.cut {
				t.Fatalf("cut: got %d after %v and %d bytes, want %d", cut, took, n, tc.cut)
			}
			if n < tc.atLeast {
				t.Errorf("read %d bytes, want at least %d", n, tc.atLeast)
			}
			if cut != 0 && (took < tc.took || took > tc.took+100*time.Millisecond) {
				t.Errorf("cut after %v, want within 100ms after %v", took, tc.took)
			}
		})
	}
}

// A body that ends before its declared length, or a client that goes
// away, is Short; a body over its cap is no cut.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{io.ErrUnexpectedEOF, Short},
		{errors.New("http2: client disconnected"), Short},
		{&http.MaxBytesError{Limit: 1}, 0},
		{&net.OpError{Op: "read", Err: timeoutError{}}, Slow},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v): got %d, want %d", tc.err, got, tc.want)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// Once the body has ended, the read deadline is the one after it.
func TestAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recorder{}
		after := time.Now().Add(time.Minute)
		r := NewReader(io.NopCloser(io.LimitReader(zeros{}, 10)), d, webhook, time.Time{}, after, false, nil)
		if got, want := d.last, time.Now().Add(5*time.Second); !got.Equal(want) {
			t.Errorf("first deadline: got %v, want %v", got, want)
		}
		io.Copy(io.Discard, r)
		if !d.last.Equal(after) {
			t.Errorf("deadline after the body: got %v, want %v", d.last, after)
		}
	})
}

type recorder struct{ last time.Time }

func (r *recorder) SetReadDeadline(t time.Time) error { r.last = t; return nil }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
