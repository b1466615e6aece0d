// SPDX-License-Identifier: Apache-2.0

package simtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/schema/atomicfile"
)

// Files are the PEM files Ensure keeps: the CA's certificate, which clients
// trust, and the server's certificate (with the CA after it) and key.
type Files struct {
	CA, Cert, Key string
}

// File names inside the directory Ensure is given. The CA's key is kept
// too, so a restart can sign a certificate for new names under the CA
// clients already trust.
const (
	caFile    = "ca.pem"
	caKeyFile = "ca-key.pem"
	certFile  = "server.pem"
	keyFile   = "server-key.pem"
)

// The certificates last long enough for a workstation's emulator; the
// server certificate is made anew when it is within renewBefore of its
// end or lacks a name asked for.
const (
	caLifetime     = 10 * 365 * 24 * time.Hour
	serverLifetime = 365 * 24 * time.Hour
	renewBefore    = 7 * 24 * time.Hour
)

// Ensure returns the CA and server certificate kept in dir, making them
// when they are missing, and a new server certificate when the one there
// does not name every host or is about to expire. The server certificate
// always names 127.0.0.1, ::1 and localhost; hosts adds more (IP
// addresses or DNS names).
func Ensure(dir string, hosts ...string) (Files, error) {
	f := Files{CA: filepath.Join(dir, caFile), Cert: filepath.Join(dir, certFile), Key: filepath.Join(dir, keyFile)}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, fmt.Errorf("making the emulator's certificate directory, %w", err)
	}
	ca, caKey, err := loadOrMakeCA(dir)
	if err != nil {
		return Files{}, err
	}
	names := append([]string{"127.0.0.1", "::1", "localhost"}, hosts...)
	if current(f.Cert, ca, names) {
		return f, nil
	}
	if err := makeServer(f, ca, caKey, names); err != nil {
		return Files{}, err
	}
	return f, nil
}

// ServerConfig is a TLS configuration serving the server certificate.
func (f Files) ServerConfig() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("loading the emulator's server certificate, %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// Pool is a certificate pool holding only the CA, for Go clients in tests.
func (f Files) Pool() (*x509.CertPool, error) {
	data, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no certificate", f.CA)
	}
	return pool, nil
}

func loadOrMakeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, caFile), filepath.Join(dir, caKeyFile)
	cert, certErr := readCert(certPath)
	key, keyErr := readKey(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		return cert, key, nil
	case !errors.Is(certErr, fs.ErrNotExist) || !errors.Is(keyErr, fs.ErrNotExist):
		// One of the two is there but unreadable, or only one is there:
		// replacing them would silently break every client that trusts
		// the CA, so say so instead.
		return nil, nil, fmt.Errorf("the emulator's CA in %s is incomplete or unreadable (remove %s and %s to make a new one), %w",
			dir, caFile, caKeyFile, errors.Join(certErr, keyErr))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "gpufleet emulator CA", Organization: []string{"gpufleet"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(keyPath, key); err != nil {
		return nil, nil, err
	}
	if err := writePublic(certPath, pemBlock("CERTIFICATE", der)); err != nil {
		return nil, nil, err
	}
	cert, err = x509.ParseCertificate(der)
	return cert, key, err
}

// current reports whether the server certificate at path is signed by ca,
// names every name and is not about to expire.
func current(path string, ca *x509.Certificate, names []string) bool {
	cert, err := readCert(path)
	if err != nil || cert.CheckSignatureFrom(ca) != nil || time.Until(cert.NotAfter) < renewBefore {
		return false
	}
	for _, n := range names {
		if cert.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}

func makeServer(f Files, ca *x509.Certificate, caKey *ecdsa.PrivateKey, names []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "gpufleet emulator", Organization: []string{"gpufleet"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(serverLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if !slices.Contains(tmpl.DNSNames, n) {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	// The key first: a certificate on disk without its key would be
	// taken for current by the next start.
	if err := writeKey(f.Key, key); err != nil {
		return err
	}
	chain := append(pemBlock("CERTIFICATE", der), pemBlock("CERTIFICATE", ca.Raw)...)
	return writePublic(f.Cert, chain)
}

// writePublic writes a certificate readable by every user: clients run
// as other users may need to trust the CA.
func writePublic(path string, data []byte) error {
	if err := atomicfile.Write(path, data); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, pemBlock("EC PRIVATE KEY", der)); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func readKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s holds no key", path)
	}
	return x509.ParseECPrivateKey(block.Bytes)
}
