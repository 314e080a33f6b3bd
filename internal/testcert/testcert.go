// Package testcert makes the certificates of tests: a self-signed one for
// 127.0.0.1, written where a front's --tls-cert and --tls-key read it, and
// a certificate authority that issues server and client certificates, for
// servers that verify their clients.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SelfSigned writes a certificate for 127.0.0.1 and its key into a
// temporary directory and returns their paths and a pool that trusts it.
func SelfSigned(t testing.TB) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	tmpl := leaf(t, "admit test", x509.ExtKeyUsageServerAuth)
	key := newKey(t)
	cert, der := create(t, tmpl, tmpl, key, key)
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	certFile, keyFile = write(t, t.TempDir(), "cert", der, key)
	return certFile, keyFile, roots
}

// CA is a certificate authority made for one test. It is not safe for
// concurrent use.
type CA struct {
	// File is its certificate, PEM: what a server or client is told to
	// trust.
	File string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
	n    int // certificates issued, for their files' names
}

// NewCA makes a certificate authority whose files live in a temporary
// directory of t.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "admit test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	cert, der := create(t, tmpl, tmpl, key, key)
	ca := &CA{cert: cert, key: key, dir: t.TempDir()}
	ca.File = filepath.Join(ca.dir, "ca.pem")
	if err := os.WriteFile(ca.File, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// Server issues a server certificate for 127.0.0.1 and returns the paths
// of it and its key.
func (ca *CA) Server(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	return ca.issue(t, leaf(t, "127.0.0.1", x509.ExtKeyUsageServerAuth))
}

// Client issues a client certificate and returns the paths of it and its
// key.
func (ca *CA) Client(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	return ca.issue(t, leaf(t, "admit test client", x509.ExtKeyUsageClientAuth))
}

func (ca *CA) issue(t testing.TB, tmpl *x509.Certificate) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	_, der := create(t, tmpl, ca.cert, key, ca.key)
	ca.n++
	return write(t, ca.dir, fmt.Sprintf("cert%d", ca.n), der, key)
}

// leaf is the template of a certificate for 127.0.0.1, valid for an hour
// either side of now, for usage.
func leaf(t testing.TB, name string, usage x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	return &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// create signs tmpl, holding key's public half, with parent's key.
func create(t testing.TB, tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) (*x509.Certificate, []byte) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, der
}

// write writes a certificate and its key as dir/name.pem and
// dir/name-key.pem.
func write(t testing.TB, dir, name string, der []byte, key *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
