package ops_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/server/internal/ops"
)

// TestServerGuardsAndBounds: an operations server refuses a Host that is
// not one of its names before its mux runs, counts the refusal under its
// listener's name, answers its own names, and bounds every phase.
func TestServerGuardsAndBounds(t *testing.T) {
	tel, err := ops.NewTelemetry()
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	reached := 0
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++; io.WriteString(w, "ok") })
	srv := tel.Server("probe", []string{"ops.internal"}, mux)
	for _, tc := range []struct {
		host string
		want int
	}{{"rebind.attacker.example", 421}, {"ops.internal", 200}, {"127.0.0.1:9464", 200}, {"localhost", 200}} {
		req := httptest.NewRequest("GET", "/anything", nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		srv.Handler.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("Host %q: got %d, want %d", tc.host, rec.Code, tc.want)
		}
	}
	if reached != 3 {
		t.Errorf("the mux ran %d times, want 3: never for the refused Host", reached)
	}
	rec := httptest.NewRecorder()
	tel.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `admit_server_misdirected_total{admit_server_listener="probe",`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, rec.Body.String())
	}
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("timeouts: header %v, read %v, write %v, idle %v, header bytes %d; want all set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if srv.ReadHeaderTimeout > 5*time.Second || srv.IdleTimeout >= time.Minute {
		t.Errorf("timeouts: header %v, idle %v; want at most 5s and under a minute, so that a silent client gives its slot back soon", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
}
