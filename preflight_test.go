package admit

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPreflightKeyedByClient: a CORS preflight, which a browser sends
// without credentials, is keyed by its client under a group that refuses a
// request missing its header, and held to the client's budget; an OPTIONS
// lacking either preflight header is refused as missing its key.
func TestPreflightKeyedByClient(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"required": {Rate: 1e-9, Burst: 2, Key: Key{Header: "Authorization", RejectMissing: true, Authenticated: true}},
	}})
	h := route(t, d, Route{Groups: []Group{"required"}}, status(http.StatusOK))
	req := func(headers ...string) func() *http.Request {
		return func() *http.Request {
			r := httptest.NewRequest(http.MethodOptions, "/api/x", nil)
			r.RemoteAddr = "192.0.2.1:1"
			for i := 0; i < len(headers); i += 2 {
				r.Header.Set(headers[i], headers[i+1])
			}
			return r
		}
	}
	preflight := req("Origin", "https://app.example", "Access-Control-Request-Method", "PUT")
	if got := send(h, 4, preflight); got != 2 {
		t.Errorf("preflights from one client: %d admitted, want its burst, 2", got)
	}
	for _, r := range []func() *http.Request{req("Origin", "https://app.example"), req("Access-Control-Request-Method", "PUT"), req()} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r())
		if w.Code != http.StatusUnauthorized {
			t.Errorf("OPTIONS with %v: got %d, want 401", r().Header, w.Code)
		}
	}
}
