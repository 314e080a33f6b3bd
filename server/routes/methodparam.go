package routes

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/bodyrate"
	"github.com/admitgo/admit/internal/canon"
)

// Frameworks run a POST as the method its "_method" parameter names: Rack's
// MethodOverride (so every Rails and Sinatra app) reads it from a form
// body, Express's method-override from the query, Symfony, Laravel and
// Spring's HiddenHttpMethodFilter from either. A limit on DELETE /x must
// then hold for POST /x?_method=DELETE too, so the front reads those
// parameters, when the upstream profile says the framework does, and
// matches the request under each method they name as well.

// formScanBytes bounds the form body read for "_method": the default body
// cap of the link and webhook groups. A longer body is not read; the
// request is then limited under every method a route names.
const formScanBytes = 64 << 10

// formScanRule bounds how slowly the form body may arrive: the webhook
// group's default body deadline and minimum rate, the rule every slow
// body meets at the door, since the group is not known before the body
// has been read.
var formScanRule = func() bodyrate.Rule {
	b := admit.DefaultBudgets()[admit.GroupWebhook]
	return bodyrate.Rule{Timeout: b.ReadTimeout, MinRate: b.MinBodyRate, Grace: b.BodyRateGrace}
}()

// UnseenBody returns the body of a request whose body admit cannot see,
// as a front's forward-auth request tells of one: a POST with it could
// carry a form naming any method, so it matches under every method a
// "_method" parameter could name. It reads as empty.
func UnseenBody() io.ReadCloser { return unseen }

var unseen io.ReadCloser = unseenBody{}

type unseenBody struct{}

func (unseenBody) Read([]byte) (int, error) { return 0, io.EOF }
func (unseenBody) Close() error             { return nil }

// ErrFormBody refuses a request whose form body broke formScanRule, or
// broke off.
var ErrFormBody = errors.New("the form body, which may name the method the app runs, could not be read")

// Match appends to dst the routes r matches in any spelling, under its
// method and each method of overrides (the method override headers, at
// most MaxOverrides), as matchAll finds them; r is in canonical form
// (internal/canon). When a "_method" parameter could take the POST to a
// route that it does not match yet, it matches r under the methods its
// parameters name as well. Only then is a parameter read, and a form body
// waited for, up to 64 KiB and 10 s, through w; an error (ErrFormBody)
// refuses the request. A body read is handed on unchanged in r.Body.
func (t *Table) Match(w http.ResponseWriter, r *http.Request, overrides []string, dst []Match) ([]Match, error) {
	matched := t.matchAll(r, overrides, dst)
	if !t.overridable(r, overrides, direct(matched)) {
		return matched, nil
	}
	params, err := paramMethods(w, r, t.maps, t.others)
	if err != nil {
		return nil, err
	}
	if more := appendNew(slices.Clip(overrides), params...); len(more) > len(overrides) {
		matched = t.matchAll(r, more, dst[:0])
	}
	return matched, nil
}

// overridable reports whether a "_method" parameter could take r, a POST
// matching n routes under overrides, to another route: r carries a query or
// a body the profile reads, and some route matches a spelling of r under a
// method of t.others that none matches under r's own methods. Routes
// matched only because no route names POST (see unnamed) do not count:
// they leave out strict routes, which a _method reaches all the same.
func (t *Table) overridable(r *http.Request, overrides []string, n int) bool {
	query := t.maps&mapQueryMethod != 0 && r.URL.RawQuery != ""
	body := t.maps&mapBodyMethod != 0 && r.Body != nil && r.Body != http.NoBody
	if r.Method != http.MethodPost || len(t.others) == 0 || !query && !body {
		return false
	}
	return direct(t.matchAll(r, appendNew(slices.Clip(overrides), t.others...), nil)) > n
}

// direct counts the routes of ms matched under a method of the request's.
func direct(ms []Match) int {
	n := 0
	for _, m := range ms {
		if m.sp.unnamed == "" {
			n++
		}
	}
	return n
}

// appendNew appends to list the methods of more it does not hold yet.
func appendNew(list []string, more ...string) []string {
	for _, m := range more {
		if !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	return list
}

// paramMethods returns the methods a POST's "_method" parameters name, in
// its query and its body as maps say the framework reads them. A body it
// reads is handed on unchanged: r.Body is replaced by what was read,
// followed by the rest.
//
// Frameworks respell the parameter's name before they look it up (Rack
// strips brackets, PHP turns '.' and ' ' into '_' and stops at NUL, qs
// reads _method[]), so every parameter whose decoded name holds "method",
// in any case, counts; a value that is not a token names no method. Only a
// form body in its one plain form (URL-encoded, ASCII-compatible) is read
// pair by pair: a multipart, JSON or any other body that Rack, PHP,
// Laravel or body-parser might parse is searched for "method" instead, and
// one that holds it or escapes that could spell it, one longer than
// formScanBytes, or an encoded one could name any method, so every method
// of others is returned. others are the methods the routes name besides
// POST; more names than MaxOverrides give others too.
func paramMethods(w http.ResponseWriter, r *http.Request, maps mapping, others []string) ([]string, error) {
	if r.Method != http.MethodPost || len(others) == 0 {
		return nil, nil
	}
	var ms []string
	all := false
	add := func(v string) {
		m := strings.ToUpper(strings.TrimSpace(v))
		switch {
		case m == "" || !canon.IsToken(m) || m == http.MethodPost || slices.Contains(ms, m):
		case len(ms) == MaxOverrides:
			all = true
		default:
			ms = append(ms, m)
		}
	}
	if maps&mapQueryMethod != 0 && r.URL.RawQuery != "" {
		formValues(r.URL.RawQuery, add)
	}
	if maps&mapBodyMethod != 0 && r.Body == unseen {
		all = true
	} else if maps&mapBodyMethod != 0 && r.Body != nil && r.Body != http.NoBody {
		body, whole, err := readAtMost(w, r, formScanBytes)
		switch {
		case err != nil:
			return nil, ErrFormBody
		case !whole || r.Header.Get("Content-Encoding") != "":
			all = true
		default:
			switch form, ascii := formType(r.Header.Get("Content-Type")); {
			case form && ascii:
				formValues(string(body), add)
			case form, mayNameMethod(body):
				all = true // a charset whose bytes for "method" no search can know
			}
		}
	}
	if all {
		return others, nil
	}
	return ms, nil
}

// formType reports a body type every framework reads as URL-encoded
// pairs: none (Rack parses a POST without one as a form), or
// application/x-www-form-urlencoded read as loosely as Rack and PHP read
// it (cut at the first ';', ',' or space, in any case); and whether its
// charset, if it names one, is a superset of ASCII.
func formType(contentType string) (form, ascii bool) {
	kind, params, _ := strings.Cut(contentType, ";")
	if i := strings.IndexAny(kind, ", \t"); i >= 0 {
		kind = kind[:i]
	}
	if kind != "" && !strings.EqualFold(kind, "application/x-www-form-urlencoded") {
		return false, false
	}
	params = strings.ToLower(params)
	i := strings.Index(params, "charset")
	if i < 0 {
		return true, true
	}
	cs := strings.Trim(strings.TrimLeft(params[i+len("charset"):], " \t="), "\" ")
	if j := strings.IndexAny(cs, "; ,\""); j >= 0 {
		cs = cs[:j]
	}
	return true, cs == "utf-8" || cs == "us-ascii" || cs == "iso-8859-1"
}

// mayNameMethod reports a body that might name a method parameter however
// its framework parses it: it holds "method" in any case, or an escape
// ('%' or '\', as URL and JSON encodings write them) that could spell it.
func mayNameMethod(body []byte) bool {
	return bytes.Contains(bytes.ToLower(body), []byte("method")) || bytes.ContainsAny(body, `%\`)
}

// readAtMost reads up to limit bytes of r's body under formScanRule and
// puts them back in front of the rest. whole: the body ended within them.
func readAtMost(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, whole bool, err error) {
	if r.ContentLength > limit {
		return nil, false, nil
	}
	rc := http.NewResponseController(w)
	expect := strings.EqualFold(r.Header.Get("Expect"), "100-continue")
	br := bodyrate.NewReader(r.Body, rc, formScanRule, time.Time{}, time.Time{}, expect, nil)
	body, err = io.ReadAll(io.LimitReader(br, limit+1))
	if !br.Done() {
		_ = rc.SetReadDeadline(time.Time{}) // the body goes on after what was read
	}
	if err != nil {
		return nil, false, err
	}
	whole = int64(len(body)) <= limit
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return body, whole, nil
}

// readCloser reads from the bytes read ahead and then the body, and closes
// the body.
type readCloser struct {
	io.Reader
	io.Closer
}

// formValues calls add with the value of every parameter of a query or
// URL-encoded body whose decoded name holds "method" in any case. It
// splits on ';' as well as '&', as older Rack does, and decodes names and
// values, '+' as a space; a name it cannot decode is read as it is, a
// value it cannot decode is skipped.
func formValues(s string, add func(string)) {
	for _, pair := range strings.FieldsFunc(s, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err == nil {
			k = key
		}
		if !strings.Contains(strings.ToLower(k), "method") {
			continue
		}
		if value, err := url.QueryUnescape(v); err == nil {
			add(value)
		}
	}
}
