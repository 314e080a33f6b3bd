package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// minStatsdInterval is the shortest --statsd-interval: each flush reads
// every counter, so a shorter one would keep a core busy.
const minStatsdInterval = 10 * time.Millisecond

// Statsd is admit rls's --statsd: where its stats go, by statsd's text
// protocol; a zero Statsd sends none.
type Statsd struct {
	Network string // tcp, as envoyproxy/ratelimit sends, or udp
	Addr    string // host:port
}

// String is the flag's value as given back: network://host:port.
func (s Statsd) String() string {
	if s.Addr == "" {
		return ""
	}
	return s.Network + "://" + s.Addr
}

// ParseStatsd reads --statsd: empty (none), host:port (TCP, as the
// reference sends), or tcp://host:port or udp://host:port.
func ParseStatsd(v string) (Statsd, error) {
	if v == "" {
		return Statsd{}, nil
	}
	s := Statsd{Network: "tcp", Addr: v}
	if scheme, rest, ok := strings.Cut(v, "://"); ok {
		if scheme != "tcp" && scheme != "udp" {
			return Statsd{}, fmt.Errorf("%q: want tcp:// or udp://", scheme+"://")
		}
		s = Statsd{Network: scheme, Addr: rest}
	}
	if _, err := ParseDialAddr(s.Addr); err != nil {
		return Statsd{}, fmt.Errorf("%q: %w", s.Addr, err)
	}
	return s, nil
}

// StatTags are the tags of admit rls's stats, --stats-tags (the
// reference's EXTRA_TAGS), as the reference's statsd library writes them
// into a stat's name: ".__key=value" for each, by key.
type StatTags string

// ParseStatTags reads --stats-tags: key:value pairs separated by commas.
// A key is letters, digits, "_" or "-"; a value's ".", ":" and "|" become
// "_", as the reference's statsd library writes them, and a value with a
// space, a control character, "@" or "#", which would end or split a
// statsd line, is refused.
func ParseStatTags(v string) (StatTags, error) {
	if v == "" {
		return "", nil
	}
	tags := map[string]string{}
	for p := range strings.SplitSeq(v, ",") {
		key, value, ok := strings.Cut(p, ":")
		switch {
		case !ok || key == "" || value == "":
			return "", fmt.Errorf("%q: want key:value, neither empty", p)
		case strings.IndexFunc(key, func(r rune) bool { return !isTagKeyRune(r) }) >= 0:
			return "", fmt.Errorf("key %q: want letters, digits, _ or -", key)
		case tags[key] != "":
			return "", fmt.Errorf("key %q is given twice", key)
		case strings.IndexFunc(value, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '@' || r == '#' }) >= 0:
			return "", fmt.Errorf("value %q: want no spaces, control characters, @ or #", value)
		}
		tags[key] = strings.NewReplacer(".", "_", ":", "_", "|", "_").Replace(value)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b.WriteString(".__" + k + "=" + tags[k])
	}
	return StatTags(b.String()), nil
}

func isTagKeyRune(r rune) bool {
	return r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}
