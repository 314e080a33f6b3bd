package admit

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// fieldKind is the family of rate-limit header fields a group's answers
// carry beside Retry-After (see Budget.XRateLimit).
type fieldKind uint8

const (
	// draftFields are the IETF draft's structured fields
	// (draft-ietf-httpapi-ratelimit-headers): RateLimit-Policy and
	// RateLimit.
	draftFields fieldKind = iota
	// xRateLimitFields are go-chi/httprate's X-RateLimit-Limit,
	// -Remaining and -Reset.
	xRateLimitFields
)

// fieldValues are a group's rate-limit fields, built once so that a flood
// of refusals allocates nothing. Each slice has its capacity cut to its
// length, as the header values of headers.go.
type fieldValues struct {
	kind      fieldKind
	admitted  bool       // on admitted answers too
	policy    []string   // RateLimit-Policy: the group's item
	rateLimit [][]string // RateLimit of a refusal, by Retry-After below 60
	limit     []string   // X-RateLimit-Limit
	// reset is the last X-RateLimit-Reset a refusal sent: refusals within
	// one second share it.
	reset atomic.Pointer[resetValue]
}

type resetValue struct {
	at int64
	v  []string
}

var zeroValue = []string{"0"}[:1:1]

func newFieldValues(name Group, b Budget, policy string, admitted bool) *fieldValues {
	f := &fieldValues{kind: draftFields, admitted: admitted,
		policy: []string{policy}[:1:1], limit: []string{strconv.Itoa(b.Burst)}[:1:1]}
	if b.XRateLimit {
		f.kind = xRateLimitFields
	}
	f.rateLimit = make([][]string, len(retryAfter))
	for t := range f.rateLimit {
		f.rateLimit[t] = []string{refusalItem(name, t)}[:1:1]
	}
	return f
}

// refusalItem is the RateLimit item of a refusal by g: nothing left, and
// t equal to Retry-After, as the draft asks (a client must not retry
// before the effective window ends).
func refusalItem(g Group, retry int) string {
	return `"` + string(g) + `";r=0;t=` + strconv.Itoa(retry)
}

// resetAt returns the header value of epoch second at, from the last one
// made when it is the same.
func (f *fieldValues) resetAt(at int64) []string {
	if r := f.reset.Load(); r != nil && r.at == at {
		return r.v
	}
	r := &resetValue{at: at, v: []string{strconv.FormatInt(at, 10)}[:1:1]}
	f.reset.Store(r)
	return r.v
}

// setRefusal adds to hdr the fields of a rate_limited refusal by g whose
// Retry-After is retry (at least 1); wall is the door's Unix time in
// seconds.
func (g *group) setRefusalFields(hdr http.Header, retry int, wall func() int64) {
	f := g.fields
	switch f.kind {
	case draftFields:
		hdr["Ratelimit-Policy"] = f.policy
		if retry < len(f.rateLimit) {
			hdr["Ratelimit"] = f.rateLimit[retry]
		} else {
			hdr["Ratelimit"] = []string{refusalItem(g.name, retry)}
		}
	case xRateLimitFields:
		hdr["X-Ratelimit-Limit"] = f.limit
		hdr["X-Ratelimit-Remaining"] = zeroValue
		hdr["X-Ratelimit-Reset"] = f.resetAt(wall() + int64(retry))
	}
}

// addFields adds to hdr the fields of an admitted request, for each of its
// limits that sends them on admitted answers: the draft's one item per
// limit, httprate's for the limit with the fewest tokens left. A field
// the answer set itself is left as it is. A limit of a shadow request
// took nothing, and reports nothing left.
func (h *handler) addFields(hdr http.Header, tickets []ticket, verdicts []verdict) {
	var policy, state strings.Builder
	x, xLeft, xReset := -1, 0, 0
	for i, g := range h.limits {
		if !g.fields.admitted {
			continue
		}
		v := verdicts[i]
		left, reset := max(v.left, 0), max(v.reset, 0)
		if !tickets[i].taken {
			left, reset = 0, 0
		}
		switch g.fields.kind {
		case draftFields:
			if policy.Len() > 0 {
				policy.WriteString(", ")
				state.WriteString(", ")
			}
			policy.WriteString(g.fields.policy[0])
			state.WriteString(`"` + string(g.name) + `";r=` + strconv.Itoa(left) + `;t=` + strconv.Itoa(reset))
		case xRateLimitFields:
			if x < 0 || left < xLeft {
				x, xLeft, xReset = i, left, reset
			}
		}
	}
	if policy.Len() > 0 {
		addAbsent(hdr, "Ratelimit-Policy", policy.String())
		addAbsent(hdr, "Ratelimit", state.String())
	}
	if x >= 0 {
		addAbsent(hdr, "X-Ratelimit-Limit", h.limits[x].fields.limit[0])
		addAbsent(hdr, "X-Ratelimit-Remaining", strconv.Itoa(xLeft))
		addAbsent(hdr, "X-Ratelimit-Reset", strconv.FormatInt(h.limits[x].set.wall()+int64(xReset), 10))
	}
}

// addAbsent sets the canonical name to v unless the answer has set it.
func addAbsent(hdr http.Header, name, v string) {
	if _, ok := hdr[name]; !ok {
		hdr[name] = []string{v}
	}
}
