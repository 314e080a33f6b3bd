package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/admitgo/admit/internal/testrouter"
)

// h2cAttempt sends, on a new connection to addr, a GET of path with the
// header lines upgrade and, when it is answered 101, as an h2c client
// does, the HTTP/2 preface, SETTINGS and a GET of path on each of streams
// more streams. It returns the status of the HTTP/1.1 answer and, after a
// 101, how many streams the tunnel answered to the end (the upgraded
// request's own, 1, among them) before it closed.
func h2cAttempt(t *testing.T, addr, path string, upgrade []string, streams int) (status, answered int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n\r\n", path, addr, strings.Join(upgrade, "\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, 0
	}
	var out bytes.Buffer
	out.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&out, nil)
	fr.WriteSettings()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for i := range streams {
		block.Reset()
		for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: addr}, {Name: ":path", Value: path}} {
			enc.WriteField(f)
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(3 + 2*i), BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true})
	}
	if _, err := c.Write(out.Bytes()); err != nil {
		return resp.StatusCode, 0
	}
	fr = http2.NewFramer(c, br)
	for answered < streams+1 {
		f, err := fr.ReadFrame()
		if err != nil {
			return resp.StatusCode, answered // the tunnel closed
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				http2.NewFramer(c, nil).WriteSettingsAck()
			}
		case *http2.GoAwayFrame:
			return resp.StatusCode, answered
		}
		if f.Header().Flags.Has(http2.FlagDataEndStream) && (f.Header().Type == http2.FrameData || f.Header().Type == http2.FrameHeaders) {
			answered++
		}
	}
	return resp.StatusCode, answered
}

// TestH2CUpgradeNeverReachesARealUpstream runs servers that switch to
// HTTP/2 on Upgrade: h2c, and shows that they do when asked directly;
// through admit, no spelling of the upgrade yields a 101, and the limited
// route's handler, counted by the app itself, runs at most the burst,
// however many HTTP/2 streams each attempt pipelines behind its request.
func TestH2CUpgradeNeverReachesARealUpstream(t *testing.T) {
	const burst, attempts, streams = 3, 4, 10
	settings := []string{"Connection: Upgrade, HTTP2-Settings", "HTTP2-Settings: " + h2cSettings}
	spellings := []struct {
		name    string
		upgrade []string
	}{
		{"h2c", append([]string{"Upgrade: h2c"}, settings...)},
		{"H2C", append([]string{"Upgrade: H2C"}, settings...)},
		{"websocket line, h2c line", append([]string{"Upgrade: websocket", "Upgrade: h2c"}, settings...)},
		{"h2c, websocket", append([]string{"Upgrade: h2c, websocket"}, settings...)},
		{"HTTP2-Settings not named in Connection", []string{"Connection: Upgrade", "Upgrade: h2c", "HTTP2-Settings: " + h2cSettings}},
		{"no Connection upgrade", []string{"Connection: keep-alive", "Upgrade: h2c", "HTTP2-Settings: " + h2cSettings}},
	}
	cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: link, pattern: "GET /l/{id}"}
budgets:
  link: {rate: 0.001, burst: %d, per_client: 100, inflight: 100}
`, burst))
	for _, kind := range testrouter.SwitchingKinds() {
		t.Run(string(kind), func(t *testing.T) {
			up := testrouter.Start(t, kind)
			status, answered := h2cAttempt(t, strings.TrimPrefix(up.URL, "http://"), "/l/direct", spellings[0].upgrade, streams)
			if status != http.StatusSwitchingProtocols || answered != streams+1 {
				t.Fatalf("straight to %s: got %d with %d streams answered, want 101 and %d: the upstream does not switch, so the test shows nothing", kind, status, answered, streams+1)
			}
			if hits := up.Hits(t); hits != streams+1 {
				t.Fatalf("straight to %s: the limited handler ran %d times, want %d", kind, hits, streams+1)
			}
			for _, sp := range spellings {
				t.Run(sp.name, func(t *testing.T) {
					up.Reset(t)
					r := start(t, "--upstream", up.URL, "--config", cfg)
					for range attempts {
						if status, answered := h2cAttempt(t, strings.TrimPrefix(r.url, "http://"), "/l/x", sp.upgrade, streams); status == http.StatusSwitchingProtocols {
							t.Errorf("through admit: got 101, and the tunnel answered %d streams", answered)
						}
					}
					if hits := up.Hits(t); hits > burst {
						t.Errorf("through admit: the limited handler ran %d times, want at most the burst, %d", hits, burst)
					}
				})
			}
		})
	}
}
