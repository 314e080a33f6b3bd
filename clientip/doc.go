// Package clientip finds who sent an HTTP request, in a form a rate limiter
// can key on and a client cannot choose.
//
// A [Resolver] starts from the TCP peer (RemoteAddr). It reads a forwarding
// header only when that peer is a trusted proxy, and then walks the header
// from the right: each hop a trusted proxy added is skipped, and the first
// hop that is not trusted is the client. Whatever a client writes into the
// header lands to the left of that hop, so it is never read. The left-most
// entry, which many libraries take, is exactly the one a client controls.
//
// Guarantees:
//
//   - The zero [Config] trusts nobody: the key is the peer.
//   - All lines of the header count, joined in wire order; empty entries,
//     spaces and tabs are skipped.
//   - Every address is canonicalised (IPv4-mapped IPv6 unmapped, zone
//     stripped) before it is compared with a trusted prefix, so
//     "::ffff:10.0.0.1" is 10.0.0.1 and "fe80::1%eth0" is fe80::1.
//   - An entry that is not an address ("unknown", an obfuscated "_name",
//     0.0.0.0 or ::, leading-zero octets, an overlong token) ends the walk:
//     the key is the last trusted hop seen, the peer if the garbage is the
//     right-most entry. A chain of trusted hops only keys its left-most.
//   - Keys are prefixes: /32 for IPv4 (mapped addresses included), /64 for
//     IPv6 by default ([Config.IPv6Bits]), because one IPv6 host usually
//     owns a /64. A peer that is not an IP address (a Unix socket, an empty
//     RemoteAddr) gets [NonIPKey], shared by all such requests.
//   - [Resolver.Key] does not allocate for a request without forwarding
//     headers or with a short chain, and takes tens of nanoseconds for the
//     peer alone.
//
// With [Config.Forwarded] the walk reads the RFC 7239 Forwarded header
// instead: the for= parameter of each element, with case-insensitive names,
// quoted strings and bracketed IPv6 with a port. An element with an
// unterminated quote, a second for=, an unquoted IPv6 address or no for= at
// all is malformed. The resolver never falls back from one header to the
// other: a proxy that sends both has its choice made by the operator.
//
// The trade-off: a request passing through a trusted proxy that did not add
// a hop (or one that wrote garbage) is keyed as that proxy, so every client
// behind it shares a bucket. That fails towards limiting too much, never
// towards letting a client pick a fresh key per request.
//
// When an untrusted peer on a loopback, private or link-local address sends
// a forwarding header, it is most likely a proxy the operator forgot to
// list. The header is still ignored; the request is counted in
// admit.clientip.ignored_forwarding (see [Config.MeterProvider]) and one
// warning is logged per Resolver. Client addresses are never logged.
//
// [Resolver.Explain] replays the same walk and records each step for
// operators. [ProxyProtocolListener] takes the client address from the
// PROXY protocol header of an L4 load balancer, which then becomes the peer.
//
// # How to configure for your proxy
//
// Trust exactly the machines that write the header, and nothing that clients
// can reach directly. [ParseTrustedProxies] reads the list from a flag or
// file.
//
// Direct: clients connect to the server itself. Use the zero Config. Any
// X-Forwarded-For they send is ignored.
//
// One reverse proxy (nginx, Caddy, HAProxy in HTTP mode, a cloud load
// balancer that terminates HTTP): list the proxy's addresses, as the server
// sees them.
//
//	TrustedProxies: "10.0.0.5" (or the balancer's subnet, "10.0.0.0/24")
//
// The proxy must append the peer it saw (nginx: proxy_add_x_forwarded_for;
// most balancers do so by default). A proxy that copies the client's header
// through unchanged makes every key spoofable.
//
// A CDN in front of a load balancer: list both the balancer's subnet and the
// CDN's published egress ranges; the walk skips the balancer's hop and the
// CDN's, and keys the address the CDN saw.
//
//	TrustedProxies: "10.0.0.0/24" plus the CDN's ranges
//
// Keep the CDN list current: a CDN range missing from it keys every request
// from there as that CDN node; a range that is no longer the CDN's lets its
// new owner pick keys. Do not trust a CDN's own client-address header
// (CF-Connecting-IP and the like) instead: it is only safe once the origin
// refuses connections from anywhere but the CDN.
//
// A local tunnel (cloudflared, ngrok, a sidecar proxy on the same host): the
// peer is loopback. Trust the loopback addresses, and the tunnel provider's
// ranges if the tunnel forwards its own edge's hop:
//
//	TrustedProxies: "127.0.0.1, ::1"
//
// Only do this when nothing else on the host can connect to the server,
// since every local process becomes a trusted proxy. If you forget it,
// every request is keyed as the tunnel and the resolver warns once.
//
// An L4 (TCP pass-through) balancer sends no HTTP header at all; wrap the
// listener with [ProxyProtocolListener] and enable the PROXY protocol on the
// balancer. The source address it reports is then the peer, and the rest of
// the configuration follows the cases above.
package clientip
