// Package opshost keeps an operations listener (metrics, the admin API,
// the status page, health) to the names it is reached by: an IP literal,
// localhost or a name under .localhost, and the names the operator lists.
//
// A page in a browser on the host where admit runs can send requests to
// any name whose DNS its site controls; once the name resolves to
// 127.0.0.1 (DNS rebinding), the browser sends them to the listener with
// that name in Host, and the same-origin policy lets the page read the
// answers, a client's state among them, which a loopback peer reads
// without the admin token. The browser always sends the name it resolved,
// so a listener that answers its own names only ends that: an IP literal
// cannot be rebound, and localhost and the names under .localhost never
// leave the host (RFC 6761; browsers resolve them to loopback themselves).
// Kubernetes probes and Prometheus reach a pod by its address, so they
// pass as IP literals.
//
// Every other Host, an empty one included, is answered 421 Misdirected
// Request (RFC 9110, section 15.5.20: the server does not answer for that
// name) before any handler runs. The check is an allowlist of spellings:
// a host name matches only when its labels are ASCII letters, in either
// case, digits, '-' and '_', so a name that folds to an allowed one under
// Unicode's rules (a KELVIN SIGN for a k) is refused.
package opshost
