package server

import (
	"fmt"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// unreadable are requests a front takes in and asks admit about, but which
// admit cannot read: Go's HTTP server answers a plain 400 before admit's
// handler runs for a Host it cannot parse or a field value with a control
// byte, and a request without Host names no host to judge. None carries a
// decision, so a front that reads such an answer as "admit did not answer"
// would fail open on it.
func unreadable() map[string]string {
	reqs := map[string]string{
		"HTTP/1.0 without Host": "GET /l/x HTTP/1.0\r\n\r\n",
	}
	for _, c := range []string{"{", `"`, "|", "^", "`", `\`} {
		reqs["Host with "+c] = "GET /l/x HTTP/1.1\r\nHost: a.example" + c + "\r\nConnection: close\r\n\r\n"
	}
	for _, b := range []byte{0x01, 0x7f} {
		reqs[fmt.Sprintf("a field with %#02x", b)] = "GET /l/x HTTP/1.1\r\nHost: a.example\r\nX-Note: a" + string(b) + "b\r\nConnection: close\r\n\r\n"
	}
	return reqs
}

// TestAuthFrontUnreadableStaysRefused: with the client's budget spent, no
// request admit cannot read reaches the app, through each front as
// documented (failing closed) and, for nginx and HAProxy, edited as their
// comments say to fail open: they fail open only when admit could not be
// reached, never on an answer that carries no decision.
func TestAuthFrontUnreadableStaysRefused(t *testing.T) {
	for _, kind := range testrouter.AuthKinds() {
		docs := map[string]string{"closed": testrouter.DocumentedAuth(t, kind)}
		if open, ok := testrouter.FailOpen(t, kind); ok {
			docs["open"] = open
		}
		for mode, doc := range docs {
			t.Run(string(kind)+"/"+mode, func(t *testing.T) {
				a := startAskingDoc(t, kind, doc, linkConfig)
				c := clientAt(t, "127.0.0.9")
				for range 3 {
					a.send(t, c, "GET", "/l/x")
				}
				for name, req := range unreadable() {
					before := a.rec.count()
					got := rawFrom(t, "127.0.0.9", a.front.Addr, req)
					t.Logf("%s: %d %s", name, got.status, got.header.Get("Admit-Status"))
					if a.rec.count() != before {
						t.Errorf("%s: reached the app with the budget spent (%d)", name, got.status)
					}
				}
			})
		}
	}
}
