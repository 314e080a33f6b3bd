package storeurl

import (
	"crypto/tls"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testcert"
)

// tlsOf returns the TLS configuration of the client a Redis URL builds.
func tlsOf(t *testing.T, raw string) *tls.Config {
	t.Helper()
	o, err := parseRedis(raw)
	if err == nil {
		err = o.loadTLS()
	}
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	switch {
	case o.cluster != nil:
		return o.cluster.TLSConfig
	case o.failover != nil:
		return o.failover.TLSConfig
	}
	return o.single.TLSConfig
}

// TestRedisTLSFiles reads the client certificate, its key and the
// certificate authority of a rediss:// URL (sslcert, sslkey, sslrootcert,
// PostgreSQL's names) in every topology, and refuses them where they
// could not be used as meant: on a URL without TLS, one without the other,
// twice, or naming a file that is missing or holds no certificate. Each
// refusal names the parameter.
func TestRedisTLSFiles(t *testing.T) {
	ca := testcert.NewCA(t, "storeurl test CA")
	cert, key := ca.ClientFiles(t, testcert.Leaf{Serial: 2})
	other, _ := testcert.NewCA(t, "another CA").ClientFiles(t, testcert.Leaf{Serial: 3})
	q := func(s string) string { return url.QueryEscape(s) }
	files := "sslcert=" + q(cert) + "&sslkey=" + q(key) + "&sslrootcert=" + q(ca.File)
	for _, raw := range []string{
		"rediss://cache:6380/0?" + files,
		"rediss+cluster://a:7000?addr=b:7001&" + files,
		"rediss+sentinel://s1:26379?master_name=m&" + files,
		"rediss://cache:6380?SSLCERT=" + q(cert) + "&ssl%6Bey=" + q(key) + "&SslRootCert=" + q(ca.File),
		"rediss://cache:6380?sslcert=" + cert + "&sslkey=" + key + "&sslrootcert=" + ca.File, // paths as written
	} {
		c := tlsOf(t, raw)
		if c == nil || c.RootCAs == nil || len(c.Certificates) != 1 || c.InsecureSkipVerify {
			t.Errorf("%s: got %+v, want the CA as the only roots and one client certificate", raw, c)
		}
	}
	// The CA alone: the server is verified, and no certificate is offered.
	if c := tlsOf(t, "rediss://cache:6380?sslrootcert="+q(ca.File)); c.RootCAs == nil || len(c.Certificates) != 0 {
		t.Errorf("sslrootcert alone: got %+v, want roots and no certificate", c)
	}
	// Without the parameters, the system's roots, as before.
	if c := tlsOf(t, "rediss://cache:6380"); c == nil || c.RootCAs != nil || len(c.Certificates) != 0 {
		t.Errorf("rediss:// alone: got %+v, want the system's roots", c)
	}

	noCert := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(noCert, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tt := range []struct{ url, err string }{
		{"redis://cache:6379?sslrootcert=" + q(ca.File), "sslrootcert is a rediss:// URL's parameter: a redis:// URL connects without TLS"},
		{"redis+cluster://a:7000?sslcert=" + q(cert) + "&sslkey=" + q(key), "sslcert is a rediss:// URL's parameter: a redis+cluster:// URL connects without TLS"},
		{"redis+sentinel://s:26379?master_name=m&SSLKEY=" + q(key) + "&sslcert=" + q(cert), "a redis+sentinel:// URL connects without TLS"},
		{"rediss://cache:6380?sslcert=" + q(cert), "sslcert is given without sslkey: give both or neither"},
		{"rediss://cache:6380?sslkey=" + q(key), "sslkey is given without sslcert: give both or neither"},
		{"rediss://cache:6380?sslrootcert=" + q(ca.File) + "&sslrootcert=" + q(ca.File), "sslrootcert is given twice"},
		{"rediss://cache:6380?sslrootcert=", "sslrootcert is empty: want a file"},
		{"rediss://cache:6380?sslrootcert=" + q(missing), "sslrootcert: open " + missing},
		{"rediss://cache:6380?sslrootcert=" + q(noCert), "sslrootcert: " + noCert + ": no PEM certificate in the file"},
		{"rediss://cache:6380?sslcert=" + q(missing) + "&sslkey=" + q(key), "sslcert: open " + missing},
		{"rediss://cache:6380?sslcert=" + q(cert) + "&sslkey=" + q(missing), "sslkey: open " + missing},
		{"rediss://cache:6380?sslcert=" + q(other) + "&sslkey=" + q(key), "sslcert and sslkey: tls: private key does not match public key"},
		{"rediss://cache:6380?sslcert=" + q(cert) + "&sslkey=" + q(noCert), "sslcert and sslkey: tls:"},
		{"rediss://cache:6380?skip_verify=true&sslrootcert=" + q(ca.File), "skip_verify=true turns off the verification of the server that sslrootcert is for"},
	} {
		s, err := Parse(tt.url)
		if err == nil {
			err = s.Check()
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: Check: got %v, want %q", tt.url, err, tt.err)
		}
		if _, err := RedisClient(tt.url); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: RedisClient: got %v, want %q", tt.url, err, tt.err)
		}
	}
	// PostgreSQL reads its own sslcert, sslkey and sslrootcert (pgx's
	// parser, as libpq's): none of admit's Redis rules applies to them.
	if err := (Store{Postgres, "postgres://admit@db/admit?sslmode=verify-full&sslrootcert=" + q(ca.File)}).Check(); err != nil {
		t.Errorf("postgres with sslrootcert: %v", err)
	}
}

// TestRedisTLSFilesRedacted: file paths are not secrets, and a URL naming
// them still has its password masked, in Redact and in errors.
func TestRedisTLSFilesRedacted(t *testing.T) {
	raw := "rediss+sentinel://:s3cret@s1:26379?master_name=m&sslcert=%2Fetc%2Fadmit%2Fc.pem&sslkey=%2Fetc%2Fadmit%2Fk.pem&password=s3cret"
	if got, want := Redact(raw), "rediss+sentinel://:xxxxx@s1:26379?master_name=m&sslcert=%2Fetc%2Fadmit%2Fc.pem&sslkey=%2Fetc%2Fadmit%2Fk.pem&password=xxxxx"; got != want {
		t.Errorf("Redact: got %q, want %q", got, want)
	}
	if _, err := RedisClient(raw); err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "sslcert: open /etc/admit/c.pem") {
		t.Errorf("RedisClient: got %v, want the missing file named and no password", err)
	}
}
