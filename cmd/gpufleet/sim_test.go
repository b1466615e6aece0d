// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	gfaws "github.com/gpufleet/gpufleet/providers/aws"
)

// serve runs `gpufleet sim serve` with args until the returned stop is
// called, and gives the EC2 endpoint it printed.
func serve(t *testing.T, state string, args ...string) (endpoint string, stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int, 1)
	var rest bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"sim", "serve", "--state", state}, withQuotas(t, args)...), w, io.Discard)
		w.Close()
	}()
	lines := bufio.NewScanner(out)
	ec2Line := regexp.MustCompile(`^  EC2  (https?://127\.0\.0\.1:\d+)$`)
	for lines.Scan() {
		if m := ec2Line.FindStringSubmatch(lines.Text()); m != nil {
			endpoint = m[1]
			break
		}
	}
	if endpoint == "" {
		cancel()
		t.Fatal("sim serve printed no EC2 endpoint")
	}
	drained := make(chan struct{})
	go func() {
		for lines.Scan() {
			rest.WriteString(lines.Text() + "\n")
		}
		close(drained)
	}()
	return endpoint, func() string {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("sim serve exited with %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("sim serve did not stop")
		}
		<-drained
		return rest.String()
	}
}

func TestSimServeKeepsItsStateAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "clouds.json")
	endpoint, stop := serve(t, state)
	client := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""), HTTPClient: gfaws.LoopbackHTTPClient()})
	run1, err := client.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeG4dnXlarge,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("gpufleet-fleet"), Value: aws.String("demo")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := *run1.Instances[0].InstanceId
	if out := stop(); !strings.Contains(out, "state saved to "+state) {
		t.Errorf("serve said on the way out: %q", out)
	}

	var inspect bytes.Buffer
	if code := run(ctx, []string{"sim", "inspect", "--state", state}, &inspect, io.Discard); code != 0 {
		t.Fatalf("sim inspect exited with %d", code)
	}
	if !regexp.MustCompile(`(?m)^aws\s+us-east-1a\s+` + id + `\s+g4dn\.xlarge\s+on-demand\s+\S+\s+demo\s+-$`).MatchString(inspect.String()) {
		t.Errorf("sim inspect does not show %s:\n%s", id, inspect.String())
	}

	endpoint, stop = serve(t, state)
	defer stop()
	client = ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""), HTTPClient: gfaws.LoopbackHTTPClient()})
	out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) != 1 {
		t.Fatalf("after a restart the instance is gone: %v", err)
	}
}

// --rate-limits makes the emulator throttle as the clouds do; the state
// keeps the limits, so a restart without the flag still enforces them.
func TestSimServeRateLimits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(dir, "clouds.json")
	limits := filepath.Join(dir, "limits.json")
	writeSimFile(t, limits, `{"rateLimits": [{"cloud": "aws", "class": "mutating", "rate": 0.001, "burst": 1}]}`)
	launch := func(endpoint, token string) error {
		client := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""), HTTPClient: gfaws.LoopbackHTTPClient()})
		_, err := simRunOne(ctx, client, token)
		return err
	}

	endpoint, stop := serve(t, state, "--rate-limits", limits)
	if err := launch(endpoint, "first"); err != nil {
		t.Fatalf("the launch of a full bucket: %v", err)
	}
	if err := launch(endpoint, "second"); !isEC2Code(err, "RequestLimitExceeded") {
		t.Fatalf("the launch past the burst: %v, want RequestLimitExceeded", err)
	}
	stop()

	endpoint, stop = serve(t, state)
	defer stop()
	if err := launch(endpoint, "third"); err != nil {
		t.Fatalf("after a restart, the first launch of the refilled bucket: %v", err)
	}
	if err := launch(endpoint, "fourth"); !isEC2Code(err, "RequestLimitExceeded") {
		t.Fatalf("after a restart without --rate-limits the limits are gone: %v", err)
	}
}

func TestSimServeRefusesABadRateLimitFile(t *testing.T) {
	dir := t.TempDir()
	limits := filepath.Join(dir, "limits.json")
	writeSimFile(t, limits, `{"rateLimits": [{"cloud": "aws", "class": "mutating", "rate": 5, "burst": 50, "per": "minute"}]}`)
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"sim", "serve", "--state", filepath.Join(dir, "s.json"), "--rate-limits", limits}, io.Discard, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), `unknown field "per"`) {
		t.Errorf("sim serve with an unknown field exited %d saying %q", code, stderr.String())
	}
}
