package servertls

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/admitgo/admit/internal/pemfile"
)

// VerifyClients makes c ask every client for its certificate and refuse
// the connection unless one of the CAs of the PEM file caFile signed it
// for client authentication and, when san is not empty, it carries san as
// envoyproxy/ratelimit's GRPC_CLIENT_TLS_SAN is checked, by
// x509.Certificate.VerifyHostname: among its DNS names, in any case, a
// wildcard the CA signed matching as in a server's name; or among its IP
// addresses when san is one. Its common name and URIs are never read.
// Only caFile's CAs are trusted, not the system's, which the reference
// adds to the file's. The file is read once.
func VerifyClients(c *tls.Config, caFile, san string) error {
	pool, err := pemfile.CertPool(caFile)
	if err != nil {
		return err
	}
	c.ClientCAs = pool
	c.ClientAuth = tls.RequireAndVerifyClientCert
	if san == "" {
		return nil
	}
	// VerifyConnection, unlike VerifyPeerCertificate, runs on resumed
	// sessions too.
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("servertls: no client certificate")
		}
		if err := cs.PeerCertificates[0].VerifyHostname(san); err != nil {
			return fmt.Errorf("servertls: client certificate: %w", err)
		}
		return nil
	}
	return nil
}
