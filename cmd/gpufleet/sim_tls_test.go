// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// `sim serve --tls --op-latency` serves https under a CA written beside
// the state, and launches take the latency; a restart keeps both the CA
// and the latency, so clients told once keep working.
func TestSimServeTLSAndLatency(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "clouds.json")
	ca := filepath.Join(filepath.Dir(state), "clouds-tls", "ca.pem")

	endpoint, stop := serve(t, state, "--tls", "--op-latency", "1h")
	if !strings.HasPrefix(endpoint, "https://") {
		t.Fatalf("EC2 endpoint %s is not https", endpoint)
	}
	client := trustingEC2(t, endpoint, ca)
	run, err := simRunOne(ctx, client, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Instances[0].State.Name; got != types.InstanceStateNamePending {
		t.Errorf("a launch with an hour's latency answered %s, want pending", got)
	}
	first, _ := os.ReadFile(ca)
	if out := stop(); !strings.Contains(out, "export AWS_CA_BUNDLE="+ca) || !strings.Contains(out, "export REQUESTS_CA_BUNDLE="+ca) {
		t.Errorf("sim serve --tls did not say how to trust its CA:\n%s", out)
	}

	endpoint, stop = serve(t, state, "--tls")
	defer stop()
	if again, _ := os.ReadFile(ca); string(again) != string(first) {
		t.Error("a restart made a new CA")
	}
	desc, err := trustingEC2(t, endpoint, ca).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{*run.Instances[0].InstanceId}})
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.Reservations[0].Instances[0].State.Name; got != types.InstanceStateNamePending {
		t.Errorf("after a restart without --op-latency the instance is %s, want still pending: the state keeps the latency", got)
	}
}

func trustingEC2(t *testing.T, endpoint, caFile string) *ec2.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("sim serve --tls wrote no CA at %s: %v", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	return ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
		HTTPClient:  &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}})
}
