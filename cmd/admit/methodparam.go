package main

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Frameworks run a POST as the method its "_method" parameter names: Rack's
// MethodOverride (so every Rails and Sinatra app) reads it from a form
// body, Express's method-override from the query, Symfony, Laravel and
// Spring's HiddenHttpMethodFilter from either. A limit on DELETE /x must
// then hold for POST /x?_method=DELETE too, so the front reads those
// parameters, when the upstream profile says the framework does, and
// matches the request under each method they name as well.

const (
	// methodParam is the parameter the frameworks read.
	methodParam = "_method"
	// formScanBytes bounds the form body read for it: the default body cap
	// of the link and webhook groups. A longer body is not read; the
	// request is then limited under every method a route names.
	formScanBytes = 64 << 10
	// formScanTimeout bounds how long reading it may take: the link
	// group's default body deadline.
	formScanTimeout = 10 * time.Second
)

// errFormBody refuses a request whose form body could not be read within
// formScanTimeout, or broke off.
var errFormBody = errors.New("the form body, which may name the method the app runs, could not be read")

// paramMethods returns the methods a POST's "_method" parameters name, in
// its query and its form body as maps say the framework reads them. A body
// it reads is handed on unchanged: r.Body is replaced by what was read,
// followed by the rest. A body it cannot read whole within formScanBytes
// (a multipart form it cannot parse, or a longer one) could name any
// method, so every method of others is returned; others are the methods
// the routes name besides POST. Values that are not one method are
// errAmbiguousOverride, as for the method override headers.
func paramMethods(w http.ResponseWriter, r *http.Request, maps mapping, others []string) ([]string, error) {
	if r.Method != http.MethodPost || len(others) == 0 {
		return nil, nil
	}
	var ms []string
	add := func(v string) error {
		m := strings.ToUpper(strings.TrimSpace(v))
		switch {
		case m == "":
		case !isToken(m) || len(ms) == maxOverrides:
			return errAmbiguousOverride
		case !slices.Contains(ms, m):
			ms = append(ms, m)
		}
		return nil
	}
	if maps&mapQueryMethod != 0 && strings.Contains(r.URL.RawQuery, "method") {
		if err := formValues(r.URL.RawQuery, add); err != nil {
			return nil, err
		}
	}
	if maps&mapBodyMethod == 0 || r.Body == nil || r.Body == http.NoBody {
		return ms, nil
	}
	kind, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case r.Header.Get("Content-Type") == "":
		kind = "application/x-www-form-urlencoded" // Rack parses a POST without a type as a form
	case err != nil:
		return ms, nil // no framework parses it as a form
	}
	if kind != "application/x-www-form-urlencoded" && kind != "multipart/form-data" {
		return ms, nil
	}
	body, whole, err := readAtMost(w, r, formScanBytes)
	if err != nil {
		return nil, errFormBody
	}
	if whole && kind == "application/x-www-form-urlencoded" {
		if err := formValues(string(body), add); err != nil {
			return nil, err
		}
		return ms, nil
	}
	if whole {
		if names, ok := multipartMethods(body, params["boundary"]); ok {
			for _, v := range names {
				if err := add(v); err != nil {
					return nil, err
				}
			}
			return ms, nil
		}
	}
	return others, nil
}

// readAtMost reads up to limit bytes of r's body under formScanTimeout and
// puts them back in front of the rest. whole: the body ended within them.
func readAtMost(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, whole bool, err error) {
	if r.ContentLength > limit {
		return nil, false, nil
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(formScanTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
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

// formValues calls add with every value of "_method" in a query or form
// body. It splits on ';' as well as '&', as older Rack does, and decodes
// keys and values, '+' as a space, as every framework does; a pair it
// cannot decode is skipped, as they skip it.
func formValues(s string, add func(string) error) error {
	for _, pair := range strings.FieldsFunc(s, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(strings.TrimLeft(pair, " "), "=")
		key, err := url.QueryUnescape(k)
		if err != nil || key != methodParam {
			continue
		}
		if value, err := url.QueryUnescape(v); err == nil {
			if err := add(value); err != nil {
				return err
			}
		}
	}
	return nil
}

// multipartMethods returns the values of "_method" fields in a whole
// multipart body. false: it does not parse.
func multipartMethods(body []byte, boundary string) ([]string, bool) {
	if boundary == "" {
		return nil, false
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var vs []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return vs, true
		}
		if err != nil {
			return nil, false
		}
		if p.FormName() == methodParam {
			v, err := io.ReadAll(p)
			if err != nil {
				return nil, false
			}
			vs = append(vs, string(v))
		}
	}
}
