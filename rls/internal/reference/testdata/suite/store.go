package runner

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	gostats "github.com/lyft/gostats"

	"github.com/envoyproxy/ratelimit/src/settings"
)

// store is the stats store the suite reads: each counter and gauge it
// names is read from the child's /metrics when its Value is asked for, so
// that it is as current as the reference's in-process store, which the
// suite also reads without flushing. The reference's names map to
// admit's series:
//
//	ratelimit.service.rate_limit.LIMIT.OUTCOME  admit_rls_hits_total{admit_rls_limit=LIMIT,admit_rls_outcome=OUTCOME}
//	ratelimit.service.config_load_success       admit_rls_config_loads_total{admit_rls_result="loaded"}
//	ratelimit.localcache.hitCount               the sum of over_limit_with_local_cache: the descriptors answered from the cache
//	ratelimit.localcache.missCount              the sum of total_hits less hitCount: the descriptors the cache did not answer
//
// The local cache's two are freecache's lookups in the reference; admit
// counts hits rather than lookups, which are equal when each descriptor
// spends one hit, as in every call of the suite. Without a local cache
// both are 0, as there. A name given tags reads a series with those
// labels, which admit never has. Any other name panics, so that an
// assertion the view cannot answer fails loudly rather than read 0.
type store struct {
	nullStore  // the methods the suite does not read
	url        string
	localCache bool
}

// nullStore names the embedded store, whose field name must not be
// Store: that is a method of gostats.Store.
type nullStore = gostats.Store

func newStore(url string, s settings.Settings) *store {
	return &store{nullStore: gostats.NewStore(gostats.NewNullSink(), false), url: url, localCache: s.LocalCacheSizeInBytes > 0}
}

// Flush does nothing: every value is read when asked for.
func (st *store) Flush() {}

func (st *store) NewCounter(name string) gostats.Counter { return &stat{st: st, name: name} }

func (st *store) NewCounterWithTags(name string, tags map[string]string) gostats.Counter {
	return &stat{st: st, name: name, tags: tags}
}

func (st *store) NewGauge(name string) gostats.Gauge { return &stat{st: st, name: name} }

func (st *store) NewGaugeWithTags(name string, tags map[string]string) gostats.Gauge {
	return &stat{st: st, name: name, tags: tags}
}

// value reads name from the child's metrics.
func (st *store) value(name string, tags map[string]string) uint64 {
	const hits = "ratelimit.service.rate_limit."
	if len(tags) > 0 {
		return 0
	}
	series, err := st.scrape()
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading %s: %v\n", name, err)
		return 0
	}
	sum := func(metric, label, value string) uint64 {
		var n uint64
		for _, s := range series {
			if s.name == metric && (label == "" || s.labels[label] == value) {
				n += s.value
			}
		}
		return n
	}
	hitsWhere := func(limit, outcome string) uint64 {
		var n uint64
		for _, s := range series {
			if s.name == "admit_rls_hits_total" && s.labels["admit_rls_outcome"] == outcome && (limit == "" || s.labels["admit_rls_limit"] == limit) {
				n += s.value
			}
		}
		return n
	}
	switch {
	case name == "ratelimit.service.config_load_success":
		return sum("admit_rls_config_loads_total", "admit_rls_result", "loaded")
	case name == "ratelimit.localcache.hitCount":
		if !st.localCache {
			return 0
		}
		return hitsWhere("", "over_limit_with_local_cache")
	case name == "ratelimit.localcache.missCount":
		if !st.localCache {
			return 0
		}
		return hitsWhere("", "total_hits") - hitsWhere("", "over_limit_with_local_cache")
	case strings.HasPrefix(name, hits):
		rest := name[len(hits):]
		dot := strings.LastIndexByte(rest, '.')
		if dot < 0 {
			break
		}
		return hitsWhere(rest[:dot], rest[dot+1:])
	}
	panic("the suite reads stat " + name + ", which has no counterpart in admit rls's metrics")
}

// series is one sample of the Prometheus text format.
type series struct {
	name   string
	labels map[string]string
	value  uint64
}

func (st *store) scrape() ([]series, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(st.url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", st.url, resp.Status)
	}
	var out []series
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseSample reads `name{label="value",...} number`, the label values
// with the format's escapes \\, \" and \n.
func parseSample(line string) (series, error) {
	bad := fmt.Errorf("metrics line %q", line)
	s := series{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, bad
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for line != "" && line[0] != '}' {
			eq := strings.Index(line, `="`)
			if eq < 0 {
				return s, bad
			}
			key := line[:eq]
			line = line[eq+2:]
			var v strings.Builder
			for {
				if line == "" {
					return s, bad
				}
				c := line[0]
				line = line[1:]
				if c == '"' {
					break
				}
				if c == '\\' && line != "" {
					switch line[0] {
					case 'n':
						c = '\n'
					default:
						c = line[0]
					}
					line = line[1:]
				}
				v.WriteByte(c)
			}
			s.labels[key] = v.String()
			line = strings.TrimPrefix(line, ",")
		}
		if line == "" {
			return s, bad
		}
		line = line[1:]
	}
	f, err := strconv.ParseFloat(strings.Fields(line)[0], 64)
	if err != nil {
		return s, bad
	}
	s.value = uint64(f)
	return s, nil
}

// stat is a counter or gauge the suite reads; the suite never changes one.
type stat struct {
	st   *store
	name string
	tags map[string]string
}

func (c *stat) Value() uint64  { return c.st.value(c.name, c.tags) }
func (c *stat) String() string { return strconv.FormatUint(c.Value(), 10) }
func (c *stat) Add(uint64)     { c.readOnly() }
func (c *stat) Sub(uint64)     { c.readOnly() }
func (c *stat) Inc()           { c.readOnly() }
func (c *stat) Dec()           { c.readOnly() }
func (c *stat) Set(uint64)     { c.readOnly() }
func (c *stat) readOnly() {
	panic("the suite changes stat " + c.name + ", which is read from admit rls's metrics")
}
