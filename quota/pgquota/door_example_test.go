package pgquota_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota/pgquota"
)

// userKey is where an app's authentication middleware puts the user.
type userKey struct{}

// A door whose group is decided in PostgreSQL, so that several replicas
// enforce one budget, and keyed by a key function: the user an earlier
// middleware authenticated, as go-chi/httprate's WithKeyFuncs. Two doors
// stand for two replicas; the user spends a burst of 2 across both.
func Example_door() {
	ctx := context.Background()
	// The tests' server; a service passes its own database's URL.
	pool, err := pgxpool.New(ctx, testpg.URL())
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	// The example's own table, so that two runs at once do not share
	// buckets; every replica of a service names the same one.
	table := fmt.Sprintf("example_door_%d", os.Getpid())
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC) // leave Now nil in production
	store, err := pgquota.New(pool, pgquota.Config{Table: table, Now: func() time.Time { return now }, Timeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	defer pool.Exec(ctx, "DROP TABLE "+table)

	budgets := map[admit.Group]admit.Budget{
		"api": {
			Rate: 1.0 / 60, Burst: 2, // two requests, then one a minute
			Store: store,
			// The key function's value is hashed before the store sees it;
			// a request without a user is keyed by its client address.
			Key: admit.Key{Func: func(r *http.Request) string {
				user, _ := r.Context().Value(userKey{}).(string)
				return user
			}},
		},
	}
	var replicas []http.Handler
	for range 2 {
		door, err := admit.New(admit.Config{Budgets: budgets})
		if err != nil {
			log.Fatal(err)
		}
		replicas = append(replicas, door.Wrap("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "hello", r.Context().Value(userKey{}))
		}), nil))
	}

	for i, replica := range []int{0, 1, 0} {
		req := httptest.NewRequest("GET", "/api", nil)
		req.RemoteAddr = fmt.Sprintf("203.0.113.%d:5000", i+1) // a new address each time: the user is the key
		req = req.WithContext(context.WithValue(req.Context(), userKey{}, "alice"))
		w := httptest.NewRecorder()
		replicas[replica].ServeHTTP(w, req)
		fmt.Printf("replica %d: %d %s", replica, w.Code, w.Body)
	}
	// Output:
	// replica 0: 200 hello alice
	// replica 1: 200 hello alice
	// replica 0: 429 Too Many Requests: limit "api"
}
