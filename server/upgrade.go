package server

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// upgrades is the allowlist of protocols a request may switch to
// (--upgrade): lower-case protocol names; empty allows none.
//
// An upgraded connection carries whatever the two ends speak past the door,
// which charged it as one request. For WebSocket that is the app's own
// messages; for h2c it is further HTTP requests, each of which reaches the
// app unlimited. So a request's Upgrade goes to the upstream only when it
// names an allowed protocol, and then only that protocol: anything else
// the client offered, in any case, list position or line, is removed, and
// the request is forwarded as a plain one, as nginx forwards a request it
// has no upgrade configured for. A plain answer is what a client that
// offers an upgrade must expect anyway (RFC 9110 section 7.8).
type upgrades []string

// protocol returns the protocol admit asks the upstream to switch to for a
// request with header h: the first protocol of its Upgrade lines that the
// allowlist names, spelled as the allowlist spells it, when its Connection
// names upgrade; "" otherwise. A protocol with a version (websocket/13) is
// not the protocol without one.
func (u upgrades) protocol(h http.Header) string {
	if len(u) == 0 || !httpguts.HeaderValuesContainsToken(h["Connection"], "upgrade") {
		return ""
	}
	for _, line := range h["Upgrade"] {
		for p := range strings.SplitSeq(line, ",") {
			p = textproto.TrimString(p)
			for _, name := range u {
				if strings.EqualFold(p, name) {
					return name
				}
			}
		}
	}
	return ""
}

// setUpgrade leaves in out, the header of the request for the upstream,
// the upgrade of protocol and nothing else: Connection and Upgrade are
// hop-by-hop, so the client's never go on, and httputil.ReverseProxy's
// copy of the client's first Upgrade line is replaced.
func setUpgrade(out http.Header, protocol string) {
	delete(out, "Upgrade")
	delete(out, "Connection")
	if protocol != "" {
		out["Connection"] = []string{"Upgrade"}
		out["Upgrade"] = []string{protocol}
	}
}

// errSwitch is the cause when admit refuses the upstream's 101: the client
// gets a 502 and its connection is closed, as is the upstream's.
var errSwitch = errors.New("refused the upstream's 101 Switching Protocols")

// websocketGUID is the GUID of RFC 6455 section 1.3, which
// Sec-WebSocket-Accept hashes with the request's key.
const websocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// checkSwitch holds a 101 to the request admit sent: it must switch to the
// one protocol that request asked for, and, for WebSocket, answer the
// request's Sec-WebSocket-Key with its Sec-WebSocket-Accept (RFC 6455
// section 4.2.2). An upstream that switches otherwise is not talking
// WebSocket with this client, and whatever it talks must not be relayed.
// Other answers pass.
func checkSwitch(res *http.Response) error {
	if res.StatusCode != http.StatusSwitchingProtocols {
		return nil
	}
	if res.Request == nil {
		return fmt.Errorf("%w: no request to hold it to", errSwitch)
	}
	asked, got := res.Request.Header["Upgrade"], res.Header["Upgrade"]
	if len(asked) != 1 || !httpguts.HeaderValuesContainsToken(res.Request.Header["Connection"], "upgrade") {
		return fmt.Errorf("%w: admit asked for no upgrade", errSwitch)
	}
	if len(got) != 1 || !strings.EqualFold(textproto.TrimString(got[0]), asked[0]) {
		return fmt.Errorf("%w: it switches to %q, and admit asked for %q", errSwitch, got, asked[0])
	}
	if asked[0] == "websocket" {
		key, accept := res.Request.Header["Sec-Websocket-Key"], res.Header["Sec-Websocket-Accept"]
		if len(key) != 1 || len(accept) != 1 || accept[0] != websocketAccept(key[0]) {
			return fmt.Errorf("%w: its Sec-WebSocket-Accept does not answer the request's Sec-WebSocket-Key", errSwitch)
		}
	}
	return nil
}

// websocketAccept returns the Sec-WebSocket-Accept that answers key.
func websocketAccept(key string) string {
	sum := sha1.Sum([]byte(key + websocketGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}
