package clientip

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
)

// headerTimeout is short so the silent-peer test ends quickly; connections
// in the other tests send their header at once.
const headerTimeout = 100 * time.Millisecond

// patience bounds every client read so a broken listener fails the test
// instead of hanging it.
const patience = 10 * time.Second

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// keyServer serves the key of each request, resolved behind a PROXY
// protocol listener accepting headers from the prefixes in from.
func keyServer(t *testing.T, from []netip.Prefix) string {
	t.Helper()
	r := resolver(t, Config{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprint(w, r.Key(req))
	}))
	srv.Listener = ProxyProtocolListener(srv.Listener, from, headerTimeout)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// exchange dials addr, sends header and a GET, and returns what came back
// before the server closed the connection.
func exchange(t *testing.T, addr string, header []byte) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	msg := append(header, "GET / HTTP/1.1\r\nHost: admit.test\r\nConnection: close\r\n\r\n"...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("server neither answered nor closed within %v", patience)
	}
	return string(out)
}

// keyed asserts the server answered with key.
func keyed(t *testing.T, addr string, header []byte, key string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(exchange(t, addr, header))), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if got := string(body); got != key {
		t.Errorf("key %q, want %q", got, key)
	}
}

// refused asserts the server closed the connection without answering.
func refused(t *testing.T, addr string, header []byte) {
	t.Helper()
	if out := exchange(t, addr, header); out != "" {
		t.Errorf("server answered %q, want the connection closed", out)
	}
}

func v2(t *testing.T, cmd proxyproto.ProtocolVersionAndCommand, src, dst string) []byte {
	t.Helper()
	h := proxyproto.HeaderProxyFromAddrs(2, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(src)), net.TCPAddrFromAddrPort(netip.MustParseAddrPort(dst)))
	h.Command = cmd
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProxyProtocolSetsKey(t *testing.T) {
	addr := keyServer(t, loopback)
	t.Run("v1", func(t *testing.T) {
		keyed(t, addr, []byte("PROXY TCP4 198.51.100.7 127.0.0.1 4711 80\r\n"), "198.51.100.7/32")
	})
	t.Run("v1 IPv6", func(t *testing.T) {
		keyed(t, addr, []byte("PROXY TCP6 2001:db8:a:b::7 ::1 4711 80\r\n"), "2001:db8:a:b::/64")
	})
	t.Run("v2", func(t *testing.T) {
		keyed(t, addr, v2(t, proxyproto.PROXY, "198.51.100.8:4711", "127.0.0.1:80"), "198.51.100.8/32")
	})
	t.Run("v2 mapped source is canonicalised", func(t *testing.T) {
		keyed(t, addr, v2(t, proxyproto.PROXY, "[::ffff:198.51.100.9]:4711", "[::1]:80"), "198.51.100.9/32")
	})
	t.Run("v2 LOCAL keys the balancer", func(t *testing.T) {
		keyed(t, addr, v2(t, proxyproto.LOCAL, "198.51.100.8:4711", "127.0.0.1:80"), "127.0.0.1/32")
	})
}

func TestProxyProtocolRefuses(t *testing.T) {
	t.Run("header from a peer outside from", func(t *testing.T) {
		addr := keyServer(t, []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")})
		refused(t, addr, []byte("PROXY TCP4 198.51.100.7 127.0.0.1 4711 80\r\n"))
	})
	t.Run("peer outside from without header is served", func(t *testing.T) {
		addr := keyServer(t, []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")})
		keyed(t, addr, nil, "127.0.0.1/32")
	})
	t.Run("allowed peer without header", func(t *testing.T) {
		refused(t, keyServer(t, loopback), nil)
	})
	t.Run("bad v1 header", func(t *testing.T) {
		refused(t, keyServer(t, loopback), []byte("PROXY TCP4 198.51.100.7 nonsense 4711 80\r\n"))
	})
	t.Run("bad v2 header", func(t *testing.T) {
		h := v2(t, proxyproto.PROXY, "198.51.100.8:4711", "127.0.0.1:80")
		h[13] = 0x77 // an address family and protocol that does not exist
		refused(t, keyServer(t, loopback), h)
	})
}

// accepted starts a raw PROXY protocol listener on loopback and returns its
// address and the channel that yields the first accepted connection.
func accepted(t *testing.T, from []netip.Prefix) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pl := ProxyProtocolListener(ln, from, headerTimeout)
	t.Cleanup(func() { pl.Close() })
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := pl.Accept()
		if err != nil {
			close(ch)
			return
		}
		t.Cleanup(func() { c.Close() })
		ch <- c
	}()
	return pl.Addr().String(), ch
}

// TestProxyProtocolSilentPeer checks that an allowed peer that sends nothing
// is cut off once the header timeout passes, and that its connection never
// reports the balancer's address.
func TestProxyProtocolSilentPeer(t *testing.T) {
	addr, ch := accepted(t, loopback)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	sc := <-ch
	if sc == nil {
		t.Fatal("Accept failed")
	}
	// RemoteAddr waits for the header, so it returns after the timeout.
	ra := sc.RemoteAddr()
	if _, ok := parseNode(ra.String(), false); ok {
		t.Errorf("RemoteAddr = %v, want a non-IP address after a missing header", ra)
	}
	if _, err := sc.Read(make([]byte, 1)); err == nil {
		t.Error("Read succeeded on a connection without a header")
	}
	if err := c.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("client Read succeeded, want the connection closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %v", patience)
	}
	if d := time.Since(start); d < headerTimeout {
		t.Errorf("cut off after %v, before the %v timeout", d, headerTimeout)
	}
}

// TestProxyProtocolBadHeaderAddr checks the connection-level contract: a bad
// header closes the connection and RemoteAddr never falls back to the
// balancer.
func TestProxyProtocolBadHeaderAddr(t *testing.T) {
	addr, ch := accepted(t, loopback)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("PROXY TCP4 198.51.100.7\r\nGET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	sc := <-ch
	if sc == nil {
		t.Fatal("Accept failed")
	}
	if ra := sc.RemoteAddr(); strings.HasPrefix(ra.String(), "127.") {
		t.Errorf("RemoteAddr = %v, fell back to the balancer", ra)
	}
	if err := c.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("client Read succeeded, want the connection closed")
	}
}

func TestProxyProtocolDefaultTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pl := ProxyProtocolListener(ln, loopback, 0).(*proxyListener)
	defer pl.Close()
	if pl.timeout != 5*time.Second {
		t.Errorf("timeout %v, want 5s", pl.timeout)
	}
}
