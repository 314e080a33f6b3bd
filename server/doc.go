// Package server is the admit proxy: a rate-limiting reverse proxy for the
// anonymous routes of an app (signed webhooks, public links and health
// probes) that puts the door of package admit in front of any HTTP
// upstream. The admit command is its [Main]; a Go program embeds the same
// server, from the same flags and configuration file, with [Load] and [New].
//
//	admit --upstream http://127.0.0.1:3000 --route 'webhook=POST /hooks/github' --route 'link=GET /s/{token}'
//	admit --demo
//	admit explain --peer 10.0.0.5:41000 -H 'X-Forwarded-For: 198.51.100.7' --trusted-proxy 10.0.0.0/24 GET /s/abc
//	admit auth --listen 127.0.0.1:9090 --trusted-proxy 127.0.0.1/32 --route 'link=GET /s/{token}'
//
// Main also runs admit rls, Envoy's rate limit service (package rls,
// docs/rls.md), and, when the binary is named ReferenceName, admit rls in
// envoyproxy/ratelimit's reference mode.
//
// Requests matching a route are admitted under their group's budget; every
// other request passes through unlimited, because per-address limits on
// authenticated routes would throttle whole offices behind one NAT. The
// forwarded request carries the client address admit resolved, in
// X-Forwarded-For; a client's own forwarding headers are never passed on as
// trusted.
//
// Health routes over budget are answered from a status cached for one second
// instead of 429, so a flood through a shared load balancer never fails a probe.
// When its context ends (in the command, on SIGTERM or SIGINT), a server
// reports draining on its health routes, stops accepting connections and
// lets in-flight requests finish. A reload ([Server.Reload]; in the
// command, SIGHUP) reads the config file's routes and budgets again:
// groups whose budget is unchanged keep their clients' state, and a
// configuration it refuses leaves the last one serving.
//
// The metrics listener also serves the status page, GET /admit/status,
// and answers GET /admit/groups and GET /admit/groups/{group}/clients/{key},
// which show what each group holds, and DELETE of the latter, which resets
// one client's bucket and needs the bearer token of --admin-token-file.
// It answers only a request whose Host is one of its own names (an IP
// address, localhost, a name under .localhost or one of --admin-host), so
// that a web page cannot reach it through DNS rebinding.
// --access-log writes a JSON line per decided request.
//
// admit auth runs the same server as a decision service for a proxy that
// stays in front (nginx's auth_request, Caddy's forward_auth, Traefik's
// ForwardAuth, HAProxy through a Lua action, Envoy's ext_authz over gRPC
// or HTTP): it answers 200 or the door's refusal instead of forwarding;
// see docs/integrations.md.
//
// Flags, their environment variables and the config file are described by
// admit -h and in docs/operators.md.
package server
