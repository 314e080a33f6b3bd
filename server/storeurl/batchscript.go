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

// batchScriptParam is the parameter of a Redis store URL that admit reads
// itself and takes out before go-redis parses the rest.
const batchScriptParam = "batch_script"

// cutBatchScript takes the batch_script parameter out of the part of a
// URL after its scheme, and returns what is left, whether it said on and
// whether it was there. It may be given once, as on or off; its name is
// recognised in any case and percent-encoded, so that no spelling of it
// reaches go-redis, which would refuse it as unknown.
func cutBatchScript(rest string) (string, bool, bool, error) {
	head, query, ok := strings.Cut(rest, "?")
	if !ok {
		return rest, false, false, nil
	}
	var kept []string
	on, seen := false, false
	for _, pair := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if name, err := url.QueryUnescape(k); err != nil || !strings.EqualFold(name, batchScriptParam) {
			kept = append(kept, pair)
			continue
		}
		if seen {
			return "", false, false, errors.New("batch_script is given twice")
		}
		seen = true
		switch v {
		case "on":
			on = true
		case "off":
		default:
			return "", false, false, fmt.Errorf("batch_script=%s, want on or off", v)
		}
	}
	if len(kept) == 0 {
		return head, on, seen, nil
	}
	return head + "?" + strings.Join(kept, "&"), on, seen, nil
}
