package admit

import (
	"encoding/json"
	"html"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/admitgo/admit/internal/hop"
)

// The media types a group's refusal body may have (see Budget.RefusalType).
const (
	refusalText    = "text/plain; charset=utf-8"
	refusalHTML    = "text/html; charset=utf-8"
	refusalProblem = "application/problem+json"
)

// refusalAnswer is how a group answers the refusals that carry
// Retry-After: its content type, its body and its extra header fields, all
// built when the door is made, so that a refusal only writes the retry
// time into them.
type refusalAnswer struct {
	contentType []string // the Content-Type value
	typeField   string   // the same as "Content-Type: ...\r\n"
	// bodies are, by outcome, the body's parts, between each two of which
	// the retry time goes; nil: the group's default body for the status.
	bodies [numOutcomes][][]byte
	size   [numOutcomes]int // a body's length with the longest retry time
	extra  []extraField     // sorted by name, as http.Header.Write sorts them
}

// extraField is one of Budget.RefusalHeaders, ready to write.
type extraField struct {
	name  string   // canonical
	value []string // capacity cut to length, shared by every refusal
	field string   // "Name: value\r\n"
}

// The outcomes whose refusals carry Retry-After, and so the group's body.
var retryOutcomes = []outcome{outcomeRateLimited, outcomeClientConcurrency, outcomeGroupConcurrency, outcomeStoreError}

// A template's placeholders, in the order of their kinds.
var placeholders = []string{"group", "status", "retry_after", "outcome"}

const (
	holeGroup = iota
	holeStatus
	holeRetry
	holeOutcome
	noHole
)

// piece is a template's literal text, or one of its placeholders.
type piece struct {
	text string
	hole int
}

// parseTemplate splits a refusal body into text and placeholders. A brace
// around a word of lower-case letters and underscores is a placeholder,
// which must be known; any other brace is text.
func parseTemplate(s string) ([]piece, string, bool) {
	var out []piece
	for {
		i := strings.IndexByte(s, '{')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(s[i:], '}')
		}
		if j < 0 || !isWord(s[i+1:i+j]) {
			if j < 0 {
				return append(out, piece{s, noHole}), "", true
			}
			out = append(out, piece{s[:i+1], noHole})
			s = s[i+1:]
			continue
		}
		name := s[i+1 : i+j]
		k := slices.Index(placeholders, name)
		if k < 0 {
			return nil, name, false
		}
		out = append(out, piece{s[:i], noHole}, piece{hole: k})
		s = s[i+j+1:]
	}
}

func isWord(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz_") == ""
}

// validateRefusal refuses a refusal answer the door could not give as the
// budget says, or should not.
func (b Budget) validateRefusal(g Group) error {
	switch b.RefusalType {
	case "", refusalText, refusalProblem:
	case refusalHTML:
		if b.RefusalBody == "" {
			return fieldsError(g, "{RefusalBody} is needed for an HTML {RefusalType}")
		}
	default:
		return fieldsError(g, "{RefusalType} %q, want %q, %q or %q", b.RefusalType, refusalText, refusalHTML, refusalProblem)
	}
	if _, bad, ok := parseTemplate(b.RefusalBody); !ok {
		// Braces would be read as the names of fields (see BudgetError).
		return fieldsError(g, "{RefusalBody} has an unknown placeholder %q: want group, status, retry_after or outcome in braces", bad)
	}
	if b.RefusalProblemType != "" {
		if b.RefusalType != refusalProblem {
			return fieldsError(g, "{RefusalProblemType} applies to a problem document's {RefusalType} only")
		}
		if u, err := url.Parse(b.RefusalProblemType); err != nil || strings.ContainsAny(b.RefusalProblemType, " \t") || u.String() != b.RefusalProblemType {
			return fieldsError(g, "{RefusalProblemType} %q is not a URI", b.RefusalProblemType)
		}
	}
	for name, values := range b.RefusalHeaders {
		if why := refusedHeader(name); why != "" {
			return fieldsError(g, "{RefusalHeaders} %q: %s", name, why)
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fieldsError(g, "{RefusalHeaders} %q: its value holds a control character", name)
			}
		}
	}
	return nil
}

// refusedHeader says why a name cannot be one of a refusal's extra
// fields, or "" when it can: any token but those the connection, the
// body's framing or admit itself set.
func refusedHeader(name string) string {
	if !httpguts.ValidHeaderFieldName(name) {
		return "not a header name"
	}
	switch c := http.CanonicalHeaderKey(name); {
	case hop.Header(c) || strings.HasPrefix(c, "Proxy-"):
		return "a hop-by-hop field speaks for the connection, not the answer"
	case c == "Content-Length" || c == "Content-Type" || c == "Content-Encoding" || c == "Content-Range":
		return "the refusal's body sets it"
	case c == "Set-Cookie":
		return "a refusal sets no cookie"
	case c == "Retry-After" || strings.HasPrefix(c, "Ratelimit") || strings.HasPrefix(c, "X-Ratelimit") ||
		c == "X-Content-Type-Options" || strings.HasPrefix(c, "Admit-"):
		return "admit sets it"
	}
	return ""
}

// newRefusalAnswer builds a valid budget's refusal answer for group g,
// whose refusals answer status(o) for each outcome o.
func newRefusalAnswer(g Group, b Budget, status func(outcome) int) refusalAnswer {
	typ := cmpOr(b.RefusalType, refusalText)
	a := refusalAnswer{contentType: []string{typ}[:1:1], typeField: "Content-Type: " + typ + "\r\n"}
	merged := http.Header{}
	for name, values := range b.RefusalHeaders {
		for _, v := range values {
			merged.Add(name, strings.Trim(v, " \t")) // as http.Header.Write writes it
		}
	}
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		f := extraField{name: name, value: slices.Clip(merged[name])}
		for _, v := range f.value {
			f.field += name + ": " + v + "\r\n"
		}
		a.extra = append(a.extra, f)
	}
	if b.RefusalBody == "" && typ != refusalProblem {
		return a
	}
	pieces, _, _ := parseTemplate(b.RefusalBody)
	// The template's text is the operator's, markup included; the
	// group's name is escaped as a value. A problem document's detail is
	// a JSON string, so both are escaped there.
	text, value := func(s string) string { return s }, func(s string) string { return s }
	switch typ {
	case refusalHTML:
		value = html.EscapeString
	case refusalProblem:
		text = func(s string) string { q := jsonString(s); return q[1 : len(q)-1] }
		value = text
	}
	for _, o := range retryOutcomes {
		st := status(o)
		var body parts
		detail := func() {
			for _, p := range pieces {
				switch p.hole {
				case noHole:
					body.text(text(p.text))
				case holeGroup:
					body.text(value(string(g)))
				case holeStatus:
					body.text(strconv.Itoa(st))
				case holeRetry:
					body.retry()
				case holeOutcome:
					body.text(o.String())
				}
			}
		}
		if typ != refusalProblem {
			detail()
		} else {
			body.text(`{"type":` + jsonString(cmpOr(b.RefusalProblemType, "about:blank")))
			if title := http.StatusText(st); title != "" { // a status net/http does not name has none
				body.text(`,"title":` + jsonString(title))
			}
			body.text(`,"status":` + strconv.Itoa(st))
			if b.RefusalBody != "" {
				body.text(`,"detail":"`)
				detail()
				body.text(`"`)
			}
			body.text(`,"retry_after":`)
			body.retry()
			body.text("}")
		}
		a.bodies[o] = body.done()
		for i, p := range a.bodies[o] {
			a.size[o] += len(p)
			if i > 0 {
				a.size[o] += 20 // the digits of the largest retry time
			}
		}
	}
	return a
}

func jsonString(s string) string { q, _ := json.Marshal(s); return string(q) }

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// parts collects a body's text between the places of the retry time.
type parts struct {
	before [][]byte // the text before each retry time
	cur    []byte
}

func (p *parts) text(s string)  { p.cur = append(p.cur, s...) }
func (p *parts) retry()         { p.before = append(p.before, p.cur); p.cur = nil }
func (p *parts) done() [][]byte { return append(p.before, p.cur) }

// appendBody appends the body of a refusal of outcome o to b, with the
// retry time in whole seconds, at least 1, as Retry-After says it.
func (a *refusalAnswer) appendBody(b []byte, o outcome, retry int) []byte {
	for i, p := range a.bodies[o] {
		if i > 0 {
			b = strconv.AppendInt(b, int64(max(retry, 1)), 10)
		}
		b = append(b, p...)
	}
	return b
}

// appendExtra appends to b the extra fields from *next on whose names sort
// before before ("": all that are left), and moves *next past them.
func (a *refusalAnswer) appendExtra(b []byte, next *int, before string) []byte {
	for ; *next < len(a.extra) && (before == "" || a.extra[*next].name < before); *next++ {
		b = append(b, a.extra[*next].field...)
	}
	return b
}

// setExtra puts the extra fields in h.
func (a *refusalAnswer) setExtra(h http.Header) {
	for _, f := range a.extra {
		h[f.name] = f.value
	}
}
