// SPDX-License-Identifier: Apache-2.0

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

	"github.com/gpufleet/gpufleet/providers/sim/clienttest"
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
		clienttest.Missing(t, "moto", "pip install 'moto[server]'; the suite ran against the emulator only")
	}
	if testing.Short() {
		t.Skip("starts moto's EC2 server, a Python process; run without -short")
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

// motoDifferences are where moto is known to answer otherwise than the
// emulator, by the name of the case that shows it, with why and which of
// the two is EC2's way. The suites run those cases too: a difference that
// shows is reported as known, and one that no longer shows fails, so the
// table stays true.
var motoDifferences = map[string]string{
	"repeated create returns the same instance": "moto does not de-duplicate RunInstances ClientTokens: a repeat launches a second instance (EC2 returns the first)",

	// The emulator's catalog, not EC2, decides EFA (catalog.EFAInterfaces)
	// and the markets a type is sold on in a region; moto's data is EC2's.
	"instance type f2.6xlarge":    "EC2 sells f2.6xlarge on spot in us-east-1; the catalog prices it on-demand only there, and the emulator sells what the catalog prices",
	"instance type f2.48xlarge":   "EC2 gives f2.48xlarge an EFA; the catalog gives it none",
	"instance type inf1.24xlarge": "EC2 gives inf1.24xlarge an EFA; the catalog gives it none",
	"instance type inf2.48xlarge": "the catalog gives inf2.48xlarge an EFA; moto's copy of EC2's answers gives it none",
	// EC2 maps zone names to ids apart for each account.
	"zone ids of us-east-1": "moto maps zone names to ids as one real account does; the emulator's one account maps them in the catalog's order",
	// Where moto lets pass what EC2 refuses, with the codes EC2 documents.
	"the default group's rules":                            "moto's default group admits nothing; EC2's admits traffic from its own members",
	"a launch's subnet is in another zone":                 "moto launches into a subnet of another zone than the placement; EC2 refuses it (InvalidParameterValue)",
	"a launch's group is of another VPC":                   "moto launches with a group of another VPC than the subnet's; EC2 refuses it (InvalidParameter)",
	"deleting a subnet in use":                             "moto deletes a subnet instances are in; EC2 refuses (DependencyViolation)",
	"deleting the default group":                           "moto deletes a VPC's default group; EC2 refuses (CannotDelete)",
	"an unknown region":                                    "moto answers DescribeRegions for an unknown region with no regions; EC2 refuses it (InvalidParameterValue, \"Invalid region: [...]\")",
	"an instance in a default subnet has a public address": "moto gives an instance a private address outside its subnet's range; EC2 gives one of the subnet's",
}

// motoGaps are the conformance suite's cases motoDifferences lists.
func motoGaps(names ...string) map[string]string {
	gaps := map[string]string{}
	for _, name := range names {
		gaps[name] = motoDifferences[name]
	}
	return gaps
}
