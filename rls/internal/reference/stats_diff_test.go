package reference

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/admitgo/admit/rls/internal/redisproc"
)

// statsConfig has a limit of each kind the reference names a stat for:
// plain, detailed_metric (the value in the name), shadow_mode, nested, and
// one a client's address names. Its windows are an hour long, so that a
// run's counts fall in one window unless it spans the hour, which the
// test checks.
const statsConfig = `domain: stats
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: user
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: path
    value: /login
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: tenant
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: hour, requests_per_unit: 4}
`

// statsRequests are what the test sends both, each several times.
var statsRequests = []struct {
	entries [][2]string
	times   int
}{
	{[][2]string{{"remote_address", "10.0.0.1"}}, 7},
	{[][2]string{{"remote_address", "10.0.0.2"}}, 2},
	{[][2]string{{"user", "alice"}}, 4},
	{[][2]string{{"user", "bob"}}, 1},
	{[][2]string{{"path", "/login"}}, 3},
	{[][2]string{{"tenant", "a"}, {"plan", "free"}}, 6},
	{[][2]string{{"unknown", "x"}}, 1},
}

// TestStatsDifferential sends the same calls to the reference and to
// admit rls, each sending its stats to a statsd server of the test's, and
// compares what they sent under the names admit rls sends (docs/rls.md,
// "Stats under the reference's names"): every such stat of the
// reference's, with its tags, arrives from admit with the same count, and
// admit sends no other. With the local over-limit cache, its gauges too.
func TestStatsDifferential(t *testing.T) {
	admit := buildAdmit(t)
	srv := redisproc.Start(t)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ratelimit", "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ratelimit", "config", "stats.yaml"), []byte(statsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	const tags = "zone:eu.west,app:edge"
	for i, cache := range []int{0, 1 << 20} {
		t.Run(fmt.Sprintf("local-cache=%d", cache), func(t *testing.T) {
			for attempt := range 2 {
				prefix := fmt.Sprintf("stats%d-%d-", i, attempt)
				refStatsd, admitStatsd := listenStatsd(t), listenStatsd(t)
				ref := startReference(t, srv, "CACHE_KEY_PREFIX=ref"+prefix, "RUNTIME_ROOT="+root,
					"USE_STATSD=true", "STATSD_HOST=127.0.0.1", "STATSD_PORT="+strconv.Itoa(refStatsd.port),
					"STATS_FLUSH_INTERVAL=50ms", "EXTRA_TAGS="+tags, "LOCAL_CACHE_SIZE_IN_BYTES="+strconv.Itoa(cache))
				a := startAdmit(t, admit, "rls", "--config", filepath.Join(root, "ratelimit", "config"),
					"--store", "redis://"+srv.Addr, "--store-prefix", "admit"+prefix,
					"--grpc-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
					"--statsd", "tcp://127.0.0.1:"+strconv.Itoa(admitStatsd.port), "--statsd-interval", "50ms",
					"--stats-tags", tags, "--local-cache-bytes", strconv.Itoa(cache))
				hour := time.Now().Truncate(time.Hour)
				calls := 0
				for _, r := range statsRequests {
					req := &pb.RateLimitRequest{Domain: "stats", Descriptors: []*rlv3.RateLimitDescriptor{{}}}
					for _, e := range r.entries {
						req.Descriptors[0].Entries = append(req.Descriptors[0].Entries, &rlv3.RateLimitDescriptor_Entry{Key: e[0], Value: e[1]})
					}
					for range r.times {
						for _, c := range []pb.RateLimitServiceClient{ref.client, a} {
							ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
							_, err := c.ShouldRateLimit(ctx, req)
							cancel()
							if err != nil {
								t.Fatal(err)
							}
						}
						calls++
					}
				}
				if !time.Now().Truncate(time.Hour).Equal(hour) {
					continue // the windows turned; again, with fresh counts
				}
				total := "ratelimit_server.ShouldRateLimit.total_requests.__app=edge.__zone=eu_west"
				refStatsd.until(t, total, calls)
				admitStatsd.until(t, total, calls)
				// The rest of the flush that carried the count may still
				// be on its way: compare again with each line that comes,
				// until the two agree or the deadline names what differs.
				deadline := time.After(10 * time.Second)
				for {
					problems, compared := compareStats(refStatsd.snapshot(), admitStatsd.snapshot())
					if len(problems) == 0 {
						t.Logf("compared %d stats", compared)
						return
					}
					select {
					case <-refStatsd.more:
					case <-admitStatsd.more:
					case <-deadline:
						for _, p := range problems {
							t.Error(p)
						}
						return
					}
				}
			}
			t.Fatal("both attempts spanned the turn of an hour")
		})
	}
}

// admitsStat is what admit rls sends: the names docs/rls.md lists.
var admitsStat = regexp.MustCompile(`^(ratelimit\.service\.rate_limit\.|ratelimit\.service\.config_load_|ratelimit\.service\.call\.should_rate_limit\.redis_error|ratelimit_server\.ShouldRateLimit\.total_requests|ratelimit\.localcache\.(hitCount|missCount))`)

// compareStats returns how ref's and admit's stats differ under the names
// admit sends, and how many of ref's it compared.
func compareStats(ref, admit map[string]uint64) (problems []string, compared int) {
	for name, v := range ref {
		if !admitsStat.MatchString(name) {
			continue
		}
		compared++
		if admit[name] != v {
			problems = append(problems, fmt.Sprintf("%s: reference %d, admit %d", name, v, admit[name]))
		}
	}
	for name, v := range admit {
		if _, ok := ref[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s: admit %d, the reference sent none", name, v))
		}
	}
	if compared < 10 {
		problems = append(problems, fmt.Sprintf("compared %d stats; the reference sent %v", compared, ref))
	}
	return problems, compared
}

// statsd is a statsd server of one test: counters summed, gauges last.
type statsd struct {
	port  int
	mu    sync.Mutex
	stats map[string]uint64
	more  chan struct{} // a line arrived
}

func listenStatsd(t *testing.T) *statsd {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &statsd{port: l.Addr().(*net.TCPAddr).Port, stats: map[string]uint64{}, more: make(chan struct{}, 1)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.read(c)
		}
	}()
	return s
}

func (s *statsd) read(c net.Conn) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		value, kind, ok2 := strings.Cut(rest, "|")
		n, err := strconv.ParseUint(value, 10, 64)
		if !ok || !ok2 || err != nil {
			continue // a timer's float, which neither compares
		}
		s.mu.Lock()
		if kind == "g" {
			s.stats[name] = n
		} else {
			s.stats[name] += n
		}
		s.mu.Unlock()
		select {
		case s.more <- struct{}{}:
		default:
		}
	}
}

// until waits for stat to reach n.
func (s *statsd) until(t *testing.T, stat string, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		got := s.stats[stat]
		s.mu.Unlock()
		if got >= uint64(n) {
			return
		}
		select {
		case <-s.more:
		case <-deadline:
			t.Fatalf("%s reached %d of %d", stat, got, n)
		}
	}
}

// snapshot returns the stats received so far.
func (s *statsd) snapshot() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.stats)
}

var (
	admitOnce sync.Once
	admitBin  string
	admitErr  error
)

// buildAdmit builds admit's command from this repository once.
func buildAdmit(t *testing.T) string {
	t.Helper()
	admitOnce.Do(func() {
		dir := t.TempDir() // one test builds it: its directory is the binary's life
		admitBin = filepath.Join(dir, "admit")
		cmd := exec.Command("go", "build", "-o", admitBin, "./cmd/admit")
		cmd.Dir = filepath.Join("..", "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			admitErr = fmt.Errorf("go build ./cmd/admit: %v\n%s", err, out)
		}
	})
	if admitErr != nil {
		t.Fatal(admitErr)
	}
	return admitBin
}

// startAdmit runs admit with args until t ends and returns a client of its
// gRPC listener, read from its startup line.
func startAdmit(t *testing.T, bin string, args ...string) pb.RateLimitServiceClient {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := grpcListen.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		cmd.Wait()
	})
	var a string
	select {
	case a = <-addr:
	case <-exited:
		t.Fatal("admit rls ended before serving")
	case <-time.After(20 * time.Second):
		t.Fatal("admit rls did not serve within 20 s")
	}
	conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewRateLimitServiceClient(conn)
}

// grpcListen finds the gRPC address in admit rls's startup line.
var grpcListen = regexp.MustCompile(`admit rls: serving.* grpc_listen=(\S+)`)
