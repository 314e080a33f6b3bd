// Package testpg gives each test a PostgreSQL schema of its own on the test
// server, so tests that share one database never see each other's tables.
//
// The server is the one ADMIT_TEST_POSTGRES names, or [DefaultURL] (the one
// scripts/services starts). A test that cannot reach it fails: it is never
// skipped, so a run without the database cannot pass by accident.
//
//	func TestSomething(t *testing.T) {
//		db := testpg.New(t)     // a fresh schema, dropped when t ends
//		pool := db.Pool(t)      // connections that use it first on search_path
//		...
//	}
//
// Tables created without a schema name land in the test's schema; use
// [DB.Schema] to qualify names explicitly.
package testpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/admitgo/admit/internal/testneed"
)

// EnvURL names the environment variable that points tests at a server.
const EnvURL = "ADMIT_TEST_POSTGRES"

// DefaultURL is the server tests use when EnvURL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// connectTimeout bounds how long New waits for the server before failing the
// test.
const connectTimeout = 5 * time.Second

// URL returns the connection string of the test server.
func URL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// DB is one test's schema on the test server. It is safe for concurrent use.
type DB struct {
	// Schema is the schema's name: lowercase letters, digits and
	// underscores, so it needs no quoting.
	Schema string
	url    string
}

// New creates a fresh schema for t and drops it, with everything in it, when
// t and its subtests have finished (after the pools opened with [DB.Pool]
// have closed). It fails t, telling how to start the server, when the server
// cannot be reached.
func New(t testing.TB) *DB {
	t.Helper()
	db := &DB{Schema: schemaName(t.Name()), url: URL()}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		testneed.Missing(t, "testpg: cannot reach PostgreSQL at %s: %v\nrun scripts/services to start it, or set %s to a server's URL", redact(db.url), err, EnvURL)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+db.Schema); err != nil {
		t.Fatalf("testpg: create schema %s: %v", db.Schema, err)
	}
	t.Cleanup(func() { db.drop(t) })
	return db
}

func (db *DB) drop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		t.Errorf("testpg: drop schema %s: %v", db.Schema, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+db.Schema+" CASCADE"); err != nil {
		t.Errorf("testpg: drop schema %s: %v", db.Schema, err)
	}
}

// Config returns a pool configuration for the test server whose connections
// put the test's schema first on their search_path. Callers may adjust it
// (MaxConns, a tracer) before passing it to [DB.Open].
func (db *DB) Config(t testing.TB) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		t.Fatalf("testpg: parse %s: %v", redact(db.url), err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = db.Schema + ", public"
	return cfg
}

// Open opens a pool with cfg and closes it when t ends.
func (db *DB) Open(t testing.TB, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testpg: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Pool opens a pool on the test's schema with default settings and closes it
// when t ends. Each call returns a separate pool, as separate replicas would
// have.
func (db *DB) Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return db.Open(t, db.Config(t))
}

// schemaName derives a unique, valid, unquoted schema name from a test name,
// so a schema left behind by a killed run says which test made it.
func schemaName(test string) string {
	var b strings.Builder
	b.WriteString("test_")
	for _, r := range strings.ToLower(test) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	var suffix [6]byte
	rand.Read(suffix[:])
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(suffix[:]))
	return b.String()
}

// redact hides a password in a connection URL before it is printed.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
