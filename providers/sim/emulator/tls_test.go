// SPDX-License-Identifier: Apache-2.0

package emulator

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// With TLSDir every front serves https under the CA kept there, which a
// client trusting it accepts and one that does not refuses; a restart
// keeps the CA, so the client's setting stays good.
func TestTLSFrontsServeUnderTheirOwnCA(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var firstCA string
	for run := range 2 {
		world, err := sim.New(sim.Config{StatePath: filepath.Join(dir, "state.json")})
		if err != nil {
			t.Fatal(err)
		}
		emu, err := Start(world, Options{TLSDir: filepath.Join(dir, "tls")})
		if err != nil {
			t.Fatal(err)
		}
		ep := emu.Endpoints
		for _, url := range []string{ep.EC2, ep.ARM, ep.GCE, ep.AWSPricing, ep.AzurePrices, ep.GCPBilling, ep.OCI} {
			if !strings.HasPrefix(url, "https://") {
				t.Errorf("endpoint %s is not https", url)
			}
		}
		pool, err := emu.TLS.Pool()
		if err != nil {
			t.Fatal(err)
		}
		ca, err := os.ReadFile(emu.TLS.CA)
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			firstCA = string(ca)
		} else if string(ca) != firstCA {
			t.Error("a restart made a new CA: clients trusting the first one would be refused")
		}
		trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		client := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.EC2),
			Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""), HTTPClient: trusting})
		if _, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
			t.Errorf("run %d: DescribeInstances over https trusting the CA: %v", run, err)
		}
		untrusting := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.EC2),
			Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""), HTTPClient: &http.Client{}})
		if _, err := untrusting.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("run %d: a client that does not trust the CA got %v, want a certificate error", run, err)
		}
		if err := emu.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
