package server

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
)

// headUpstream is an upstream that keeps the raw head of every request it
// reads, and answers each as its script says: by default 200 on a
// connection kept open; a script's 101 is written as given, and the
// connection is then read until the other side closes it.
type headUpstream struct {
	url    string
	script func(head string) string // the answer to a head; nil: 200

	mu     sync.Mutex // guards heads
	heads  []string
	closed chan struct{} // gets a value when a switched connection is closed by admit
}

func newHeadUpstream(t testing.TB, script func(head string) string) *headUpstream {
	t.Helper()
	u := &headUpstream{script: script, closed: make(chan struct{}, 16)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	u.url = "http://" + ln.Addr().String()
	return u
}

func (u *headUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		u.mu.Lock()
		u.heads = append(u.heads, head.String())
		u.mu.Unlock()
		answer := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		if u.script != nil {
			answer = u.script(head.String())
		}
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
		if strings.HasPrefix(answer, "HTTP/1.1 101 ") {
			// Echo what comes, until admit closes the connection.
			io.Copy(c, br)
			u.closed <- struct{}{}
			return
		}
	}
}

// last returns the last head the upstream read.
func (u *headUpstream) last(t testing.TB) string {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.heads) == 0 {
		t.Fatal("the upstream read no request")
	}
	return u.heads[len(u.heads)-1]
}

// headLines returns the values of the head's fields named name, matched
// as CGI and WSGI servers match names: case and '_' against '-' ignored.
func headLines(head, name string) []string {
	var values []string
	for _, line := range strings.Split(head, "\r\n")[1:] {
		n, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.ReplaceAll(n, "_", "-"), name) {
			values = append(values, strings.TrimSpace(v))
		}
	}
	return values
}

// checkForwardedUpgrade fails unless head asks for exactly the upgrade
// want ("" for none) and carries no HTTP2-Settings.
func checkForwardedUpgrade(t testing.TB, head, want string) {
	t.Helper()
	up, conn := headLines(head, "Upgrade"), headLines(head, "Connection")
	switch {
	case want == "" && (len(up) > 0 || httpguts.HeaderValuesContainsToken(conn, "upgrade")):
		t.Errorf("the upstream got Upgrade %q, Connection %q; want no upgrade\n%s", up, conn, head)
	case want != "" && (len(up) != 1 || up[0] != want || !httpguts.HeaderValuesContainsToken(conn, "upgrade")):
		t.Errorf("the upstream got Upgrade %q, Connection %q; want Upgrade %q alone\n%s", up, conn, want, head)
	}
	if s := headLines(head, "HTTP2-Settings"); len(s) > 0 {
		t.Errorf("the upstream got HTTP2-Settings %q, want none\n%s", s, head)
	}
}

// h2cSettings is an HTTP2-Settings value as curl --http2 sends it.
const h2cSettings = "AAMAAABkAAQAoAAAAAIAAAAA"

// TestUpgradeAllowlist: a request switches protocols only to one the
// allowlist names, in whatever case, position or line the client puts it;
// any other Upgrade, and every HTTP2-Settings, is removed and the request
// forwarded as a plain one, over either way the proxy forwards.
func TestUpgradeAllowlist(t *testing.T) {
	cases := []struct {
		name    string
		flags   []string
		headers []string
		want    string // the Upgrade the upstream gets; empty: none
	}{
		{"websocket", nil, []string{"Connection: Upgrade", "Upgrade: websocket"}, "websocket"},
		{"WebSocket", nil, []string{"Connection: upgrade", "Upgrade: WebSocket"}, "websocket"},
		{"h2c", nil, []string{"Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c", "HTTP2-Settings: " + h2cSettings}, ""},
		{"H2C", nil, []string{"Connection: Upgrade, HTTP2-Settings", "Upgrade: H2C", "HTTP2-Settings: " + h2cSettings}, ""},
		{"h2c without naming HTTP2-Settings", nil, []string{"Connection: Upgrade", "Upgrade: h2c", "HTTP2-Settings: " + h2cSettings}, ""},
		{"websocket, h2c", nil, []string{"Connection: Upgrade", "Upgrade: websocket, h2c"}, "websocket"},
		{"h2c, websocket", nil, []string{"Connection: Upgrade", "Upgrade: h2c, websocket"}, "websocket"},
		{"h2c line, websocket line", nil, []string{"Connection: Upgrade", "Upgrade: h2c", "Upgrade: websocket"}, "websocket"},
		{"websocket line, h2c line", nil, []string{"Connection: Upgrade", "Upgrade: websocket", "Upgrade: h2c"}, "websocket"},
		{"HTTP/2.0", nil, []string{"Connection: Upgrade", "Upgrade: HTTP/2.0"}, ""},
		{"a version", nil, []string{"Connection: Upgrade", "Upgrade: websocket/13"}, ""},
		{"Connection keep-alive, Upgrade", nil, []string{"Connection: keep-alive, Upgrade", "Upgrade: websocket"}, "websocket"},
		{"Connection UPGRADE", nil, []string{"Connection: UPGRADE", "Upgrade: websocket"}, "websocket"},
		{"Connection on two lines", nil, []string{"Connection: keep-alive", "Connection: upgrade", "Upgrade: websocket"}, "websocket"},
		{"Connection on two lines, h2c", nil, []string{"Connection: keep-alive", "Connection: upgrade", "Upgrade: h2c"}, ""},
		{"no Connection upgrade", nil, []string{"Connection: keep-alive", "Upgrade: websocket"}, ""},
		{"no Connection upgrade, h2c", nil, []string{"Upgrade: h2c", "HTTP2-Settings: " + h2cSettings}, ""},
		{"HTTP2-Settings alone", nil, []string{"HTTP2-Settings: " + h2cSettings}, ""},
		{"HTTP2_Settings", nil, []string{"HTTP2_Settings: " + h2cSettings}, ""},
		{"Connection upgrade alone", nil, []string{"Connection: Upgrade"}, ""},
		{"none allowed", []string{"--upgrade", "none"}, []string{"Connection: Upgrade", "Upgrade: websocket"}, ""},
		{"another allowed", []string{"--upgrade", "x-chat"}, []string{"Connection: Upgrade", "Upgrade: h2c, X-Chat"}, "x-chat"},
		{"another allowed, websocket not", []string{"--upgrade", "x-chat"}, []string{"Connection: Upgrade", "Upgrade: websocket"}, ""},
	}
	up := newHeadUpstream(t, nil)
	for _, tr := range transports {
		for _, tc := range cases {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				cfg := serverConfig(t, append([]string{"--upstream", up.url, "--route", "link=GET /l/{id}"}, tc.flags...)...)
				cfg.Transport = tr.new()
				r := startConfig(t, cfg)
				head := "GET /u/x HTTP/1.1\r\nHost: a\r\n" + strings.Join(tc.headers, "\r\n") + "\r\n\r\n"
				if a := raw(t, strings.TrimPrefix(r.url, "http://"), head); a.status != http.StatusOK {
					t.Fatalf("got %d, want 200", a.status)
				}
				checkForwardedUpgrade(t, up.last(t), tc.want)
			})
		}
	}
}

// wsAccept is the Sec-WebSocket-Accept of a Sec-WebSocket-Key
// (RFC 6455 section 4.2.2).
func wsAccept(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// TestRefusedSwitchClosesTheConnection: a 101 for a protocol admit did not
// forward, or a WebSocket 101 whose Sec-WebSocket-Accept does not answer
// the key, gets the client a 502 and Connection: close, and admit closes
// the upstream's connection; a right one switches.
func TestRefusedSwitchClosesTheConnection(t *testing.T) {
	const key = "dGhlIHNhbXBsZSBub25jZQ=="
	ws := []string{"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: " + key}
	cases := []struct {
		name    string
		headers []string
		answer  string // the upstream's 101
		switchs bool   // the client gets the 101
	}{
		{"h2c asked, h2c switched", []string{"Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c", "HTTP2-Settings: " + h2cSettings},
			"Connection: Upgrade\r\nUpgrade: h2c", false},
		{"nothing asked", nil, "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " + wsAccept(key), false},
		{"websocket asked, h2c switched", ws, "Connection: Upgrade\r\nUpgrade: h2c", false},
		{"websocket asked, two protocols switched", ws, "Connection: Upgrade\r\nUpgrade: websocket, h2c\r\nSec-WebSocket-Accept: " + wsAccept(key), false},
		{"bad Sec-WebSocket-Accept", ws, "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " + wsAccept("another key"), false},
		{"no Sec-WebSocket-Accept", ws, "Connection: Upgrade\r\nUpgrade: websocket", false},
		{"two Sec-WebSocket-Accept", ws, "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " + wsAccept(key) + "\r\nSec-WebSocket-Accept: " + wsAccept(key), false},
		{"websocket", ws, "Connection: Upgrade\r\nUpgrade: WebSocket\r\nSec-WebSocket-Accept: " + wsAccept(key), true},
	}
	for _, tr := range transports {
		for _, tc := range cases {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				up := newHeadUpstream(t, func(string) string { return "HTTP/1.1 101 Switching Protocols\r\n" + tc.answer + "\r\n\r\n" })
				cfg := serverConfig(t, "--upstream", up.url, "--route", "link=GET /l/{id}")
				cfg.Transport = tr.new()
				r := startConfig(t, cfg)
				c := dialFrom(t, "127.0.0.1", strings.TrimPrefix(r.url, "http://"))
				c.SetDeadline(time.Now().Add(testTimeout))
				fmt.Fprint(c, "GET /u/ws HTTP/1.1\r\nHost: a\r\n"+strings.Join(tc.headers, "\r\n")+"\r\n\r\n")
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.switchs {
					if resp.StatusCode != http.StatusSwitchingProtocols {
						t.Fatalf("got %d, want 101", resp.StatusCode)
					}
					fmt.Fprint(c, "ping")
					if b := make([]byte, 4); !readFull(br, b) || string(b) != "ping" {
						t.Fatalf("the switched connection does not echo: got %q", b)
					}
					return
				}
				io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != http.StatusBadGateway {
					t.Errorf("got %d, want 502", resp.StatusCode)
				}
				// A client that asked for an upgrade may have sent bytes of
				// the protocol after its request, which must not be read as
				// requests; one that asked for nothing keeps its connection
				// on the direct path.
				if tc.headers != nil {
					if !resp.Close {
						t.Errorf("the 502 does not say Connection: close")
					}
					if n, err := br.ReadByte(); err != io.EOF {
						t.Errorf("after the 502: read %q, %v; want the connection closed", n, err)
					}
				}
				select {
				case <-up.closed:
				case <-time.After(testTimeout):
					t.Errorf("the upstream's switched connection is still open after %v", testTimeout)
				}
			})
		}
	}
}

// FuzzUpgradeHeaders sends requests with fuzzed Upgrade, Connection and
// HTTP2-Settings lines through the whole handler, the front's canonical
// request and either way of forwarding, and holds what reaches the
// upstream to the rule: no Upgrade but one the allowlist names, alone, and
// no HTTP2-Settings.
func FuzzUpgradeHeaders(f *testing.F) {
	// The seeds: the allowed upgrade, h2c alone and in lists, case and
	// white space, a version, several lines, Connection spellings.
	f.Add("websocket", "", "Upgrade", "", "/u/x")
	f.Add("h2c", "", "Upgrade, HTTP2-Settings", h2cSettings, "/u/x")
	f.Add("H2C", "websocket", "upgrade", "", "/l/x")
	f.Add("websocket, h2c", "", "keep-alive,Upgrade", h2cSettings, "/u/x")
	f.Add(" h2c ,\twebsocket ", "h2c", "UPGRADE", "", "/u/x")
	f.Add("websocket/13", "", "Upgrade", "", "/u/x")
	f.Add("", "", "HTTP2-Settings", h2cSettings, "/u/x")
	f.Add("x-chat", "", "Upgrade", "", "/u/x")
	f.Add("websocket\x00h2c", "", "upgrade\tclose", "", "/U/./x")
	up := newHeadUpstream(f, nil)
	servers := make([]http.Handler, len(transports))
	for i, tr := range transports {
		cfg := serverConfig(f, "--upstream", up.url, "--route", "link=GET /l/{id}", "--upgrade", "websocket")
		cfg.Transport = tr.new()
		servers[i] = startConfig(f, cfg).s.handler
	}
	f.Fuzz(func(t *testing.T, up1, up2, conn, settings, path string) {
		if _, err := url.ParseRequestURI(path); err != nil || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n") {
			return // a request line no client sends
		}
		for _, h := range servers {
			req := httptest.NewRequest("GET", "http://a"+path, nil)
			for _, v := range []string{up1, up2} {
				if v != "" {
					req.Header.Add("Upgrade", v)
				}
			}
			req.Header.Set("Connection", conn)
			req.Header.Set("Http2-Settings", settings)
			up.mu.Lock()
			before := len(up.heads)
			up.mu.Unlock()
			h.ServeHTTP(httptest.NewRecorder(), req)
			up.mu.Lock()
			heads := up.heads[before:]
			up.mu.Unlock()
			for _, head := range heads {
				if u := headLines(head, "Upgrade"); len(u) > 0 {
					checkForwardedUpgrade(t, head, "websocket")
				} else {
					checkForwardedUpgrade(t, head, "")
				}
			}
		}
	})
}

// TestUpgradeDocsNameTheUpgradeHeaders keeps docs/operators.md
// ("Upgrades") naming every upgrade header admit removes.
func TestUpgradeDocsNameTheUpgradeHeaders(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Upgrades\n")
	if !ok {
		t.Fatal(`docs/operators.md has no "### Upgrades" section`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	for _, row := range factTable {
		if row.family != famUpgrade {
			continue
		}
		name := row.pattern
		if !strings.Contains(strings.ToLower(section), "`"+strings.ToLower(name)+"`") {
			t.Errorf("docs/operators.md, Upgrades: %s is not named", name)
		}
	}
}

// TestRefusedSwitchKeepsHTTP2Connection: a refused 101 to a stream of an
// HTTP/2 connection answers that stream 502 and leaves the connection,
// which may carry other clients' streams through a balancer, open.
func TestRefusedSwitchKeepsHTTP2Connection(t *testing.T) {
	up := newHeadUpstream(t, func(string) string {
		return "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
	})
	r := start(t, "--upstream", up.url, "--route", "link=GET /l/{id}", "--h2c")
	client := h2cClient()
	for i := range 2 {
		var reused bool
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
		})
		// A body of unknown length goes through net/http's Transport,
		// whose 101 admit refuses as errSwitch.
		req, err := http.NewRequestWithContext(ctx, "POST", r.url+"/u/x", io.NopCloser(strings.NewReader("x")))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("request %d: got %s %d, want HTTP/2 502", i, resp.Proto, resp.StatusCode)
		}
		if i == 1 && !reused {
			t.Errorf("the second stream went on a new connection: the refused 101 closed the first")
		}
	}
}
