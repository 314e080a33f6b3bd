package routes

import (
	"errors"
	"net/url"
	"strings"

	"github.com/admitgo/admit/internal/canon"
)

// A Profile says how the app behind admit maps a request to a handler,
// beyond the canonical form: which other spellings of a limited route its
// framework routes to the same handler. A table matches a request when any
// of them matches a route. Generic, the zero value, is the union of every
// other profile, so that an operator who names none is covered;
// over-limiting is the safe direction, as with case folding.
type Profile uint8

// The profiles, as --upstream-profile names them: generic, servlet, rails,
// rack, php and express.
const (
	Generic Profile = iota // every mapping below
	Servlet                // path parameters (;name=value), _method in the query or a form
	Rails                  // a .format suffix, _method in a form
	Rack                   // _method in a form
	PHP                    // a front controller (/index.php/...), _method in the query or a form
	Express                // _method in the query or a form
)

var profiles = [...]Profile{Generic, Servlet, Rails, Rack, PHP, Express}

// String returns the profile as --upstream-profile names it.
func (p Profile) String() string {
	switch p {
	case Generic:
		return "generic"
	case Servlet:
		return "servlet"
	case Rails:
		return "rails"
	case Rack:
		return "rack"
	case PHP:
		return "php"
	case Express:
		return "express"
	}
	return "unknown"
}

// ParseProfile reads a profile as String writes it.
func ParseProfile(v string) (Profile, error) {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		if v == p.String() {
			return p, nil
		}
		names[i] = p.String()
	}
	return 0, errors.New("want " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1])
}

// mapping is one way a framework reads a request differently from its
// canonical form.
type mapping uint8

const (
	// mapParams strips ";name=value" from every segment, as servlet
	// containers do before mapping (and Spring, and Jetty); "..;" is "..".
	mapParams mapping = 1 << iota
	// mapFormat drops a ".format" suffix from the last segment, as Rails
	// routes do by default ("(.:format)"): /hooks/github.json is
	// /hooks/github.
	mapFormat
	// mapFrontController drops a leading path up to a "*.php" segment, as a
	// PHP front controller serves /index.php/l/abc as /l/abc (Symfony,
	// Laravel, any fastcgi_split_path_info).
	mapFrontController
	// mapQueryMethod runs a POST as the method a "_method" query parameter
	// names (Express's method-override with a query getter, Symfony, Spring's
	// HiddenHttpMethodFilter).
	mapQueryMethod
	// mapBodyMethod runs a POST as the method a "_method" field of its form
	// body names (Rack::MethodOverride in every Rails and Sinatra app,
	// Symfony, Laravel, Spring's HiddenHttpMethodFilter).
	mapBodyMethod
)

// mappings returns what a profile's framework does.
func (p Profile) mappings() mapping {
	switch p {
	case Servlet:
		return mapParams | mapQueryMethod | mapBodyMethod
	case Rails:
		return mapFormat | mapBodyMethod
	case Rack:
		return mapBodyMethod
	case PHP:
		return mapFrontController | mapQueryMethod | mapBodyMethod
	case Express:
		return mapQueryMethod | mapBodyMethod
	}
	return mapParams | mapFormat | mapFrontController | mapQueryMethod | mapBodyMethod
}

// A variant is a spelling of a canonical path that the app routes as the
// canonical path's handler would not: the path the framework maps it to,
// and how it came about, for explain.
type variant struct {
	path, how string
}

// variants appends to dst the paths a canonical path is routed as: path
// itself first, then, when encoded percent signs are allowed through, the
// path a decoding hop passes on, read canonically and as the app reads it,
// then what each of maps makes of each. A path none of them changes is the
// only variant, found without allocating. There are at most 18: the path
// itself and, once more decoded by a hop, as canonical and as the app reads
// it, and of each, cut at an encoded delimiter, without parameters, without
// a format, and after two front controllers.
func variants(path string, maps mapping, allow canon.Classes, slashes canon.Slashes, dst []variant) []variant {
	dst = append(dst, variant{path: path})
	if allow.Has(canon.EncodedPercent) && strings.Contains(path, "%25") {
		// nginx's proxy_pass with $uri decodes once: %252F arrives as %2F,
		// which the app decodes again, so it is read here as decoded.
		once := strings.ReplaceAll(path, "%25", "%")
		if p, err := canon.Path(once, canon.Decode); err == nil && p != path {
			dst = append(dst, variant{path: p, how: "decoded once more, as a decoding hop passes it on"})
		}
		// The app resolves no dot segment its own decoding makes:
		// /l%252F. is /l/. to Werkzeug's router, an id of ".", where the
		// canonical form above is /l. The canonical form lets through no
		// %25 that would leave a bad escape, so once decodes.
		if d, err := url.PathUnescape(once); err == nil {
			if p := appPath(d); p != path {
				dst = appendVariant(dst, p, "decoded once more, as a decoding hop passes it on, dot segments kept as the app reads them")
			}
		}
	}
	for _, base := range dst {
		if allow.Has(canon.EncodedDelimiter) {
			// A decoding hop sends %3F and %23 on raw: the app routes
			// what comes before them.
			if i := indexDelimiter(base.path); i >= 0 {
				dst = appendVariant(dst, base.path[:i], join(base.how, "cut at an encoded ? or #, as a decoding hop passes it on"))
			}
		}
		if maps&mapParams != 0 {
			if p, ok := stripParams(base.path, slashes); ok {
				dst = appendVariant(dst, p, join(base.how, "path parameters removed, as servlet containers map it"))
			}
		}
		if maps&mapFormat != 0 {
			if p, ok := stripFormat(base.path); ok {
				dst = appendVariant(dst, p, join(base.how, "format suffix removed, as Rails routes it"))
			}
		}
		if maps&mapFrontController != 0 {
			for _, p := range stripFrontController(base.path) {
				dst = appendVariant(dst, p, join(base.how, "front controller removed, as a PHP front controller routes it"))
			}
		}
	}
	return dst
}

func appendVariant(dst []variant, path, how string) []variant {
	for _, v := range dst {
		if v.path == path {
			return dst
		}
	}
	return append(dst, variant{path: path, how: how})
}

// join joins two descriptions of a spelling, either of which may be empty.
func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ", " + b
}

// stripParams removes every segment's parameters, from its first ';' (or
// %3B, which a decoding hop turns into one) on, and reads the result as a
// canonical path, so that "..;" is a dot segment. false: path holds none,
// or the result has no canonical form.
func stripParams(path string, slashes canon.Slashes) (string, bool) {
	if strings.IndexByte(path, ';') < 0 && !strings.Contains(path, "%3B") {
		return "", false
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ';'); j >= 0 {
			s = s[:j]
		}
		if j := strings.Index(s, "%3B"); j >= 0 {
			s = s[:j]
		}
		segs[i] = s
	}
	p, err := canon.Path(strings.Join(segs, "/"), slashes)
	return p, err == nil
}

// stripFormat removes the last segment's suffix from its first dot on, as
// Rails' "(.:format)" reads it (a segment's default pattern holds no dot);
// a trailing slash goes first, as Rails ignores it. false: no suffix.
func stripFormat(path string) (string, bool) {
	p := strings.TrimSuffix(path, "/")
	last := strings.LastIndexByte(p, '/')
	dot := strings.IndexByte(p[last+1:], '.')
	if dot < 0 {
		return "", false
	}
	return p[:last+1+dot], true
}

// stripFrontController returns the path after the first segment that ends
// in ".php", and after the last such segment followed by more (nginx's
// fastcgi_split_path_info is greedy), at most two paths; none when no
// segment ends so.
func stripFrontController(path string) []string {
	if !containsPHP(path) {
		return nil
	}
	var out []string
	segs := strings.Split(path, "/")
	first, last := -1, -1
	for i, s := range segs {
		if strings.HasSuffix(strings.ToLower(s), ".php") {
			if first < 0 {
				first = i
			}
			if i < len(segs)-1 {
				last = i
			}
		}
	}
	for _, i := range []int{first, last} {
		if i < 0 {
			continue
		}
		p := "/" + strings.Join(segs[i+1:], "/")
		if len(out) == 0 || out[0] != p {
			out = append(out, p)
		}
	}
	return out
}

// containsPHP reports ".php" in path, in any case, without allocating.
func containsPHP(path string) bool {
	for i := 0; i+4 <= len(path); i++ {
		if path[i] == '.' && strings.EqualFold(path[i+1:i+4], "php") {
			return true
		}
	}
	return false
}

// indexDelimiter returns the index of the first %3F or %23 in a canonical
// path, or -1.
func indexDelimiter(path string) int {
	for i := 0; i+2 < len(path); i++ {
		if path[i] == '%' && (path[i+1] == '3' && path[i+2] == 'F' || path[i+1] == '2' && path[i+2] == '3') {
			return i
		}
	}
	return -1
}

// appPath returns the path an app reads, decoded, as the table looks it up:
// '%' escaped again, and each "." or ".." segment, which the lookup would
// resolve and the app does not, as a segment of the escaped dots, which no
// route names and a wildcard matches.
func appPath(decoded string) string {
	segs := strings.Split(decoded, "/")
	for i, s := range segs {
		switch s = strings.ReplaceAll(s, "%", "%25"); s {
		case ".":
			s = "%252E"
		case "..":
			s = "%252E%252E"
		}
		segs[i] = s
	}
	return strings.Join(segs, "/")
}
