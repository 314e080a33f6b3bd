package upstream

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestDirectStreamsEvents: server-sent events reach the client as the
// upstream sends them, not when the answer ends.
func TestDirectStreamsEvents(t *testing.T) {
	next := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(next) }) }
	defer release()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-next
		io.WriteString(w, "data: 2\n\n")
	}))
	defer up.Close()
	target, _ := url.Parse(up.URL)
	proxy, _ := directProxy(t, target)
	client := &http.Client{Timeout: testTimeout}
	defer client.CloseIdleConnections()
	resp, err := client.Get(proxy.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	// The second event waits for this read: an answer held back until
	// the upstream finishes fails it at the client's timeout.
	if line, err := br.ReadString('\n'); line != "data: 1\n" {
		t.Fatalf("first line: got %q, %v; want the first event before the upstream finished", line, err)
	}
	release()
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "\ndata: 2\n\n" {
		t.Errorf("rest: got %q, %v", rest, err)
	}
}

// TestDirectLargeBodies: bodies larger than every buffer arrive whole, both
// ways.
func TestDirectLargeBodies(t *testing.T) {
	payload := make([]byte, 1<<20+123)
	rand.Read(payload)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("echo") != "" {
			w.Write(got)
			return
		}
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		}
		w.Write(payload)
	}))
	defer up.Close()
	target, _ := url.Parse(up.URL)
	proxy, _ := directProxy(t, target)
	client := &http.Client{Timeout: testTimeout}
	defer client.CloseIdleConnections()
	for _, query := range []string{"", "chunked=1"} {
		resp, err := client.Get(proxy.URL + "/big?" + query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, payload) {
			t.Errorf("%q: got %d bytes, %v; want the %d sent", query, len(got), err, len(payload))
		}
	}
	body := strings.Repeat("b", maxDirectBody)
	resp, err := client.Post(proxy.URL+"/echo?echo=1", "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != body {
		t.Errorf("echo: got %d bytes, want %d", len(got), len(body))
	}
}

func TestTakes(t *testing.T) {
	d := Transport().Direct(&url.URL{Scheme: "http", Host: "127.0.0.1:1"}, nil)
	withHeader := func(r *http.Request, name, value string) *http.Request {
		r.Header.Set(name, value)
		return r
	}
	unsized := httptest.NewRequest("POST", "/", strings.NewReader("x"))
	unsized.ContentLength = -1
	trailed := httptest.NewRequest("POST", "/", strings.NewReader("x"))
	trailed.Trailer = http.Header{"X-Sum": nil}
	tests := []struct {
		name string
		r    *http.Request
		want bool
	}{
		{"GET", httptest.NewRequest("GET", "/", nil), true},
		{"small body", httptest.NewRequest("POST", "/", strings.NewReader("x")), true},
		{"largest body", httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", maxDirectBody))), true},
		{"larger body", httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", maxDirectBody+1))), false},
		{"unsized body", unsized, false},
		{"trailers", trailed, false},
		{"expect", withHeader(httptest.NewRequest("POST", "/", strings.NewReader("x")), "Expect", "100-continue"), false},
		{"upgrade", withHeader(withHeader(httptest.NewRequest("GET", "/", nil), "Connection", "keep-alive, Upgrade"), "Upgrade", "websocket"), false},
		{"keep-alive", withHeader(httptest.NewRequest("GET", "/", nil), "Connection", "keep-alive"), true},
	}
	for _, tt := range tests {
		if got := d.Takes(tt.r); got != tt.want {
			t.Errorf("%s: Takes = %v, want %v", tt.name, got, tt.want)
		}
	}
	for _, target := range []string{"https://example.test", "http://u:p@example.test", "http:opaque"} {
		u, _ := url.Parse(target)
		if Transport().Direct(u, nil) != nil {
			t.Errorf("Direct(%s) is not nil", target)
		}
	}
}

// TestDirectSendsWhatReverseProxySends: the request the upstream gets from
// the direct path is the one httputil.ReverseProxy with SetURL and net/http's
// Transport send, but for the Accept-Encoding the Transport adds to decode
// answers itself.
func TestDirectSendsWhatReverseProxySends(t *testing.T) {
	up := newRawUpstream(t, func(*http.Request) (string, bool) { return okAnswer, false })
	target := up.url()
	target.Path, target.RawQuery = "/base/", "t=1"
	direct, _ := directProxy(t, target)
	reverse := reverseProxy(t, target)
	requests := []func(base string) *http.Request{
		func(base string) *http.Request {
			r, _ := http.NewRequest("GET", base+"/a%2Fb/c?x=1;y=2&z=%zz", nil)
			r.Header["User-Agent"] = []string{"agent/1", "second"}
			r.Header.Set("Connection", "X-Drop, keep-alive")
			r.Header.Set("X-Drop", "1")
			r.Header.Set("Keep-Alive", "timeout=5")
			r.Header.Set("Te", "trailers")
			r.Header.Set("Proxy-Authorization", "Basic eA==")
			r.Header.Set("X-Forwarded-For", "203.0.113.9")
			r.Header.Set("Forwarded", "for=203.0.113.9")
			r.Header["X-Keep"] = []string{"a", " b "}
			return r
		},
		func(base string) *http.Request {
			r, _ := http.NewRequest("POST", base+"/form", strings.NewReader("a=1&b=2"))
			return r
		},
		func(base string) *http.Request {
			r, _ := http.NewRequest("PUT", base+"/", nil)
			return r
		},
		func(base string) *http.Request {
			r, _ := http.NewRequest("DELETE", base+"/x?", nil)
			return r
		},
	}
	client := &http.Client{Timeout: testTimeout, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	for i, req := range requests {
		for _, base := range []string{direct.URL, reverse.URL} {
			resp, err := client.Do(req(base))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		up.mu.Lock()
		got, want := up.requests[2*i], up.requests[2*i+1]
		up.mu.Unlock()
		if g, w := readHead(t, got), readHead(t, want); g != w {
			t.Errorf("request %d:\ndirect  %s\nreverse %s", i, g, w)
		}
	}
}

// readHead returns a request head in a form that does not depend on the
// order of its fields.
func readHead(t *testing.T, head string) string {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	h := r.Header.Clone()
	h.Del("Accept-Encoding")
	var b strings.Builder
	b.WriteString(r.Method + " " + r.RequestURI + " Host=" + r.Host + " Length=" + strconv.FormatInt(r.ContentLength, 10))
	h.WriteSubset(&b, nil)
	return strings.ReplaceAll(b.String(), "\r\n", "; ")
}
