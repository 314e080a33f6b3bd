package server

import (
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// statusInterval is the least time the status page's rates average over:
// shorter, and a page refreshed every few seconds would show the noise of
// single requests.
const statusInterval = 10 * time.Second

// statusRefresh is how often the page reloads itself, in seconds.
const statusRefresh = 5

// statusPage serves GET /admit/status on the metrics listener: one HTML page
// an operator keeps open, as HAProxy's stats page. It reads the counts
// /metrics exports, so the two never disagree, and the door's state for
// what is held now. It shows no client: a client's state tells whether an
// address or a credential was seen, which the admin API gives only with
// the admin token.
type statusPage struct {
	s      *server
	gather prometheus.Gatherer
	now    func() time.Time

	mu         sync.Mutex   // guards the following fields
	prev, last statusSample // the rates are last minus prev
}

// statusSample is the outcome counts by group at one moment.
type statusSample struct {
	at     time.Time
	counts map[groupOutcome]float64
}

type groupOutcome struct{ group, outcome string }

// statusView is what the template renders.
type statusView struct {
	Version, Store, Reload string
	Now                    string
	Refresh                int
	Over                   string // what the rates average over; "" before a second sample
	Groups                 []groupView
	// Unused names the groups no route uses, such as a built-in group the
	// routes leave out, which decide nothing and get no section.
	Unused string
	Token  bool // an admin token is set: reading a client needs it
}

type groupView struct {
	Name, Budget, Routes string
	Inflight, Cap        int
	PerClient            int
	Waiting, MaxWaiting  int // a group with a queue; MaxWaiting 0: none
	Clients, MaxClients  int
	Evictions            float64
	Store                string
	Failing              bool // its shared store failed
	Outcomes             []outcomeView
}

type outcomeView struct {
	Name      string
	Total     float64
	PerSecond string
}

func (p *statusPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	counts, evictions, err := p.read()
	if err != nil {
		http.Error(w, "admit: reading the metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	view := p.view(counts, evictions)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page is for the operator's own browser tab; framing it elsewhere
	// buys nothing and invites clickjacking of the links it holds.
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := statusTemplate.Execute(w, view); err != nil {
		p.s.log.Warn("admit: status page", "err", err.Error())
	}
}

// read gathers the outcome and eviction counts by group, and takes a new
// sample for the rates when the last is statusInterval old.
func (p *statusPage) read() (map[groupOutcome]float64, map[string]float64, error) {
	families, err := p.gather.Gather()
	if err != nil {
		return nil, nil, err
	}
	counts, evictions := map[groupOutcome]float64{}, map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "admit_door_requests_total":
				counts[groupOutcome{labels["admit_door_group"], labels["admit_door_outcome"]}] += m.GetCounter().GetValue()
			case "admit_door_evictions_total":
				evictions[labels["admit_door_group"]] += m.GetCounter().GetValue()
			}
		}
	}
	now := p.now()
	p.mu.Lock()
	if p.last.at.IsZero() || now.Sub(p.last.at) >= statusInterval {
		p.prev, p.last = p.last, statusSample{at: now, counts: counts}
	}
	p.mu.Unlock()
	return counts, evictions, nil
}

// view builds the page from the counts and the door's state.
func (p *statusPage) view(counts map[groupOutcome]float64, evictions map[string]float64) statusView {
	g := p.s.gen.Load()
	p.mu.Lock()
	prev, last := p.prev, p.last
	p.mu.Unlock()
	v := statusView{Version: config.Version(), Store: string(g.cfg.Store.Kind), Reload: p.reloadText(),
		Now: p.now().UTC().Format(time.RFC3339), Refresh: statusRefresh, Token: g.cfg.AdminToken != ""}
	span := last.at.Sub(prev.at).Seconds()
	if !prev.at.IsZero() && span > 0 {
		v.Over = config.DurationText(last.at.Sub(prev.at).Round(time.Second))
	}
	routes := g.cfg.ServedRoutes()
	for _, name := range g.door.Groups() {
		b, _ := g.door.Budget(name)
		st, _ := g.door.GroupState(name)
		gv := groupView{Name: string(name), Budget: amountText(b) + ", key " + config.KeyText(b.Key) + config.ExemptText(b) + config.DelayText(b),
			Inflight: st.Inflight, Cap: b.Inflight, PerClient: b.PerClient, Waiting: st.Waiting, MaxWaiting: b.MaxWaiting,
			Clients: st.Clients, MaxClients: b.MaxClients, Evictions: evictions[string(name)],
			Store: storeState(g.cfg.Store.Kind, st), Failing: st.OnFallback}
		if g.cfg.Auth {
			gv.Cap = 0 // a decision holds no slot past its answer: no row
		}
		gv.Routes = groupRoutes(routes, name)
		if gv.Routes == "" {
			if v.Unused != "" {
				v.Unused += ", "
			}
			v.Unused += string(name)
			continue
		}
		for _, o := range outcomeNames(counts, name) {
			ov := outcomeView{Name: o, Total: counts[groupOutcome{string(name), o}], PerSecond: "-"}
			if v.Over != "" {
				k := groupOutcome{string(name), o}
				delta := last.counts[k] - prev.counts[k]
				if delta < 0 { // a reload started the group's counts afresh
					delta = last.counts[k]
				}
				ov.PerSecond = fmt.Sprintf("%.1f", delta/span)
			}
			gv.Outcomes = append(gv.Outcomes, ov)
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

// outcomeNames returns the outcomes group has counted, in the metrics'
// order of names.
func outcomeNames(counts map[groupOutcome]float64, group admit.Group) []string {
	var names []string
	for k, n := range counts {
		if k.group == string(group) && n > 0 {
			names = append(names, k.outcome)
		}
	}
	sort.Strings(names)
	return names
}

// groupRoutes lists the patterns of the routes group limits.
func groupRoutes(routes []config.Route, group admit.Group) string {
	s := ""
	for _, rt := range routes {
		for _, g := range rt.Groups {
			if g == group {
				if s != "" {
					s += ", "
				}
				s += rt.Pattern
			}
		}
	}
	return s
}

// storeState says who decides a group's tokens now.
func storeState(kind storeurl.Kind, st admit.GroupState) string {
	switch {
	case !st.Shared:
		return "memory"
	case st.OnFallback:
		return string(kind) + ": failing; its local fallback decides"
	}
	return string(kind)
}

// reloadText says how the last reload ended.
func (p *statusPage) reloadText() string {
	last := p.s.reloads.last.Load()
	switch {
	case last == nil:
		return "none since start"
	case last.err != nil:
		return last.at.UTC().Format(time.RFC3339) + ": refused, serving the configuration before: " + last.err.Error()
	}
	return last.at.UTC().Format(time.RFC3339) + ": applied"
}

var statusTemplate = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>admit status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f2f2f2}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.warn{color:#a00;font-weight:bold}
</style></head><body>
<h1>admit</h1>
<p>{{.Version}} · store <b id="store">{{.Store}}</b> · last reload <span id="reload">{{.Reload}}</span> · {{.Now}} · refreshes every {{.Refresh}} s</p>
{{range .Groups}}<h2 id="group-{{.Name}}">{{.Name}}</h2>
<table class="group">
<tr><th>budget</th><td>{{.Budget}}</td></tr>
<tr><th>routes</th><td>{{.Routes}}</td></tr>
{{if .Cap}}<tr><th>in flight</th><td class="n inflight">{{.Inflight}} of {{.Cap}} (per client {{.PerClient}})</td></tr>
{{end}}{{if .MaxWaiting}}<tr><th>waiting for a token</th><td class="n waiting">{{.Waiting}} of {{.MaxWaiting}}</td></tr>
{{end}}<tr><th>client table</th><td class="n clients">{{.Clients}} of {{.MaxClients}}, {{.Evictions}} evicted</td></tr>
<tr><th>decided by</th><td class="storeurl.Store{{if .Failing}} warn{{end}}">{{.Store}}</td></tr>
</table>
<table class="outcomes">
<tr><th>outcome</th><th>requests</th><th>per second{{if $.Over}} over {{$.Over}}{{end}}</th></tr>
{{range .Outcomes}}<tr class="outcome-{{.Name}}"><td>{{.Name}}</td><td class="n total">{{.Total}}</td><td class="n rate">{{.PerSecond}}</td></tr>
{{else}}<tr><td colspan="3">no request yet</td></tr>
{{end}}</table>
{{end}}
{{if .Unused}}<p id="unused">No route uses {{.Unused}}.</p>
{{end}}<p>Counts are those of <a href="/metrics">/metrics</a>. A client's state: <code>GET /admit/groups/GROUP/clients/KEY</code>, {{if .Token}}with the admin token of <code>--admin-token-file</code>, from anywhere{{else}}without <code>--admin-token-file</code>, only from this host (a loopback peer){{end}}.</p>
</body></html>
`))
