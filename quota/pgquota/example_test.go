package pgquota_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

func ExampleNew() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// The tests' server; a service passes its own database's URL, such as
	// postgres://app@db.internal/app.
	pool, err := pgxpool.New(ctx, testpg.URL())
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// The example's own table, named per process so that two runs at once
	// do not share buckets. A service names one table for all its replicas:
	// the default, or one in a schema of its own ("quota.admit_quota").
	table := fmt.Sprintf("example_quota_%d", os.Getpid())
	// A fixed clock makes the output stable; leave Now nil in production.
	now := time.Date(2030, 1, 1, 12, 30, 0, 0, time.UTC)
	store, err := pgquota.New(pool, pgquota.Config{
		Table:   table,
		Now:     func() time.Time { return now },
		Timeout: 5 * time.Second, // room for a loaded test machine
	})
	if err != nil {
		log.Fatal(err)
	}
	// Create the table if missing. Roles that may not create tables apply
	// store.Schema() by hand instead.
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if _, err := pool.Exec(ctx, "DROP TABLE "+table); err != nil {
			log.Print(err)
		}
	}()
	go store.SweepEvery(ctx, time.Minute, 0)

	// The zero Config trusts no forwarding header: the client is the TCP
	// peer. Behind a reverse proxy, list it in TrustedProxies.
	clients, err := clientip.New(clientip.Config{})
	if err != nil {
		log.Fatal(err)
	}
	signup := quota.Rule{Name: "signup", Limit: 2, Window: time.Hour}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /signup", func(w http.ResponseWriter, r *http.Request) {
		// Count by the client's key, not r.RemoteAddr, whose port is new
		// with every connection; and by its hash, never the address itself.
		d, err := store.Allow(r.Context(), signup, quota.Subject(clients.Key(r).String()))
		if err != nil {
			log.Print(err) // a store failure; d follows the failure policy
		}
		if !d.Allowed {
			w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfter.Seconds()+0.999)))
			http.Error(w, "too many sign-ups", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "welcome")
	})

	// One client, a new connection (a new port) for each sign-up.
	var w *httptest.ResponseRecorder
	for port := 50001; port <= 50003; port++ {
		req := httptest.NewRequest("POST", "/signup", nil)
		req.RemoteAddr = fmt.Sprintf("203.0.113.7:%d", port)
		w = httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		fmt.Printf("port %d: %d %s", port, w.Code, w.Body)
	}
	fmt.Println("Retry-After:", w.Header().Get("Retry-After"))
	// Output:
	// port 50001: 200 welcome
	// port 50002: 200 welcome
	// port 50003: 429 too many sign-ups
	// Retry-After: 1800
}
