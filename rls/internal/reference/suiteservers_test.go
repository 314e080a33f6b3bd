package reference

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// suitePassword is the password of every Redis the suite reaches that
// has one.
const suitePassword = "password123"

// startSuiteServers starts the servers the reference's suite expects
// beside those it starts itself, on the ports its Makefile
// (tests_with_redis) gives them: Redis over TLS, a Redis Sentinel setup and
// two Redis Clusters. Its Makefile puts stunnel before plain Redis; here
// Redis serves TLS itself, with the certificate project/cert.pem (key
// project/key.pem) for localhost, which also is the CA that the server on
// 16361 checks its clients' certificates with. They stop when t ends.
func startSuiteServers(t *testing.T, project, conf string) {
	t.Helper()
	writeSuiteCert(t, project)
	cert, key := filepath.Join(project, "cert.pem"), filepath.Join(project, "key.pem")
	tls := func(port int, clients string) []string {
		return []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
			"--tls-ca-cert-file", cert, "--tls-auth-clients", clients, "--requirepass", suitePassword}
	}
	redis := func(port int, args ...string) {
		dir := filepath.Join(project, strconv.Itoa(port))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		base := []string{"--bind", "127.0.0.1", "-::1", "--save", "", "--appendonly", "no", "--dir", dir}
		if len(args) == 0 || args[0] != "--port" {
			base = append(base, "--port", strconv.Itoa(port))
		}
		startServer(t, port, "redis-server", append(base, args...)...)
	}
	redis(16381, tls(16381, "no")...)
	redis(16382, tls(16382, "no")...)
	redis(16361, tls(16361, "yes")...)

	auth := []string{"--requirepass", suitePassword, "--masterauth", suitePassword}
	for _, master := range []int{6392, 6397} {
		redis(master, auth...)
		redis(master+1, append(auth, "--replicaof", "127.0.0.1", strconv.Itoa(master))...)
	}
	for file, ports := range map[string][]int{"sentinel.conf": {26394, 26395, 26396}, "sentinel-pre-second.conf": {26399, 26400, 26401}} {
		for _, port := range ports {
			// Each sentinel rewrites its file: a copy of its own.
			data, err := os.ReadFile(filepath.Join(conf, file))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(project, "sentinel-"+strconv.Itoa(port)+".conf")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			startServer(t, port, "redis-server", path, "--sentinel", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "-::1")
		}
	}

	for _, nodes := range [][]int{{6386, 6387, 6388}, {6389, 6390, 6391}} {
		create := []string{"--cluster", "create", "-a", suitePassword, "--no-auth-warning", "--cluster-replicas", "0", "--cluster-yes"}
		for _, port := range nodes {
			redis(port, "--cluster-enabled", "yes", "--requirepass", suitePassword)
			create = append(create, "127.0.0.1:"+strconv.Itoa(port))
		}
		if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
			t.Fatalf("redis-cli %s: %v\n%s", strings.Join(create, " "), err, out)
		}
		waitFor(t, "cluster on "+strconv.Itoa(nodes[0]), func() bool {
			for _, port := range nodes {
				out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(port), "-a", suitePassword, "--no-auth-warning", "cluster", "info").Output()
				if !strings.Contains(string(out), "cluster_state:ok") {
					return false
				}
			}
			return true
		})
	}
	for _, port := range []int{26394, 26399} {
		waitFor(t, "sentinel on "+strconv.Itoa(port), func() bool {
			out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(port), "sentinel", "replicas", "mymaster").Output()
			return strings.Contains(string(out), "slave") || strings.Contains(string(out), "replica")
		})
	}
}

// startServer runs name with args and waits until port accepts; it is
// killed when t ends.
func startServer(t *testing.T, port int, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	// Killed with the test's process too, should it end without its
	// cleanups: a server left on one of the suite's fixed ports would
	// fail the next run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitFor(t, name+" on "+strconv.Itoa(port), func() bool {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
}

// waitFor polls ready for up to 20 seconds: the servers tell nothing
// else when they are ready.
func waitFor(t *testing.T, what string, ready func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not ready after 20s", what)
		case <-tick.C:
		}
	}
}

// writeSuiteCert writes a self-signed certificate for localhost, usable
// by servers and clients and as their CA, to dir/cert.pem and its key to
// dir/key.pem, as the reference's Makefile makes one with openssl.
func writeSuiteCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cert.pem", "CERTIFICATE", der)
	write("key.pem", "PRIVATE KEY", keyDER)
}
