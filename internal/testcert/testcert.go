// Package testcert makes the certificates of tests: a self-signed one for
// 127.0.0.1, written where a front's --tls-cert and --tls-key read it, and
// a CA that issues server and client certificates.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SelfSigned writes a certificate for 127.0.0.1 and its key into a
// temporary directory and returns their paths and a pool that trusts it.
func SelfSigned(t testing.TB) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "admit test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, roots
}

// CA is a certificate authority of tests, which issues server and client
// certificates with the serials and names a test asks for.
type CA struct {
	Pool *x509.CertPool // trusts the CA
	File string         // the CA's certificate, PEM, in a temporary directory
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA named name, its certificate written to File.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Pool: x509.NewCertPool(), File: filepath.Join(t.TempDir(), "ca.pem"), cert: cert, key: key}
	ca.Pool.AddCert(cert)
	if err := os.WriteFile(ca.File, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// Leaf is a certificate for the CA to issue.
type Leaf struct {
	Serial     int64
	CommonName string // "": "admit test leaf"
	DNSNames   []string
	IPs        []net.IP
	URIs       []*url.URL
	Client     bool // for client authentication; false: for a server
}

// Issue returns the certificate l describes, signed by the CA, and its
// key, both PEM.
func (ca *CA) Issue(t testing.TB, l Leaf) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if l.Client {
		usage = x509.ExtKeyUsageClientAuth
	}
	if l.CommonName == "" {
		l.CommonName = "admit test leaf"
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(l.Serial),
		Subject:      pkix.Name{CommonName: l.CommonName},
		DNSNames:     l.DNSNames,
		IPAddresses:  l.IPs,
		URIs:         l.URIs,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// Server writes a server certificate for 127.0.0.1 with serial into a
// temporary directory and returns the paths of the certificate and key.
func (ca *CA) Server(t testing.TB, serial int64) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := ca.Issue(t, Leaf{Serial: serial, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	Write(t, certFile, certPEM)
	Write(t, keyFile, keyPEM)
	return certFile, keyFile
}

// ClientFiles writes a client certificate l describes into a temporary
// directory and returns the paths of the certificate and key, for clients
// that read files (a store URL's sslcert and sslkey).
func (ca *CA) ClientFiles(t testing.TB, l Leaf) (certFile, keyFile string) {
	t.Helper()
	l.Client = true
	certPEM, keyPEM := ca.Issue(t, l)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	Write(t, certFile, certPEM)
	Write(t, keyFile, keyPEM)
	return certFile, keyFile
}

// Client returns a client certificate l describes, as a tls.Config's
// Certificates takes it.
func (ca *CA) Client(t testing.TB, l Leaf) tls.Certificate {
	t.Helper()
	l.Client = true
	pair, err := tls.X509KeyPair(ca.Issue(t, l))
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// Write replaces the file at path with data, as a rotation does: a new
// file renamed over the old one.
func Write(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
