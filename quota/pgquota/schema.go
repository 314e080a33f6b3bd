package pgquota

import (
	"context"
	_ "embed"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// schemaSQL creates the default table; see schema.sql.
//
//go:embed schema.sql
var schemaSQL string

// maxTableName leaves room in PostgreSQL's 63-byte identifiers for the index
// name derived from the table's.
const maxTableName = 63 - len("_expires_at_idx")

// table is a validated table name.
type table struct {
	name   string // as configured
	quoted string // schema-qualified if configured so, each part quoted
	index  string // the sweep index's name, quoted, unqualified
}

// parseTable validates name: one or two dot-separated parts (schema and
// table), each a lowercase SQL identifier. Restricting names to what needs no
// quoting keeps the SQL by hand and the SQL Migrate runs identical, and no
// name can smuggle SQL in.
func parseTable(name string) (table, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return table{}, fmt.Errorf("%w: Table %q: want table or schema.table", ErrConfig, name)
	}
	for i, p := range parts {
		limit := 63
		if i == len(parts)-1 {
			limit = maxTableName
		}
		if err := checkIdent(p, limit); err != nil {
			return table{}, fmt.Errorf("%w: Table %q: %v", ErrConfig, name, err)
		}
	}
	last := parts[len(parts)-1]
	return table{
		name:   name,
		quoted: pgx.Identifier(parts).Sanitize(),
		index:  pgx.Identifier{last + "_expires_at_idx"}.Sanitize(),
	}, nil
}

func checkIdent(s string, limit int) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > limit {
		return fmt.Errorf("%q is %d bytes, want at most %d", s, len(s), limit)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return fmt.Errorf("%q: want lowercase letters, digits and underscores, not starting with a digit", s)
		}
	}
	return nil
}

// Schema returns the SQL that creates the store's table and index, as
// [Store.Migrate] runs it. Operators whose application role may not create
// tables run it once with a role that may, then grant the application role
// SELECT, INSERT, UPDATE and DELETE on the table.
func (s *Store) Schema() string { return s.table.schema() }

// Schema returns the SQL that creates the table a store with Config.Table
// set to table would use (empty: DefaultTable), without a connection: for
// an operator who creates it by hand. The error names a table name the
// store would refuse.
func Schema(table string) (string, error) {
	if table == "" {
		table = DefaultTable
	}
	t, err := parseTable(table)
	if err != nil {
		return "", err
	}
	return t.schema(), nil
}

func (t table) schema() string {
	// The file's opening comment is about the file; what is printed for a
	// table gets one about the table, so the name is never replaced in
	// prose.
	body := schemaSQL[strings.Index(schemaSQL, "\nCREATE ")+1:]
	header := fmt.Sprintf("-- The table and index of the admit PostgreSQL quota store, for the table\n"+
		"-- %s. Safe to run again: each statement creates only what is missing.\n", t.name)
	return header + strings.NewReplacer(
		"admit_quota_expires_at_idx", t.index,
		"admit_quota", t.quoted,
	).Replace(body)
}

// Migrate creates the store's table and index if they are missing. It is safe
// to run again and from several replicas at once. A schema-qualified table's
// schema must exist.
func (s *Store) Migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgquota: migrate %s: %w", s.table.name, err)
	}
	defer tx.Rollback(ctx)
	// CREATE ... IF NOT EXISTS is not safe against a concurrent CREATE of
	// the same name; replicas starting together take turns.
	h := fnv.New64a()
	h.Write([]byte("admit pgquota migrate " + s.table.quoted))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return fmt.Errorf("pgquota: migrate %s: %w", s.table.name, err)
	}
	if _, err := tx.Exec(ctx, s.Schema()); err != nil {
		return fmt.Errorf("pgquota: migrate %s: %w", s.table.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgquota: migrate %s: %w", s.table.name, err)
	}
	return nil
}
