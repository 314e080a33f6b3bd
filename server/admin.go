package server

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strings"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// adminRoutes adds the inspect and reset API to the metrics listener's mux:
// it exists there only, never on the proxy's listener. The list of groups
// is open, as /metrics is; reading a client tells whether an address or a
// key's value was seen, so it needs the bearer token of --admin-token-file,
// or without one a peer on this host; a reset always needs the token.
func (s *server) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /admit/groups", s.adminGroups)
	mux.HandleFunc("GET /admit/groups/{group}/clients/{key...}", s.adminClient)
	mux.HandleFunc("DELETE /admit/groups/{group}/clients/{key...}", s.adminReset)
}

// groupsJSON is the answer to GET /admit/groups.
type groupsJSON struct {
	Store  storeurl.Kind `json:"store"`
	Groups []groupJSON   `json:"groups"`
}

// groupJSON is one group: its budget in the config file's words, the
// routes it limits, and what it holds now.
type groupJSON struct {
	Group    string            `json:"group"`
	Budget   config.BudgetJSON `json:"budget"`
	Routes   []routeJSON       `json:"routes"`
	Clients  int               `json:"clients"`
	Inflight int               `json:"inflight"`
}

// routeJSON is a route as the config file writes it.
type routeJSON struct {
	Group   []admit.Group `json:"group"`
	Pattern string        `json:"pattern"`
	Cost    int           `json:"cost"`
}

// clientJSON is the answer about one client.
type clientJSON struct {
	Group string `json:"group"`
	Key   string `json:"key"` // as the door counts it: a prefix, a hash, or "global"
	// Bucket is where its tokens are: "entry" (its own table entry),
	// "shared" (the group's shared bucket, the table being full), "new"
	// (no entry yet: its next request gets a full one) or "store".
	Bucket   string   `json:"bucket"`
	Tokens   *float64 `json:"tokens,omitempty"` // none for "store"
	Burst    int      `json:"burst,omitempty"`
	Limit    int      `json:"limit,omitempty"`
	Held     int      `json:"held"`
	Inflight int      `json:"inflight"`
	Reset    *bool    `json:"reset,omitempty"` // answers to DELETE only
	Note     string   `json:"note,omitempty"`
}

func (s *server) adminGroups(w http.ResponseWriter, r *http.Request) {
	g := s.gen.Load()
	out := groupsJSON{Store: g.cfg.Store.Kind, Groups: []groupJSON{}}
	routes := g.cfg.ServedRoutes()
	for _, name := range g.door.Groups() {
		st, _ := g.door.GroupState(name)
		gj := groupJSON{Group: string(name), Budget: g.cfg.View(g.door, name).JSON(), Routes: []routeJSON{},
			Clients: st.Clients, Inflight: st.Inflight}
		for _, rt := range routes {
			for _, rg := range rt.Groups {
				if rg == name {
					gj.Routes = append(gj.Routes, routeJSON{Group: rt.Groups, Pattern: rt.Pattern, Cost: rt.Spend()})
				}
			}
		}
		out.Groups = append(out.Groups, gj)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) adminClient(w http.ResponseWriter, r *http.Request) {
	g := s.gen.Load()
	if !mayRead(w, r, g.cfg.AdminToken) {
		return
	}
	group, key, ok := adminKey(w, r, g.door)
	if !ok {
		return
	}
	st, err := g.door.Client(group, key)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, clientWords(g.door, group, st))
}

func (s *server) adminReset(w http.ResponseWriter, r *http.Request) {
	g := s.gen.Load()
	if !authorized(w, r, g.cfg.AdminToken) {
		return
	}
	group, key, ok := adminKey(w, r, g.door)
	if !ok {
		return
	}
	st, err := g.door.Client(group, key)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if st.Store {
		writeError(w, http.StatusConflict, fmt.Sprintf("admit: group %q decides by the shared store, which holds its tokens: admit cannot reset them", group))
		return
	}
	if st, err = g.door.ResetClient(group, key); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out := clientWords(g.door, group, st)
	out.Reset = &st.Entry
	s.log.Info("admit: client reset", config.FieldGroup, group, "reset", st.Entry)
	writeJSON(w, http.StatusOK, out)
}

// adminKey reads the group and key of a client path, answering 404 for a
// group the door does not know and 400 for a key it cannot hold.
func adminKey(w http.ResponseWriter, r *http.Request, door *admit.Door) (admit.Group, string, bool) {
	group, key := admit.Group(r.PathValue(config.FieldGroup)), r.PathValue(config.FieldKey)
	b, ok := door.Budget(group)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("admit: no group %q (known: %v)", group, door.Groups()))
		return "", "", false
	}
	if err := checkPrefix(group, b.Key, key); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", "", false
	}
	return group, key, true
}

// checkPrefix refuses a prefix wider than the keys of a group keyed by the
// client, which the door would never hold: its keys are /32 and /64, or the
// group's ipv4_prefix and ipv6_prefix. The door never narrows an IPv6 key
// below /64, so a longer ipv6_prefix (which a Budget may hold, though the
// config file refuses it) still keys by /64.
func checkPrefix(group admit.Group, k admit.Key, key string) error {
	if k.Header != "" || k.PathValue != "" || k.Global || !strings.Contains(key, "/") {
		return nil
	}
	p, err := netip.ParsePrefix(key)
	if err != nil {
		return nil // the door names it
	}
	bits, width := p.Bits(), min(cmp.Or(k.IPv6Prefix, config.ClientIPv6Bits), config.ClientIPv6Bits)
	if p.Addr().Is4In6() {
		bits -= 96
	}
	if p.Addr().Unmap().Is4() {
		width = cmp.Or(k.IPv4Prefix, 32)
	}
	if bits < width {
		return fmt.Errorf("admit: group %q keys clients by /%d: prefix %q is wider; give an address or a prefix of /%d or longer", group, width, key, width)
	}
	return nil
}

// authorized reports whether r carries the admin token, answering 403 when
// no token is configured and 401 when r lacks it. The comparison takes the
// same time whatever the tokens.
func authorized(w http.ResponseWriter, r *http.Request, token string) bool {
	if token == "" {
		writeError(w, http.StatusForbidden, "admit: writes are off: start admit with --admin-token-file to allow them")
		return false
	}
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	want, have := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(strings.TrimSpace(got)))
	if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(want[:], have[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="admit"`)
		writeError(w, http.StatusUnauthorized, "admit: this needs Authorization: Bearer and the token of --admin-token-file")
		return false
	}
	return true
}

// mayRead reports whether r may read a client's state, answering 401 or
// 403 when not. With an admin token, r needs it, from anywhere. Without
// one, only a peer on this host may read, as Envoy's admin interface and
// HAProxy's stats socket are meant to be reached: the metrics listener may
// listen on every interface for Prometheus, which needs no client reads.
func mayRead(w http.ResponseWriter, r *http.Request, token string) bool {
	if token != "" {
		return authorized(w, r, token)
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil && ap.Addr().Unmap().IsLoopback() {
		return true
	}
	writeError(w, http.StatusForbidden, "admit: reading a client from another host needs the admin token: start admit with --admin-token-file and send Authorization: Bearer and the token")
	return false
}

// clientWords writes a client's state for the admin API.
func clientWords(door *admit.Door, group admit.Group, st admit.ClientState) clientJSON {
	b, _ := door.Budget(group)
	out := clientJSON{Group: string(group), Key: st.Key, Held: st.Held, Inflight: st.Inflight}
	if b.Algorithm == admit.FixedWindow {
		out.Limit = b.Limit
	} else {
		out.Burst = b.Burst
	}
	tokens := math.Floor(st.Tokens*100) / 100
	switch {
	case st.Store:
		out.Bucket, out.Burst, out.Limit = "store", 0, 0
		out.Note = "the tokens live in the shared store; admit knows only this process's requests in flight"
		return out
	case st.Entry:
		out.Bucket = "entry"
	case st.Shared:
		out.Bucket = "shared"
		out.Note = "no entry of its own while the table is full: it spends from the group's shared bucket, which a reset leaves alone"
	default:
		out.Bucket = "new"
		out.Note = "no entry: its next request gets one with a full bucket"
	}
	out.Tokens = &tokens
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
