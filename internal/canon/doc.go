// Package canon turns an HTTP request into the one spelling admit decides on
// and forwards, so that no other spelling of a limited request can reach the
// upstream's limited handler around its limit.
//
// Upstream routers disagree about what a request target means: Flask and
// gorilla/mux decode %2F before routing, Express folds case and ignores a
// trailing slash, nginx resolves dot segments, Werkzeug runs a lower-case
// method. Rather than guess which router is behind it, admit decides on a
// canonical form and sends the upstream exactly that form, so the upstream
// routes what admit matched:
//
//   - The path has every percent-encoded unreserved character decoded (RFC
//     3986 §6.2.2.2: %41 is A, %2E is a dot), the hex digits of the other
//     escapes upper-cased, characters a path may not hold escaped, dot
//     segments removed (RFC 3986 §5.2.4, encoded dots included) and runs of
//     slashes merged.
//   - Encoded slashes and backslashes (%2F, %5C) and raw backslashes follow
//     a [Slashes] policy: refused by default, or decoded into a separator, or
//     kept as data (Envoy's REJECT_REQUEST, UNESCAPE_AND_FORWARD and
//     KEEP_UNCHANGED).
//   - A NUL byte (%00), a raw '#' and a target that is neither origin-form
//     ("/path") nor absolute-form ("http://host/path") are refused.
//   - The method must be an upper-case token: "get" and "Get" are refused,
//     since some routers run them as GET.
//   - The host is lower-cased, without a trailing dot, and without the
//     scheme's default port.
//   - Spellings that routers read differently from one another, each a
//     [Class], are refused unless [Options] allow their class: ';' and %3B
//     in the path (servlet path parameters), %25 (an escape a decoding hop
//     turns into another), escaped control characters, raw bytes above
//     0x7F and escapes that are not UTF-8, and a Host that is not one host
//     and an optional port. This is Spring Security's StrictHttpFirewall's
//     answer: no reading of them would hold for every router, so none is
//     guessed.
//
// An already canonical request is left untouched and costs a single scan
// without allocating.
package canon
