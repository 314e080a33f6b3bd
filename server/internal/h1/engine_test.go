package h1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// start serves h with the engine on loopback, its fallback a net/http
// server with the settings of the proxy's, and returns the address.
func start(t *testing.T, h http.Handler) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{HTTP: &http.Server{Handler: h, MaxHeaderBytes: 64 << 10, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v, want http.ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// startHTTP serves h with net/http's server alone, for comparison.
func startHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, MaxHeaderBytes: 64 << 10, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// answer is a response as the client reads it, and whether the
// connection carried a second request after it.
type answer struct {
	status   int
	header   http.Header
	body     string
	trailer  http.Header
	length   int64
	chunked  bool
	close    bool
	kept     bool
	cut      bool  // the body ended before its length
	none     bool  // no answer at all
	informal []int // 1xx statuses before it
}

// exchange sends raw, one request, on a new connection to addr, reads the
// answer, then tries a second request on the same connection.
func exchange(t *testing.T, addr, raw string) answer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	var a answer
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(br, req)
		if err != nil {
			a.none = true // the connection closed before an answer
			return a
		}
		if resp.StatusCode >= 200 {
			break
		}
		a.informal = append(a.informal, resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if a.cut = err != nil; a.cut {
		body = nil // how much of a cut answer arrives depends on buffers
	}
	resp.Header.Del("Date")
	a.status, a.header, a.body, a.trailer = resp.StatusCode, resp.Header, string(body), resp.Trailer
	a.length, a.chunked, a.close = resp.ContentLength, len(resp.TransferEncoding) > 0, resp.Close
	if _, err := io.WriteString(c, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
		if resp, err := http.ReadResponse(br, nil); err == nil {
			resp.Body.Close()
			a.kept = true
		}
	}
	return a
}

// TestAnswersAsNetHTTP serves the same handlers through the engine and
// through net/http's server: every answer must reach the client alike,
// framing, header fields, body, trailers and connection reuse.
func TestAnswersAsNetHTTP(t *testing.T) {
	big := strings.Repeat("0123456789", 500)
	handlers := map[string]http.HandlerFunc{
		"small": func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") },
		"empty": func(http.ResponseWriter, *http.Request) {},
		"html":  func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html><body>x") },
		"typed": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
		},
		"encoded": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = io.WriteString(w, "zz")
		},
		"untyped": func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = nil
			_, _ = io.WriteString(w, "x")
		},
		"nodate": func(w http.ResponseWriter, _ *http.Request) { w.Header()["Date"] = nil; _, _ = io.WriteString(w, "x") },
		"large":  func(w http.ResponseWriter, _ *http.Request) { writeIn(w, big, 1000) },
		"declared": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "5000")
			writeIn(w, big, 1000)
		},
		"short": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "10")
			_, _ = io.WriteString(w, "12345")
		},
		"badlength": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "x")
			_, _ = io.WriteString(w, "12345")
		},
		"spacedlength": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", " 5")
			_, _ = io.WriteString(w, "12345")
		},
		"emptylength": func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Length"] = []string{""}
			_, _ = io.WriteString(w, "12345")
		},
		"overlong": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "3")
			if _, err := io.WriteString(w, "12345"); err != http.ErrContentLength {
				panic(err)
			}
			_, _ = io.WriteString(w, "123")
		},
		"bigwrite": func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>"+big) },
		"smallbig": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "<ht")
			_, _ = io.WriteString(w, "ml>"+big)
		},
		"abortlate": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "6000")
			_, _ = io.WriteString(w, big[:3000])
			panic(http.ErrAbortHandler)
		},
		"flushed": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "a")
			_ = http.NewResponseController(w).Flush()
			_, _ = io.WriteString(w, "b")
		},
		"flushedempty": func(w http.ResponseWriter, _ *http.Request) { _ = http.NewResponseController(w).Flush() },
		"nocontent": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			if _, err := io.WriteString(w, "x"); err != http.ErrBodyNotAllowed {
				panic(err)
			}
		},
		"notmodified": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("ETag", `"a"`)
			w.WriteHeader(http.StatusNotModified)
		},
		"created": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, "c")
		},
		"odd": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(599) },
		"twice": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusTeapot)
		},
		"announced": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Trailer", "X-Sum, Host")
			_, _ = io.WriteString(w, "body")
			w.Header().Set("X-Sum", "42")
			w.Header().Set("Host", "not a trailer")
		},
		"prefixed": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "body")
			_ = http.NewResponseController(w).Flush()
			w.Header().Set(http.TrailerPrefix+"X-Late", "1")
		},
		"early": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.Header().Set("Content-Length", "1")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			_, _ = io.WriteString(w, "x")
		},
		"closes": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "x")
		},
		"newline": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-A", "a\r\nb: c")
			_, _ = io.WriteString(w, "x")
		},
		"multi": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Add("Set-Cookie", "a=1")
			w.Header().Add("Set-Cookie", "b=2")
		},
		"abort": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, "x")
			_ = http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		},
		"abortfirst": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "x")
			panic(http.ErrAbortHandler)
		},
		"ownchunk": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Transfer-Encoding", "chunked")
			_, _ = io.WriteString(w, "x")
		},
	}
	mux := http.NewServeMux()
	for name, h := range handlers {
		mux.Handle("/"+name, h)
	}
	mux.HandleFunc("/again", func(http.ResponseWriter, *http.Request) {})
	_, engine := start(t, mux)
	plain := startHTTP(t, mux)
	for name := range handlers {
		for _, raw := range []string{
			"GET /" + name + " HTTP/1.1\r\nHost: x\r\n\r\n",
			"HEAD /" + name + " HTTP/1.1\r\nHost: x\r\n\r\n",
			"GET /" + name + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		} {
			if _, _, ok := parseHead([]byte(raw)); !ok {
				t.Fatalf("%q: the engine does not take it", raw)
			}
			got, want := exchange(t, engine, raw), exchange(t, plain, raw)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q:\n engine   %+v\n net/http %+v", raw, got, want)
			}
		}
	}
}

func writeIn(w io.Writer, s string, n int) {
	for len(s) > 0 {
		k := min(n, len(s))
		_, _ = io.WriteString(w, s[:k])
		s = s[k:]
	}
}
