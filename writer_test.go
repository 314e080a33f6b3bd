package admit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serveGroup runs a real server on loopback with h wrapped in group g.
func serveGroup(t *testing.T, budget Budget, h http.Handler) *httptest.Server {
	t.Helper()
	d, err := New(Config{Budgets: map[Group]Budget{GroupWebhook: budget}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Wrap(GroupWebhook, h, nil))
	t.Cleanup(srv.Close)
	return srv
}

func TestReadTimeoutCutsSlowBodies(t *testing.T) {
	budget := DefaultBudgets()[GroupWebhook]
	budget.ReadTimeout = 50 * time.Millisecond
	readErr := make(chan error, 1)
	srv := serveGroup(t, budget, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		w.WriteHeader(http.StatusRequestTimeout)
	}))

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Ten of the hundred promised bytes, then nothing.
	fmt.Fprintf(conn, "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")

	err = <-readErr
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("handler's body read: got %v, want a timeout", err)
	}
}

func TestBodyCap(t *testing.T) {
	budget := DefaultBudgets()[GroupWebhook]
	budget.MaxBodyBytes = 16
	readErr := make(chan error, 1)
	srv := serveGroup(t, budget, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		}
	}))

	t.Run("declared length", func(t *testing.T) {
		resp, err := http.Post(srv.URL, "text/plain", strings.NewReader(strings.Repeat("x", 17)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("17-byte body: got %d, want 413", resp.StatusCode)
		}
		select {
		case err := <-readErr:
			t.Fatalf("handler ran (read error %v); want the door to answer", err)
		default:
		}
	})
	t.Run("streamed", func(t *testing.T) {
		// An io.Reader of unknown length is sent chunked.
		body := io.MultiReader(strings.NewReader(strings.Repeat("x", 10)), strings.NewReader(strings.Repeat("y", 10)))
		resp, err := http.Post(srv.URL, "text/plain", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var tooLarge *http.MaxBytesError
		if err := <-readErr; !errors.As(err, &tooLarge) {
			t.Fatalf("handler's read: got %v, want *http.MaxBytesError", err)
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("20-byte chunked body: got %d, want 413", resp.StatusCode)
		}
	})
	t.Run("within the cap", func(t *testing.T) {
		resp, err := http.Post(srv.URL, "text/plain", strings.NewReader(strings.Repeat("x", 16)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := <-readErr; err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("16-byte body: got %d and read error %v, want 200 and none", resp.StatusCode, err)
		}
	})
}

func TestFlushReachesTheClientEarly(t *testing.T) {
	acked := make(chan struct{})
	done := make(chan struct{})
	srv := serveGroup(t, DefaultBudgets()[GroupWebhook], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		io.WriteString(w, "ack\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush through the door: %v", err)
			return
		}
		<-acked // keep working until the client has its answer
	}))

	resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "ack\n" {
		t.Fatalf("early answer: got %q, %v; want \"ack\\n\"", line, err)
	}
	select {
	case <-done:
		t.Fatal("handler returned before the client read its answer")
	default:
	}
	close(acked)
	<-done
}

func TestWriterRecordsTheFinalStatus(t *testing.T) {
	tests := []struct {
		name  string
		serve func(http.ResponseWriter)
		want  int
	}{
		{"nothing written", func(http.ResponseWriter) {}, http.StatusOK},
		{"body only", func(w http.ResponseWriter) { io.WriteString(w, "hi") }, http.StatusOK},
		{"explicit", func(w http.ResponseWriter) { w.WriteHeader(http.StatusConflict) }, http.StatusConflict},
		{"informational first", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusUnauthorized)
		}, http.StatusUnauthorized},
		{"second call ignored", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusInternalServerError)
		}, http.StatusAccepted},
		{"flush", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &writer{ResponseWriter: httptest.NewRecorder()}
			tt.serve(w)
			if got := w.answered(); got != tt.want {
				t.Fatalf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReadDeadlineEndsWithTheBody(t *testing.T) {
	budget := DefaultBudgets()[GroupWebhook]
	budget.ReadTimeout = 50 * time.Millisecond
	worked := make(chan error, 1)
	srv := serveGroup(t, budget, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			worked <- err
			return
		}
		w.WriteHeader(http.StatusAccepted)
		http.NewResponseController(w).Flush()
		// Keep working past the deadline, as a webhook handler that
		// acknowledged early does; its context must stay alive.
		select {
		case <-r.Context().Done():
			worked <- r.Context().Err()
		case <-time.After(4 * budget.ReadTimeout):
			worked <- nil
		}
	}))
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := <-worked; err != nil {
		t.Fatalf("after the body: got %v, want the request's context alive", err)
	}
}
