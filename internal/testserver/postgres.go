package testserver

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const pgInstall = "install PostgreSQL 15 or later (Debian: apt-get install postgresql)"

// Postgres creates a fresh PostgreSQL cluster for t (trust authentication,
// superuser postgres, durability off for speed), starts it and returns once it
// accepts connections. The database is "postgres". It stops for good, and its
// data directory is removed, when t ends.
func Postgres(t testing.TB) *Server {
	t.Helper()
	bin := pgBinDir(t)
	cred := pgCredential(t)
	dir := tempDir(t, "postgres")
	data := filepath.Join(dir, "data")
	err := os.Mkdir(data, 0o700)
	if err == nil && cred != nil {
		err = os.Chown(data, int(cred.Uid), int(cred.Gid))
	}
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	port := freePort(t)
	s := &Server{
		Addr: hostPort(port),
		name: "postgres",
		dir:  dir,
		stop: syscall.SIGINT, // fast shutdown: SIGTERM would wait for every client to leave
	}
	s.URL = "postgres://postgres@" + s.Addr + "/postgres?sslmode=disable"

	initdb := command(dir, cred, filepath.Join(bin, "initdb"), "-D", data,
		"-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("testserver: initdb: %v\n%s", err, out)
	}
	s.command = func() *exec.Cmd {
		return command(dir, cred, filepath.Join(bin, "postgres"), "-D", data,
			"-p", strconv.Itoa(port), "-k", data,
			"-c", "listen_addresses=127.0.0.1",
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
			"-c", "shared_buffers=16MB", "-c", "max_connections=50")
	}
	s.ready = func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.URL)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		return conn.Ping(ctx)
	}
	return newServer(t, s)
}

// pgBinDir finds the directory holding initdb and postgres: pg_config's
// answer if it has them, else the highest version under /usr/lib/postgresql
// (Debian's layout, where pg_config may belong to a client-only package).
func pgBinDir(t testing.TB) string {
	t.Helper()
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return false
			}
		}
		return true
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); has(dir) {
			return dir
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestVersion := "", -1
	for _, dir := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		if err == nil && v > bestVersion && has(dir) {
			best, bestVersion = dir, v
		}
	}
	if best == "" {
		missing(t, "PostgreSQL's initdb and postgres", pgInstall)
	}
	return best
}

// pgCredential returns nil unless the test runs as root, which PostgreSQL
// refuses; then it returns the identity of the postgres system user.
func pgCredential(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("testserver: PostgreSQL will not run as root and there is no postgres user to run it as (%v); %s, or run the tests as another user", err, pgInstall)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("testserver: postgres user has uid %q, gid %q; want numbers", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}
