package storeurl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"

	"github.com/admitgo/admit/internal/pemfile"
)

// The parameters of a rediss:// URL that name its TLS files, spelled as
// PostgreSQL's (libpq's and pgx's), which a postgres:// store URL takes
// too: the client certificate, its key, and the certificate authority the
// server's certificate must chain to. admit reads them itself, since
// go-redis's URL parser has none.
const (
	sslCertParam     = "sslcert"
	sslKeyParam      = "sslkey"
	sslRootCertParam = "sslrootcert"
)

// tlsFiles are the files a rediss:// URL names; "" where it names none.
type tlsFiles struct {
	cert, key, rootCert string
}

// readTLSFiles reads the TLS parameters cutOwn found in a URL of scheme:
// each at most once, not empty, the certificate with its key, and only on
// a rediss scheme, since a URL without TLS would send the certificate
// nowhere and verify no server.
func readTLSFiles(scheme string, tlsOn bool, own map[string][]string) (tlsFiles, error) {
	var f tlsFiles
	for _, p := range []struct {
		name string
		to   *string
	}{{sslCertParam, &f.cert}, {sslKeyParam, &f.key}, {sslRootCertParam, &f.rootCert}} {
		switch vs := own[p.name]; {
		case len(vs) == 0:
			continue
		case !tlsOn:
			return f, fmt.Errorf("%s is a rediss:// URL's parameter: a %s:// URL connects without TLS", p.name, scheme)
		case len(vs) > 1:
			return f, fmt.Errorf("%s is given twice", p.name)
		case vs[0] == "":
			return f, fmt.Errorf("%s is empty: want a file", p.name)
		default:
			*p.to = vs[0]
		}
	}
	switch {
	case f.cert != "" && f.key == "":
		return f, errors.New("sslcert is given without sslkey: give both or neither")
	case f.key != "" && f.cert == "":
		return f, errors.New("sslkey is given without sslcert: give both or neither")
	}
	return f, nil
}

// apply loads the files into c, the TLS configuration go-redis made of a
// rediss:// URL: the certificate authority replaces the system's roots,
// as PostgreSQL's sslrootcert does, so that only a server it vouches for
// is trusted; the certificate is offered to the server. Its errors name
// the parameter.
func (f tlsFiles) apply(c *tls.Config) error {
	if f.rootCert != "" {
		roots, err := pemfile.CertPool(f.rootCert)
		if errors.Is(err, pemfile.ErrNoCertificate) {
			err = fmt.Errorf("%s: %w", f.rootCert, err)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sslRootCertParam, err)
		}
		c.RootCAs = roots
	}
	if f.cert != "" {
		certPEM, err := os.ReadFile(f.cert)
		if err != nil {
			return fmt.Errorf("%s: %w", sslCertParam, err)
		}
		keyPEM, err := os.ReadFile(f.key)
		if err != nil {
			return fmt.Errorf("%s: %w", sslKeyParam, err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return fmt.Errorf("%s and %s: %w", sslCertParam, sslKeyParam, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return nil
}

// loadTLS loads the URL's TLS files into its client's options.
func (o *redisOptions) loadTLS() error {
	c := o.tlsConfig()
	if c == nil {
		return nil // readTLSFiles refused files on a URL without TLS
	}
	if c.InsecureSkipVerify && o.files.rootCert != "" {
		return errors.New("skip_verify=true turns off the verification of the server that sslrootcert is for: drop skip_verify")
	}
	return o.files.apply(c)
}

// tlsConfig is the TLS configuration of the client's options; nil without
// TLS.
func (o *redisOptions) tlsConfig() *tls.Config {
	switch {
	case o.cluster != nil:
		return o.cluster.TLSConfig
	case o.failover != nil:
		return o.failover.TLSConfig
	case o.single != nil:
		return o.single.TLSConfig
	}
	return nil
}
