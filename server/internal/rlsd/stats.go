package rlsd

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit/server/internal/config"
)

// refStats names admit rls's counters as envoyproxy/ratelimit names its
// stats, for /stats and statsd. It reads them from the metrics registry
// /metrics exports, so that counting stays one Add per event on the call's
// path: a second reader of the meter provider would aggregate every event
// twice.
type refStats struct {
	gatherer prometheus.Gatherer
	// tags is --stats-tags (EXTRA_TAGS) as the reference's statsd
	// library writes tags into a stat's name (config.StatTags).
	tags string
}

// refStat is one stat: its name, tags included, its count, and whether
// the reference keeps it as a gauge, sent whole each flush, rather than a
// counter, sent as what it grew by.
type refStat struct {
	name  string
	value uint64
	gauge bool
}

// refStatNames maps a counter of /metrics, by its Prometheus name, to the
// reference's stat for each of its series; "" leaves a series out. One
// stat may gather several series (every policy's store failures).
var refStatNames = map[string]func(labels map[string]string) string{
	// The reference's per-limit stats, under the limit's path.
	"admit_rls_hits_total": func(l map[string]string) string {
		return "ratelimit.service.rate_limit." + statName(l["admit_rls_limit"]) + "." + l["admit_rls_outcome"]
	},
	"admit_rls_config_loads_total": func(l map[string]string) string {
		switch l["admit_rls_result"] {
		case "loaded":
			return "ratelimit.service.config_load_success"
		case "failed":
			return "ratelimit.service.config_load_error"
		}
		return ""
	},
	// Requests the store did not decide, as the reference counts its
	// Redis's errors.
	"admit_rls_store_failures_total": func(map[string]string) string {
		return "ratelimit.service.call.should_rate_limit.redis_error"
	},
	// Every ShouldRateLimit call, as its gRPC server's reporter counts
	// them.
	"admit_rls_requests_total": func(map[string]string) string { return "ratelimit_server.ShouldRateLimit.total_requests" },
	// The local over-limit cache's look-ups, as the reference reports
	// freecache's: gauges (refGauges).
	"admit_rls_local_cache_lookups_total": func(l map[string]string) string {
		switch l["admit_rls_result"] {
		case "hit":
			return "ratelimit.localcache.hitCount"
		case "miss":
			return "ratelimit.localcache.missCount"
		}
		return ""
	},
}

// refGauges are the stats the reference keeps as gauges.
var refGauges = map[string]bool{"ratelimit.localcache.hitCount": true, "ratelimit.localcache.missCount": true}

// ipv4 is what the reference writes with underscores for dots in a stat
// name, so that an address does not split it into more parts.
var ipv4 = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)

// statName is a limit's path as a stat's name: each character a statsd
// server reads as the line's, a tag's or a field's end, and any other
// outside statNameRunes, becomes "_", as the reference writes ":" and
// "|"; and, as the reference writes them, an IPv4 address's dots. A
// descriptor's value is the client's, and must neither end the line nor
// add a tag (",k=v" of InfluxDB's form, "[k=v]" of SignalFx's, ".__k=v"
// of the reference's) to a stat.
func statName(path string) string {
	safe := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && strings.IndexByte(statNameRunes, byte(r)) >= 0 {
			return r
		}
		return '_'
	}, path)
	return ipv4.ReplaceAllStringFunc(safe, func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
}

// statNameRunes are the characters a stat's name keeps from a limit's
// path: letters, digits, and punctuation no statsd dialect gives a
// meaning to.
const statNameRunes = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./~+%?&*!$"

// collect returns the stats, by name.
func (r *refStats) collect() ([]refStat, error) {
	families, err := r.gatherer.Gather()
	if err != nil && len(families) == 0 {
		return nil, err
	}
	sums, gauges := map[string]uint64{}, map[string]bool{}
	for _, f := range families {
		name := refStatNames[f.GetName()]
		if name == nil || f.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if n := name(labels); n != "" {
				sums[n+r.tags] += uint64(m.GetCounter().GetValue())
				gauges[n+r.tags] = refGauges[n]
			}
		}
	}
	stats := make([]refStat, 0, len(sums))
	for _, n := range slices.Sorted(maps.Keys(sums)) {
		stats = append(stats, refStat{n, sums[n], gauges[n]})
	}
	return stats, nil
}

// serveStats is /stats: each stat as "name: count", by name, what statsd
// is sent as deltas.
func (r *refStats) serveStats(w http.ResponseWriter, _ *http.Request) {
	stats, err := r.collect()
	if err != nil {
		http.Error(w, "admit rls: stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	bw := bufio.NewWriter(w)
	for _, s := range stats {
		bw.WriteString(s.name + ": " + strconv.FormatUint(s.value, 10) + "\n")
	}
	bw.Flush()
}

// statsdPacket is the most a UDP datagram of stats carries, the
// reference's statsd library's: it fits a path's MTU of 1,500 bytes.
const statsdPacket = 1432

// statsdTimeout bounds a connection to the statsd server and each flush's
// writes, so that a server that stops reading delays only the next flush.
const statsdTimeout = time.Second

// statsdSink sends the stats to a statsd server every interval, a
// counter as what it grew by ("name:delta|c") and a gauge whole
// ("name:value|g"), over TCP as the reference does, or UDP. A flush whose
// writes fail is sent again, added to, at the next, and a TCP connection
// the server closed is dialled again before a flush is written to it; a
// flush written just before the server goes away may still be lost, as
// with any statsd client, and over UDP nothing tells a lost datagram.
// Only its goroutine uses it.
type statsdSink struct {
	stats    *refStats
	network  string // tcp or udp
	addr     string
	interval time.Duration
	log      *slog.Logger
	conn     net.Conn
	sent     map[string]uint64 // each counter's count as last sent
	failing  bool              // a flush failed, and none was sent over a new TCP connection since
	warn     rate.Sometimes    // throttles the failures' log
}

func newStatsdSink(stats *refStats, target config.Statsd, interval time.Duration, log *slog.Logger) *statsdSink {
	return &statsdSink{stats: stats, network: target.Network, addr: target.Addr, interval: interval, log: log, sent: map[string]uint64{},
		warn: rate.Sometimes{Interval: time.Minute}}
}

// run flushes every interval until ctx ends, then once more, so that a
// drained process sends what it counted last.
func (s *statsdSink) run(ctx context.Context) {
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	defer s.close()
	for {
		select {
		case <-tick.C:
			s.flush()
		case <-ctx.Done():
			s.flush()
			return
		}
	}
}

// flush sends each counter that grew since it was last sent, and each
// gauge.
func (s *statsdSink) flush() {
	stats, err := s.stats.collect()
	if err != nil {
		s.failed(err)
		return
	}
	var lines []string
	for _, st := range stats {
		switch last := s.sent[st.name]; {
		case st.gauge:
			lines = append(lines, st.name+":"+strconv.FormatUint(st.value, 10)+"|g\n")
		case st.value > last:
			lines = append(lines, st.name+":"+strconv.FormatUint(st.value-last, 10)+"|c\n")
		}
	}
	if len(lines) == 0 {
		return
	}
	redialled, err := s.send(lines)
	if err != nil {
		s.close()
		s.failed(err)
		return
	}
	for _, st := range stats {
		s.sent[st.name] = st.value
	}
	if s.failing && redialled {
		s.failing = false
		s.log.Info("admit rls: statsd: sending again", "statsd", s.network+"://"+s.addr)
	}
}

// send writes lines, in datagrams of at most statsdPacket bytes over UDP,
// and reports whether it dialled a new TCP connection for them.
func (s *statsdSink) send(lines []string) (redialled bool, err error) {
	if s.conn != nil && s.network == "tcp" && !open(s.conn) {
		s.close()
	}
	if s.conn == nil {
		c, err := net.DialTimeout(s.network, s.addr, statsdTimeout)
		if err != nil {
			return false, err
		}
		s.conn, redialled = c, s.network == "tcp"
	}
	if err := s.conn.SetWriteDeadline(time.Now().Add(statsdTimeout)); err != nil {
		return redialled, err
	}
	limit := statsdPacket
	if s.network == "tcp" {
		limit = 64 << 10
	}
	var buf []byte
	for _, l := range lines {
		if len(buf) > 0 && len(buf)+len(l) > limit {
			if _, err := s.conn.Write(buf); err != nil {
				return redialled, err
			}
			buf = buf[:0]
		}
		buf = append(buf, l...)
	}
	_, err = s.conn.Write(buf)
	return redialled, err
}

// open reports whether a statsd server's TCP connection is still open: a
// server sends nothing, so a read finds the end of the stream, or an
// error, once it has closed its side, where a write would still pass into
// the kernel's buffer and be lost. The read waits a millisecond at most:
// with a deadline already passed, Go would not read at all.
func open(c net.Conn) bool {
	if err := c.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		return false
	}
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return err == nil || errors.As(err, &ne) && ne.Timeout()
}

func (s *statsdSink) failed(err error) {
	s.failing = true
	s.warn.Do(func() {
		s.log.Warn("admit rls: statsd: not sent; the counts are sent again at the next flush", "statsd", s.network+"://"+s.addr, "error", err)
	})
}

func (s *statsdSink) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}
