package listener

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
)

func listen(t *testing.T, caps Caps) (net.Listener, *Counts) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counts := new(Counts)
	l := Limit(ln, caps, counts)
	t.Cleanup(func() { l.Close() })
	return l, counts
}

func dial(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A connection past Max is closed on arrival: its client reads the end,
// and the next connection after a close is served again.
func TestMaxClosesOnArrival(t *testing.T) {
	l, counts := listen(t, Caps{Max: 1})
	c1 := dial(t, l)
	s1, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c2 := dial(t, l)
	if _, err := c2.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("past Max: read %v, want the connection closed", err)
	}
	if got := counts.refused[refusedTotal].Load(); got != 1 {
		t.Errorf("refused past Max: %d, want 1", got)
	}
	s1.Close()
	c1.Close()
	dial(t, l)
	if c := <-accepted; c == nil {
		t.Fatal("after a close, the next connection was not served")
	} else {
		c.Close()
	}
	if got := counts.open.Load(); got != 0 {
		t.Errorf("open %d after every close, want 0", got)
	}
}

// One client past PerClient is refused on its first read; a trusted peer
// is not.
func TestPerClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted func(netip.Addr) bool
		refused bool
	}{
		{"untrusted", nil, true},
		{"trusted", func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.1") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, counts := listen(t, Caps{Max: 8, PerClient: 1, Trusted: tc.trusted})
			for range 2 {
				if _, err := dial(t, l).Write([]byte{'x'}); err != nil {
					t.Fatal(err)
				}
			}
			first, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			second, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			first.RemoteAddr() // keys the first, as a server does
			_, err = second.Read(make([]byte, 1))
			if refused := errors.Is(err, net.ErrClosed); refused != tc.refused {
				t.Errorf("second connection of one client: read %v, want refused %v", err, tc.refused)
			}
			want := int64(0)
			if tc.refused {
				want = 1
			}
			if got := counts.refused[refusedClient].Load(); got != want {
				t.Errorf("refused per client: %d, want %d", got, want)
			}
			first.Close()
			second.Close()
			second.Close() // a second close gives nothing back twice
			if got := counts.open.Load(); got != 0 {
				t.Errorf("open %d, want 0", got)
			}
		})
	}
}
