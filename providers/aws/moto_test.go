package aws

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// motoImage is one of the AMIs moto serves by default (Ubuntu 14.04, root
// device /dev/sda1).
const motoImage = "ami-1e749f67"

// moto starts moto's EC2 server on a free loopback port for the test and
// stops it when the test ends. moto is an independent emulator of the EC2
// API: running the suite against it as well checks ours against another
// reading of the same documentation.
func moto(t *testing.T) backend {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not installed (pip install 'moto[server]'); the suite ran against the emulator only")
	}
	port := freePort(t)
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	// Its own process group, so stopping it also stops whatever the
	// launcher (a pyenv shim, say) started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting moto_server: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/moto-api/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("moto_server exited before it answered: %v", err)
		case <-ctx.Done():
			t.Fatalf("moto_server did not answer on %s within 20 s", url)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return backend{url: url, regions: []string{"us-east-1"}, image: motoImage}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
