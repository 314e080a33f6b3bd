package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/quota"
)

// The file keys of a group's exemptions.
const (
	fieldExempt         = "exempt"
	FieldExemptKeysFrom = "exempt_keys_from" // also explain's word for a listed key
)

// readExempt reads client prefixes a group lets past without spending:
// CIDRs or addresses, as --trusted-proxy takes them.
func readExempt(d *budgetDraft, v string) error {
	var ps []netip.Prefix
	if err := appendPrefixes(&ps, v); err != nil {
		if errors.Is(err, clientip.ErrTrustAll) {
			return fmt.Errorf("%q exempts every client: leave the group off the routes instead", v)
		}
		return fmt.Errorf("%q: %w", v, err)
	}
	for _, p := range ps {
		if p.Addr().Is6() && p.Bits() > ClientIPv6Bits {
			return fmt.Errorf("%v is narrower than the /%d an IPv6 client is keyed by, so it would exempt nobody", p, ClientIPv6Bits)
		}
	}
	d.b.Exempt = append(d.b.Exempt, ps...)
	return nil
}

// readExemptKeys reads the keys a group lets past without spending, from a
// file (one key per line) or from env:NAME (keys separated by commas), as
// the group keys a request: a header's value, an Authorization header's
// credential (the token after the scheme, a Basic one's user:pass), or a
// path value. Each is kept only as quota.Subject's hash, so neither the
// running configuration nor its listing holds a secret, and no error
// quotes one.
func readExemptKeys(d *budgetDraft, v string) error {
	var values []string
	if name, ok := strings.CutPrefix(v, "env:"); ok {
		raw := ""
		if d.getenv != nil {
			raw = d.getenv(name)
		}
		if raw == "" {
			return fmt.Errorf("%q: the environment variable %s is empty or unset", v, name)
		}
		values = strings.Split(raw, ",")
	} else {
		data, err := os.ReadFile(v)
		if err != nil {
			var perr *os.PathError
			if errors.As(err, &perr) {
				err = perr.Err
			}
			return fmt.Errorf("%q: %w", v, err)
		}
		values = strings.Split(string(data), "\n")
	}
	var keys []string
	for _, k := range values {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, quota.Subject(k))
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("%q holds no key: write one per line (or, in a variable, separated by commas)", v)
	}
	d.b.ExemptKeys, d.exemptFrom = keys, v
	return nil
}

// prefixList is a list of prefixes as the file writes it: a YAML flow
// list, and a JSON array of strings.
type prefixList []netip.Prefix

func (l prefixList) String() string {
	out := make([]string, len(l))
	for i, p := range l {
		out[i] = p.String()
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// ExemptText says what a budget exempts, for the status page: ", exempt
// 10.0.0.0/8 and 2 keys", or "" for nothing. Keys are counted, never shown.
func ExemptText(b admit.Budget) string {
	var parts []string
	if len(b.Exempt) > 0 {
		parts = append(parts, strings.Trim(prefixList(b.Exempt).String(), "[]"))
	}
	switch n := len(b.ExemptKeys); {
	case n == 1:
		parts = append(parts, "1 key")
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d keys", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", exempt " + strings.Join(parts, " and ")
}
