package runner

import (
	"bufio"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	gostats "github.com/lyft/gostats"
)

// store is the stats store the suite reads: each counter and gauge it
// names is read from the child's /stats, the counts under the reference's
// stat names, when its Value is asked for, so that it is as current as
// the reference's in-process store, which the suite also reads without
// flushing. A name with tags reads the stat with the tags written into its
// name as the reference's statsd library writes them. A stat /stats does
// not show has not been counted yet: 0. A name outside the stats admit
// rls shows panics, so that an assertion the view cannot answer fails
// loudly rather than read 0.
type store struct {
	nullStore // the methods the suite does not read
	url       string
}

// nullStore names the embedded store, whose field name must not be
// Store: that is a method of gostats.Store.
type nullStore = gostats.Store

func newStore(url string) *store {
	return &store{nullStore: gostats.NewStore(gostats.NewNullSink(), false), url: url}
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

// shown are the stats admit rls's /stats shows (docs/rls.md, "Stats
// under the reference's names").
var shown = regexp.MustCompile(`^(ratelimit\.service\.rate_limit\.|ratelimit\.service\.config_load_(success|error)$|ratelimit\.service\.call\.should_rate_limit\.redis_error$|ratelimit_server\.ShouldRateLimit\.total_requests$|ratelimit\.localcache\.(hitCount|missCount)$)`)

// value reads name with tags from the child's /stats.
func (st *store) value(name string, tags map[string]string) uint64 {
	if !shown.MatchString(name) {
		panic("the suite reads stat " + name + ", which admit rls's /stats does not show")
	}
	stats, err := st.read()
	if err != nil {
		// Not 0: an assertion that a count is 0 would pass against a
		// server that is not there.
		panic(fmt.Sprintf("reading %s: %v", name, err))
	}
	return stats[name+serializeTags(tags)]
}

// serializeTags writes tags as the reference's statsd library writes them
// into a stat's name: ".__key=value" by key, a value's ".", ":" and "|"
// as "_", pairs with an empty key or value left out.
func serializeTags(tags map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if k == "" || tags[k] == "" {
			continue
		}
		b.WriteString(".__" + k + "=" + strings.NewReplacer(".", "_", ":", "_", "|", "_").Replace(tags[k]))
	}
	return b.String()
}

// read returns /stats: each line "name: count".
func (st *store) read() (map[string]uint64, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(st.url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", st.url, resp.Status)
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, count, ok := strings.Cut(sc.Text(), ": ")
		n, err := strconv.ParseUint(count, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("/stats line %q", sc.Text())
		}
		out[name] = n
	}
	return out, sc.Err()
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
