package rlsd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/admitgo/admit/server/internal/config"
)

// stats returns what s's /stats shows, by name.
func (s *rlsServer) stats(t *testing.T) map[string]string {
	t.Helper()
	b := s.get(t, "/stats")
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(b, "\n"), "\n") {
		if !statsLine.MatchString(line) {
			t.Fatalf("/stats line %q is not name: count", line)
		}
		name, value, _ := strings.Cut(line, ": ")
		out[name] = value
	}
	return out
}

// statsLine is a /stats line: a name of the characters a stat's name
// keeps, with the tags' "=" only after "__", and a count.
var statsLine = regexp.MustCompile(`^[A-Za-z0-9_./~+%?&*!$-]+(\.__[A-Za-z0-9_-]+=[A-Za-z0-9_./~+%?&*!$-]+)*: [0-9]+$`)

// statsdLine is a statsd counter or gauge as admit rls sends it.
var statsdLine = regexp.MustCompile(`^[A-Za-z0-9_./~+%?&*!$-]+(\.__[A-Za-z0-9_-]+=[A-Za-z0-9_./~+%?&*!$-]+)*:[0-9]+\|[cg]$`)

// TestRLSStatsNames shows the counts under envoyproxy/ratelimit's stat
// names, tagged as its EXTRA_TAGS tags them.
func TestRLSStatsNames(t *testing.T) {
	s := startRLS(t, rlsTestConfig, "--stats-tags", "zone:eu.west,app:edge")
	wantCodes(t, codesOf(t, s.client(t, nil), "10.0.0.1", 3), ok, ok, over)
	const tags = ".__app=edge.__zone=eu_west"
	got := s.stats(t)
	for name, want := range map[string]string{
		"ratelimit.service.rate_limit.edge.remote_address.total_hits":   "3",
		"ratelimit.service.rate_limit.edge.remote_address.within_limit": "2",
		"ratelimit.service.rate_limit.edge.remote_address.over_limit":   "1",
		"ratelimit.service.config_load_success":                         "1",
		"ratelimit_server.ShouldRateLimit.total_requests":               "3",
	} {
		if got[name+tags] != want {
			t.Errorf("%s: got %q, want %q; /stats: %v", name+tags, got[name+tags], want, got)
		}
	}
}

// TestRLSStatsLocalCache reports the local over-limit cache's look-ups as
// the reference reports freecache's hits and misses: gauges, sent whole.
func TestRLSStatsLocalCache(t *testing.T) {
	statsd := listenStatsd(t, "tcp")
	s := startRLS(t, rlsTestConfig, "--local-cache-bytes", "1", "--statsd", statsd.addr, "--statsd-interval", "10ms")
	// The third call passes the limit of 2 and is remembered; the fourth
	// is answered by the cache.
	wantCodes(t, codesOf(t, s.client(t, nil), "10.0.0.1", 4), ok, ok, over, over)
	got := s.stats(t)
	if got["ratelimit.localcache.hitCount"] != "1" || got["ratelimit.localcache.missCount"] != "3" {
		t.Errorf("hitCount %q, missCount %q; want 1 and 3", got["ratelimit.localcache.hitCount"], got["ratelimit.localcache.missCount"])
	}
	for line := range statsd.lines() {
		if line == "ratelimit.localcache.missCount:3|g" {
			return
		}
	}
	t.Error("statsd: no ratelimit.localcache.missCount:3|g")
}

// TestRLSStatsNamesHoldNoRequestValues: a descriptor value that a
// detailed_metric limit puts in its stat's name cannot end the line or
// write a stat of its own, on /stats or to statsd; an IPv4 address's dots
// become underscores, as the reference writes them.
func TestRLSStatsNamesHoldNoRequestValues(t *testing.T) {
	statsd := listenStatsd(t, "udp")
	const config = `domain: edge
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 100}
`
	s := startRLS(t, config, "--statsd", "udp://"+statsd.addr, "--statsd-interval", "10ms")
	c := s.client(t, nil)
	for _, v := range []string{"a\nevil.counter:1000|c", "b evil:1", "c|d@e#f", "10.1.2.3", "x\r\n\x00y",
		"d,limit=victim", "e[zone=us]", "f.__zone=us-east", "g=h", "é\u2028"} {
		req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: v}}}}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.ShouldRateLimit(ctx, req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	got := s.stats(t) // each line is checked against statsLine
	for name := range got {
		if strings.Contains(name, "evil") && !strings.HasPrefix(name, "ratelimit.service.rate_limit.edge.user_") ||
			strings.Contains(name, "=") || strings.Contains(name, ",") || strings.Contains(name, "[") {
			t.Errorf("/stats has a stat or a tag a value named: %q", name)
		}
	}
	if got["ratelimit.service.rate_limit.edge.user_10_1_2_3.total_hits"] != "1" {
		t.Errorf("the address's stat: %v", got)
	}
	seen := 0
	for line := range statsd.lines() {
		if !statsdLine.MatchString(line) || strings.HasPrefix(line, "evil") {
			t.Fatalf("statsd line %q", line)
		}
		if strings.HasSuffix(line, ".total_hits:1|c") {
			if seen++; seen == 10 {
				return
			}
		}
	}
	t.Errorf("statsd: %d total_hits lines, want 10", seen)
}

// TestStatsdSinkSendsDeltas sends each flush what grew since the last
// one, and a gauge whole each time.
func TestStatsdSinkSendsDeltas(t *testing.T) {
	var n float64
	statsd := listenStatsd(t, "tcp")
	sink := newStatsdSink(&refStats{gatherer: fakeGatherer(&n)}, config.Statsd{Network: "tcp", Addr: statsd.addr}, time.Hour, slog.New(slog.DiscardHandler))
	defer sink.close()
	lines := statsd.lines()
	for _, step := range []struct {
		total float64
		want  []string
	}{
		{3, []string{"ratelimit.localcache.hitCount:3|g", "ratelimit_server.ShouldRateLimit.total_requests:3|c"}},
		{5, []string{"ratelimit.localcache.hitCount:5|g", "ratelimit_server.ShouldRateLimit.total_requests:2|c"}},
		{5, []string{"ratelimit.localcache.hitCount:5|g"}}, // nothing grew
	} {
		n = step.total
		sink.flush()
		var got []string
		for line := range lines {
			got = append(got, line)
			if len(got) == len(step.want) {
				break
			}
		}
		if strings.Join(got, " ") != strings.Join(step.want, " ") {
			t.Fatalf("at %v: got %q, want %q", step.total, got, step.want)
		}
	}
}

// TestStatsdSinkAcrossARestart: a statsd server that closes its
// connections and comes back on the same port gets all that was counted,
// the flush made while it was away included, none lost into the closed
// connection.
func TestStatsdSinkAcrossARestart(t *testing.T) {
	var n float64
	first := listenStatsd(t, "tcp")
	sink := newStatsdSink(&refStats{gatherer: fakeGatherer(&n)}, config.Statsd{Network: "tcp", Addr: first.addr}, time.Hour, slog.New(slog.DiscardHandler))
	defer sink.close()
	const calls = "ratelimit_server.ShouldRateLimit.total_requests:"
	n = 5
	sink.flush()
	for line := range first.lines() {
		if strings.HasPrefix(line, calls) {
			break
		}
	}
	first.stop()
	// The close reaches the sink's side of the connection on its own
	// time; there is nothing to wait on but the connection itself.
	for deadline := time.Now().Add(5 * time.Second); open(sink.conn); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the server's close never reached the connection")
		}
	}
	n = 12
	sink.flush() // the server is away: its connection is closed, and a dial is refused
	if !sink.failing {
		t.Fatal("a flush to a server that is away did not fail")
	}
	second := listenStatsdAt(t, first.addr)
	n = 20
	sink.flush()
	for line := range second.lines() {
		if strings.HasPrefix(line, calls) {
			if line != calls+"15|c" {
				t.Fatalf("after the restart: %q, want the 15 counted since the last flush sent", line)
			}
			return
		}
	}
	t.Fatal("nothing sent after the restart")
}

// fakeGatherer gathers calls and the local cache's hits, both *n.
func fakeGatherer(n *float64) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{{
			Name: proto.String("admit_rls_requests_total"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(*n)}}},
		}, {
			Name: proto.String("admit_rls_local_cache_lookups_total"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: proto.String("admit_rls_result"), Value: proto.String("hit")}},
				Counter: &dto.Counter{Value: proto.Float64(*n)}}},
		}}, nil
	})
}

// TestRLSStatsdLastFlushAtShutdown sends what the last calls counted when
// admit rls stops, however long its interval.
func TestRLSStatsdLastFlushAtShutdown(t *testing.T) {
	statsd := listenStatsd(t, "tcp")
	// Registered first, so it runs after admit rls has stopped.
	t.Cleanup(func() {
		for line := range statsd.lines() {
			if line == "ratelimit.service.rate_limit.edge.remote_address.total_hits:2|c" {
				return
			}
		}
		t.Error("no total_hits:2 at shutdown")
	})
	s := startRLS(t, rlsTestConfig, "--statsd", "tcp://"+statsd.addr, "--statsd-interval", "1h")
	codesOf(t, s.client(t, nil), "10.0.0.1", 2)
}

// TestStatsdSinkKeepsWhatItCouldNotSend: while the statsd server is
// unreachable, flushes fail without losing counts; the first flush that
// reaches it sends all that grew since the last one sent.
func TestStatsdSinkKeepsWhatItCouldNotSend(t *testing.T) {
	var n float64
	gather := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{{
			Name: proto.String("admit_rls_requests_total"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(n)}}},
		}}, nil
	})
	// A port nothing listens on: one taken and closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	sink := newStatsdSink(&refStats{gatherer: gather}, config.Statsd{Network: "tcp", Addr: dead}, time.Hour, slog.New(slog.DiscardHandler))
	n = 4
	sink.flush()
	n = 7
	sink.flush()
	if !sink.failing || len(sink.sent) != 0 {
		t.Fatalf("failing %v, sent %v: want failing, nothing sent", sink.failing, sink.sent)
	}
	statsd := listenStatsd(t, "tcp")
	sink.addr = statsd.addr
	sink.flush()
	defer sink.close()
	for line := range statsd.lines() {
		if line != "ratelimit_server.ShouldRateLimit.total_requests:7|c" {
			t.Fatalf("got %q, want the 7 counted while the server was down", line)
		}
		break
	}
	if sink.failing {
		t.Error("still failing after a flush was sent")
	}
}

func TestParseStatsd(t *testing.T) {
	for v, want := range map[string]string{
		"":                   "",
		"stats:8125":         "tcp://stats:8125",
		"tcp://[::1]:8125":   "tcp://[::1]:8125",
		"udp://127.0.0.1:99": "udp://127.0.0.1:99",
	} {
		s, err := config.ParseStatsd(v)
		if err != nil || s.String() != want {
			t.Errorf("%q: %q, %v; want %q", v, s, err, want)
		}
	}
	for v, want := range map[string]string{
		"http://stats:8125":  `"http://": want tcp:// or udp://`,
		"stats":              `"stats": want host:port`,
		":8125":              `":8125": want a host`,
		"stats:0":            `"stats:0": port "0": want 1 to 65535`,
		"udp://stats:statsd": `"stats:statsd": port "statsd": want 1 to 65535`,
	} {
		if _, err := config.ParseStatsd(v); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", v, err, want)
		}
	}
	for v, want := range map[string]string{
		"a":          `"a": want key:value, neither empty`,
		"a:":         `"a:": want key:value, neither empty`,
		"a.b:c":      `key "a.b": want letters, digits, _ or -`,
		"a:b,a:c":    `key "a" is given twice`,
		"a:b c":      `value "b c": want no spaces, control characters, @ or #`,
		"a:x\ny:1|c": `value "x\ny:1|c": want no spaces, control characters, @ or #`,
	} {
		if _, err := config.ParseStatTags(v); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", v, err, want)
		}
	}
	if _, err := parseFlags([]string{"--config", "x.yaml", "--statsd", "stats"}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), "--statsd") {
		t.Errorf("a bad --statsd: %v, want an error naming it", err)
	}
	if _, err := parseFlags([]string{"--config", "x.yaml", "--statsd-interval", "1ns"}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), "--statsd-interval") {
		t.Errorf("--statsd-interval 1ns: %v, want an error naming it", err)
	}
}

// statsdServer is a statsd server of one test, on loopback.
type statsdServer struct {
	addr string
	recv chan string
	stop func() // closes the listener and every connection
}

// listenStatsd starts a statsd server on network (tcp or udp) that hands
// its lines to lines until t ends.
func listenStatsd(t *testing.T, network string) *statsdServer {
	t.Helper()
	if network == "tcp" {
		return listenStatsdAt(t, "127.0.0.1:0")
	}
	s := &statsdServer{recv: make(chan string, 1024)}
	put := func(line string) {
		select {
		case s.recv <- line:
		default: // a test that stopped reading
		}
	}
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		s.addr = pc.LocalAddr().String()
		go func() {
			buf := make([]byte, 64<<10)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				if n > statsdPacket {
					put(fmt.Sprintf("a datagram of %d bytes", n))
				}
				for _, line := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\n"), "\n") {
					put(line)
				}
			}
		}()
		return s
	}
	t.Fatalf("network %q", network)
	return nil
}

// listenStatsdAt starts a TCP statsd server on addr.
func listenStatsdAt(t *testing.T, addr string) *statsdServer {
	t.Helper()
	s := &statsdServer{recv: make(chan string, 1024)}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	var mu sync.Mutex
	var conns []net.Conn
	s.stop = func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(s.stop)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					select {
					case s.recv <- sc.Text():
					default: // a test that stopped reading
					}
				}
			}()
		}
	}()
	return s
}

// lines yields the lines received until none has come for 5 seconds.
func (s *statsdServer) lines() func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for {
			select {
			case line := <-s.recv:
				if !yield(line) {
					return
				}
			case <-time.After(5 * time.Second):
				return
			}
		}
	}
}
