package pgquota_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal/app")
	if err != nil {
		log.Fatal(err)
	}
	store, err := pgquota.New(pool, pgquota.Config{
		Table:   "quota.admit_quota", // in a schema of its own
		Timeout: 100 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	// Create the table if missing. Roles that may not create tables apply
	// store.Schema() by hand instead.
	if err := store.Migrate(ctx); err != nil {
		log.Print(err) // the store fails closed until the table exists
	}
	go store.SweepEvery(ctx, time.Minute, 0)

	signup := quota.Rule{Name: "signup", Limit: 5, Window: time.Hour}
	http.HandleFunc("POST /signup", func(w http.ResponseWriter, r *http.Request) {
		// Count by a hash of the address, never the address itself.
		d, err := store.Allow(r.Context(), signup, quota.Subject(r.RemoteAddr))
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
}
