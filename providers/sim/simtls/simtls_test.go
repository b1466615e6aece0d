// SPDX-License-Identifier: Apache-2.0

package simtls

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestEnsureKeepsTheCAClientsTrust(t *testing.T) {
	dir := t.TempDir()
	first, err := Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	ca1, _ := os.ReadFile(first.CA)
	cert1, _ := os.ReadFile(first.Cert)

	again, err := Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ca, _ := os.ReadFile(again.CA); !bytes.Equal(ca, ca1) {
		t.Error("a second Ensure replaced the CA")
	}
	if cert, _ := os.ReadFile(again.Cert); !bytes.Equal(cert, cert1) {
		t.Error("a second Ensure for the same names replaced the server certificate")
	}

	wider, err := Ensure(dir, "emulator.test")
	if err != nil {
		t.Fatal(err)
	}
	if ca, _ := os.ReadFile(wider.CA); !bytes.Equal(ca, ca1) {
		t.Error("a new name replaced the CA")
	}
	if cert, _ := os.ReadFile(wider.Cert); bytes.Equal(cert, cert1) {
		t.Error("a new name kept a server certificate that does not carry it")
	}
	if info, err := os.Stat(filepath.Join(dir, keyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("server key mode = %v, %v; want 0600", info.Mode().Perm(), err)
	}
}

func TestAClientTrustingTheCAConnects(t *testing.T) {
	files, err := Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := files.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()

	pool, err := files.Pool()
	if err != nil {
		t.Fatal(err)
	}
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, url := range []string{srv.URL, fmt.Sprintf("https://localhost:%d", srv.Listener.Addr().(*net.TCPAddr).Port)} {
		resp, err := trusting.Get(url)
		if err != nil {
			t.Fatalf("GET %s trusting the CA: %v", url, err)
		}
		resp.Body.Close()
	}
	// Without the CA the system roots refuse it: the certificate is
	// not accepted by accident.
	if resp, err := (&http.Client{Transport: &http.Transport{}}).Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a client not trusting the CA connected")
	}
	// curl, a client of another TLS stack, agrees.
	if curl, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(curl, "-sS", "--cacert", files.CA, srv.URL).CombinedOutput()
		if err != nil || string(out) != "ok" {
			t.Errorf("curl --cacert: %v: %s", err, out)
		}
	}
}

func TestAnIncompleteCAIsNotReplaced(t *testing.T) {
	dir := t.TempDir()
	files, err := Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, caKeyFile)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(files.CA)
	if _, err := Ensure(dir); err == nil {
		t.Fatal("Ensure made a new CA while the old one's certificate was still there")
	}
	if after, _ := os.ReadFile(files.CA); !bytes.Equal(before, after) {
		t.Error("the CA certificate was replaced")
	}
}
