package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/opshost"
	"github.com/admitgo/admit/server/storeurl"
)

// The parsers of single values. Their errors do not repeat the value: the
// caller names the flag and the value in front of them.

func ParseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.New("not a boolean (use true or false)")
	}
	return b, nil
}

func ParseAddr(v string) (string, error) {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		var aerr *net.AddrError
		if errors.As(err, &aerr) {
			return "", errors.New(aerr.Err) // the whole error repeats the address
		}
		return "", err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", errors.New("port must be a number from 0 to 65535")
	}
	return v, nil
}

// ParseDialAddr reads the host:port of a server admit connects to (a
// statsd or xDS server): where ParseAddr takes a listener's, with an empty
// host and port 0, this wants both, which a dial needs.
func ParseDialAddr(v string) (string, error) {
	host, port, err := net.SplitHostPort(v)
	switch {
	case err != nil:
		return "", errors.New("want host:port")
	case host == "":
		return "", errors.New("want a host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want 1 to 65535", port)
	}
	return v, nil
}

// appendHosts adds the names of --admin-host to list.
func appendHosts(list *[]string, v string) error {
	names, err := opshost.ParseNames(v)
	*list = append(*list, names...)
	return err
}

func parseUpstream(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, errors.Unwrap(err) // url.Parse's error repeats the URL
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("scheme must be http or https")
	case u.Host == "":
		return nil, errors.New("no host")
	case u.Fragment != "" || strings.HasSuffix(v, "#"):
		return nil, errors.New("a fragment is never sent; remove it")
	}
	return u, nil
}

// parsePath accepts an absolute URL path with an optional query, such as
// "/healthz" or "/status?full=1".
func parsePath(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil {
		return "", errors.Unwrap(err)
	}
	if u.Scheme != "" || u.Host != "" || !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
		return "", errors.New("want a path on the upstream, such as /healthz")
	}
	if u.Fragment != "" || strings.HasSuffix(v, "#") {
		return "", errors.New("a fragment is never sent; remove it")
	}
	return v, nil
}

// parseStoreFail reads --store-fail with quota's one parser. error hands
// the decision back to a front that asked: admit rls has one (Envoy, whose
// failure_mode_deny decides, so handBack), the proxy has none, being the
// front that answers the client.
func parseStoreFail(v string, handBack bool) (quota.Failure, error) {
	f, err := quota.ParseFailure(v)
	switch {
	case err != nil && handBack:
		return 0, errors.New("want error, closed, open or local")
	case err != nil:
		return 0, errors.New("want closed, open or local")
	case f == quota.FailError && !handBack:
		return 0, errors.New("error hands the decision back to the front, and admit is the front here: want closed (503), open or local")
	}
	return f, nil
}

// checkStoreFail ties --store-fail and --replicas together: local needs
// the number of replicas, since each then admits its share of the budget,
// and --replicas means nothing otherwise.
func checkStoreFail(c *Config, set *OptionSet) error {
	c.StoreFail = c.StoreFail.Or(quota.FailClosed)
	replicas, given := set.From("replicas")
	switch from, set := set.From("store-fail"); {
	case set && c.Store.Kind == storeurl.Memory:
		return fmt.Errorf("admit: %s is set but the store is memory: it applies to a shared store only", from)
	case c.StoreFail == quota.FailLocal && !given:
		return fmt.Errorf("admit: %s needs --replicas (%s): how many replicas share the store, so that each admits its share while it is down", from, EnvName("replicas"))
	case c.StoreFail != quota.FailLocal && given:
		return fmt.Errorf("admit: %s is set but --store-fail is %s: it applies to --store-fail local only", replicas, c.StoreFail)
	}
	return nil
}

// Engine is what serves the proxy's listeners and forwards its requests
// upstream (--http-engine).
type Engine string

const (
	// EngineAdmit serves plain HTTP/1.1 requests on a cleartext listener
	// with admit's own engine and forwards to a plain-HTTP upstream over
	// its direct path; each hands what it does not take to net/http.
	EngineAdmit Engine = "admit"
	// EngineNetHTTP serves with net/http's Server and forwards with its
	// Transport alone.
	EngineNetHTTP Engine = "net/http"
)

func parseEngine(v string) (Engine, error) {
	switch e := Engine(v); e {
	case EngineAdmit, EngineNetHTTP:
		return e, nil
	}
	return "", errors.New("want admit or net/http")
}

// parseDuration reads a duration that must be positive, or with positive
// false, not negative.
func parseDuration(v string, positive bool) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New(`not a duration (such as "25s" or "1m")`)
	}
	switch {
	case positive && d <= 0:
		return 0, errors.New("must be positive")
	case d < 0:
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// parseWhole reads a whole number.
func parseWhole(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errors.New("not a whole number")
	}
	return n, nil
}

// parseCount reads a whole number of at least least.
func parseCount(v string, least int) (int, error) {
	n, err := parseWhole(v)
	if err != nil {
		return 0, err
	}
	if n < least {
		return 0, fmt.Errorf("must be at least %d", least)
	}
	return n, nil
}

func parseLogFormat(v string) (string, error) {
	if v != "text" && v != "json" {
		return "", errors.New("want text or json")
	}
	return v, nil
}

// ParseLogLevel reads a level as slog names them; slog's own error names
// its package and repeats the value.
func ParseLogLevel(v string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		return 0, errors.New("want debug, info, warn or error")
	}
	return l, nil
}

// appendPrefixes parses a list of trusted peers onto dst with clientip's
// rules (comma or space separated, a bare address is one host, /0 refused);
// an empty list adds nothing, so an empty flag overrides its variable.
func appendPrefixes(dst *[]netip.Prefix, v string) error {
	// Entry by entry, so that an error names the entry only in a list:
	// the caller names the whole value.
	entries := strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	for _, e := range entries {
		ps, err := clientip.ParseTrustedProxies(e)
		if err != nil {
			if why := errors.Unwrap(err); why != nil {
				err = why // without clientip's prefix, which names e
			}
			if len(entries) > 1 {
				return fmt.Errorf("%q: %w", e, err)
			}
			return err
		}
		*dst = append(*dst, ps...)
	}
	return nil
}

// parseKey reads a group's key: peer, global, header:NAME or path:NAME.
func parseKey(v string, k *admit.Key) error {
	kind, name, _ := strings.Cut(v, ":")
	switch {
	case v == "peer":
	case v == "global":
		k.Global = true
	case kind == "header" && name != "" && canon.IsToken(name):
		k.Header = http.CanonicalHeaderKey(name)
		if why, ok := unkeyableHeaders[k.Header]; ok {
			return fmt.Errorf("%s is not a header admit can key by: %s", k.Header, why)
		}
	case kind == "path" && name != "":
		k.PathValue = name
	default:
		return fmt.Errorf("unknown key %q: want peer, global, header:NAME or path:NAME", v)
	}
	return nil
}

// unkeyableHeaders are the headers the HTTP server takes out of a
// request's headers before admit sees them, with why: a group keyed by one
// would find it on no request, or only on those whose client chose to send
// it.
var unkeyableHeaders = map[string]string{
	"Host": "the server moves it out of the request's headers, so no request would have it; " +
		"to limit one host, put the host in the route pattern (GET example.com/path)",
	"Transfer-Encoding": "the server takes it out of the request's headers to read the body, so no request would have it",
	"Content-Length":    "the server takes it out of the request's headers when the body is chunked, so a client leaves it out at will",
	"Trailer":           "the server takes it out of the request's headers when the body is chunked, so a client leaves it out at will",
}

// KeyText returns a key as the config file spells it.
func KeyText(k admit.Key) string {
	switch {
	case k.Header != "":
		return "header:" + k.Header
	case k.PathValue != "":
		return "path:" + k.PathValue
	case k.Global:
		return "global"
	}
	return "peer"
}

// parsePrefixBits reads a prefix length of 1 to most bits, most being the
// address's length. An IPv6 client is keyed by its /64 already, since a
// host picks the rest of its address at will, so a longer IPv6 prefix would
// widen nothing and is refused.
func parsePrefixBits(v string, most int) (int, error) {
	most = min(most, ClientIPv6Bits)
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		if most == ClientIPv6Bits {
			return 0, fmt.Errorf("want a prefix length from 1 to %d: admit keys an IPv6 client by its /%d already", most, ClientIPv6Bits)
		}
		return 0, fmt.Errorf("want a prefix length from 1 to %d", most)
	}
	return n, nil
}

// ClientIPv6Bits is the prefix an IPv6 client is keyed by at the narrowest.
const ClientIPv6Bits = 64

// DefaultMethods are the methods admit forwards unless --methods says: those
// of RFC 9110 and PATCH, but TRACE, which echoes the request back with its
// cookies, and CONNECT, which a reverse proxy does not serve.
const DefaultMethods = "GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS"

// parseMethods reads the methods admit forwards: upper-case tokens, comma
// or space separated, never TRACE or CONNECT.
func parseMethods(v string) ([]string, error) {
	var ms []string
	for _, m := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		switch {
		case m == http.MethodTrace || m == http.MethodConnect:
			return nil, fmt.Errorf("%s is never forwarded: TRACE echoes the request back, with its cookies, and CONNECT opens a tunnel", m)
		case !canon.IsToken(m) || canon.Method(m) != nil:
			return nil, fmt.Errorf("%q is not a method: want upper-case tokens such as GET,POST", m)
		}
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil, errors.New("want at least one method, such as " + DefaultMethods)
	}
	return ms, nil
}

// appendHeaderNames appends the header names of a comma-separated list to
// dst, canonical, as net/http keys a request's headers.
func appendHeaderNames(dst *[]string, v string) error {
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if !httpguts.ValidHeaderFieldName(e) {
			return fmt.Errorf("%q is not a header name", e)
		}
		*dst = append(*dst, http.CanonicalHeaderKey(e))
	}
	return nil
}

// readToken reads the admin token: the file's content without surrounding
// white space, which must leave something.
func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var perr *os.PathError
		if errors.As(err, &perr) {
			return "", perr.Err // the path is in the message already
		}
		return "", err
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", errors.New("the file is empty: write the token into it")
	}
	return token, nil
}
