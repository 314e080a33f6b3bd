// Package pemfile reads the PEM files admit's TLS settings name, for every
// front and store alike; callers name the setting in their errors.
package pemfile

import (
	"crypto/x509"
	"errors"
	"os"
)

// ErrNoCertificate is CertPool's error for a file that holds no PEM
// certificate.
var ErrNoCertificate = errors.New("no PEM certificate in the file")

// CertPool returns a pool of the certificates of the PEM file at path, and
// only those: a CA file a setting trusts instead of the system's roots. A
// file without a certificate is refused rather than trust nothing.
func CertPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, ErrNoCertificate
	}
	return pool, nil
}
