package storeurl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// OneServer reports whether a Redis store's URL says batch_script=on: its
// batches go as one script run per 64 buckets (redisquota's
// Config.OneServer), which a URL can only say of one server, reached
// directly or through Sentinel.
func (s Store) OneServer() bool {
	o, err := parseRedis(s.URL)
	return err == nil && o.oneServer
}

// batchScriptParam is admit's own parameter of a Redis store URL that
// says whether batches go as one script run.
const batchScriptParam = "batch_script"

// batchScript reads the batch_script values cutOwn found: it may be given
// once, as on or off, and is off when absent.
func batchScript(vs []string) (on bool, err error) {
	switch {
	case len(vs) == 0:
		return false, nil
	case len(vs) > 1:
		return false, errors.New("batch_script is given twice")
	}
	switch vs[0] {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("batch_script=%s, want on or off", vs[0])
}

// ownParams are the parameters of a Redis store URL that admit reads
// itself and takes out before go-redis parses the rest: batch_script, and
// the TLS files (see tls.go).
var ownParams = []string{batchScriptParam, sslCertParam, sslKeyParam, sslRootCertParam}

// cutOwn takes admit's own parameters (ownParams) out of the part of a URL
// after its scheme, and returns what is left and their values, unescaped,
// under their names in ownParams. A name is recognised in any case and
// percent-encoded, so that no spelling of it reaches go-redis, which
// would refuse it as unknown.
func cutOwn(rest string) (string, map[string][]string, error) {
	head, query, ok := strings.Cut(rest, "?")
	if !ok {
		return rest, nil, nil
	}
	var kept []string
	own := map[string][]string{}
	for _, pair := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		i := -1
		if err == nil {
			i = indexFold(ownParams, name)
		}
		if i < 0 {
			kept = append(kept, pair)
			continue
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", ownParams[i], err)
		}
		own[ownParams[i]] = append(own[ownParams[i]], value)
	}
	if len(kept) == 0 {
		return head, own, nil
	}
	return head + "?" + strings.Join(kept, "&"), own, nil
}

// indexFold is the index of the first of names equal to name in any case,
// or -1.
func indexFold(names []string, name string) int {
	for i, n := range names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}
