// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	gfaws "github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/sim"
)

// buildGpufleet is the command, built once for the tests that share it
// (see compileGpufleet): the tests below kill it the way a crash would,
// which they cannot do to themselves. Under -short they are skipped.
func buildGpufleet(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the gpufleet binary")
	}
	return compileGpufleet(t)
}

// simProcess is a `gpufleet sim serve` running in its own process.
type simProcess struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	ec2    *ec2.Client
	// env points gpufleet at the emulator, as the line it prints says:
	// GPUFLEET_AWS_ENDPOINT=… and the others.
	env []string
}

// withQuotas adds --quotas with no limits to sim serve's args that name no
// quota file: a new account's quotas, sim serve's default, would hold back
// the fleets of tests that are about something else.
func withQuotas(t *testing.T, args []string) []string {
	t.Helper()
	if slices.Contains(args, "--quotas") {
		return args
	}
	file := filepath.Join(t.TempDir(), "unlimited-quotas.json")
	if err := os.WriteFile(file, []byte(`{"base": "unlimited"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(slices.Clone(args), "--quotas", file)
}

var exportLine = regexp.MustCompile(`^  export (GPUFLEET_AWS_ENDPOINT=(\S+)) (GPUFLEET_AZURE_ENDPOINT=\S+) (GPUFLEET_GCP_ENDPOINT=\S+) (GPUFLEET_LAMBDA_ENDPOINT=\S+) (GPUFLEET_OCI_ENDPOINT=\S+)$`)

// startSimProcess runs `gpufleet sim serve` with args and waits for it to
// print its endpoints. Without a --quotas of their own, the clouds have
// quotas out of the way (see withQuotas).
func startSimProcess(t *testing.T, bin string, args ...string) *simProcess {
	t.Helper()
	p := &simProcess{cmd: exec.Command(bin, append([]string{"sim", "serve"}, withQuotas(t, args)...)...)}
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A process that never prints its endpoints must not hang the test.
	watchdog := time.AfterFunc(30*time.Second, func() { p.cmd.Process.Kill() })
	defer watchdog.Stop()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	endpoint := ""
	for endpoint == "" && lines.Scan() {
		if m := exportLine.FindStringSubmatch(lines.Text()); m != nil {
			endpoint, p.env = m[2], []string{m[1], m[3], m[4], m[5], m[6]}
		}
	}
	if endpoint == "" {
		t.Fatalf("sim serve printed no endpoints; stderr:\n%s", p.stderr.String())
	}
	// Whatever else it prints must not fill the pipe and block it.
	go func() {
		for lines.Scan() {
		}
	}()
	p.ec2 = ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""), HTTPClient: gfaws.LoopbackHTTPClient()})
	return p
}

// kill ends the process as a crash would: no chance to save anything.
func (p *simProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

// interrupt stops the process as Ctrl-C does and waits for it to exit.
func (p *simProcess) interrupt(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("sim serve stopped with %v; stderr:\n%s", err, p.stderr.String())
	}
}

// simRunOne launches one instance, once: a retry would hide a fault that
// struck the first attempt.
func simRunOne(ctx context.Context, client *ec2.Client, token string) (*ec2.RunInstancesOutput, error) {
	return client.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeG4dnXlarge,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String(token),
		Placement: &types.Placement{AvailabilityZone: aws.String("us-east-1a")},
	}, func(o *ec2.Options) { o.Retryer = aws.NopRetryer{} })
}

// A create the emulator acknowledged survives the emulator being killed
// the moment it answered. The kill races whatever the emulator does after
// answering, so the test repeats it.
func TestSimServeKeepsAcknowledgedCreatesThroughAKill(t *testing.T) {
	t.Parallel()
	bin := buildGpufleet(t)
	state := filepath.Join(t.TempDir(), "clouds.json")
	ctx := context.Background()
	var created []string
	for i := range 10 {
		p := startSimProcess(t, bin, "--state", state)
		run, err := simRunOne(ctx, p.ec2, fmt.Sprintf("kill-%d", i))
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		p.kill(t)
		created = append(created, *run.Instances[0].InstanceId)

		world, err := sim.New(sim.Config{StatePath: state})
		if err != nil {
			t.Fatalf("loading the state after kill %d, %v", i, err)
		}
		for _, id := range created {
			if _, ok := world.Get(id); !ok {
				t.Fatalf("after kill %d, acknowledged instance %s is not in the state file", i, id)
			}
		}
	}
}

// A fault file passed at every start declares the faults; it does not add
// them again. A counted fault that has fired does not fire again after a
// restart with the same file, and another file replaces the rules.
func TestSimServeFaultsDeclareTheRules(t *testing.T) {
	t.Parallel()
	bin := buildGpufleet(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "clouds.json")
	once := filepath.Join(dir, "once.json")
	writeSimFile(t, once, `{"faults": [{"cloud": "aws", "op": "RunInstances", "kind": "capacity", "times": 1}]}`)
	other := filepath.Join(dir, "other.json")
	writeSimFile(t, other, `{"faults": [{"cloud": "aws", "op": "DescribeInstances", "kind": "latency", "latency": "1ms", "rate": 1}]}`)
	ctx := context.Background()

	p := startSimProcess(t, bin, "--state", state, "--faults", once)
	if _, err := simRunOne(ctx, p.ec2, "first"); !isEC2Code(err, "InsufficientInstanceCapacity") {
		t.Fatalf("first create: %v, want the injected InsufficientInstanceCapacity", err)
	}
	p.interrupt(t)

	p = startSimProcess(t, bin, "--state", state, "--faults", once)
	if _, err := simRunOne(ctx, p.ec2, "second"); err != nil {
		t.Fatalf("after a restart with the same fault file, the spent fault struck again: %v", err)
	}
	p.interrupt(t)
	if faults := savedSimFaults(t, state); len(faults) != 1 || faults[0].Fired != 1 {
		t.Errorf("after a restart with the same file the state holds %+v, want the one rule, fired once", faults)
	}

	p = startSimProcess(t, bin, "--state", state, "--faults", other)
	p.interrupt(t)
	if faults := savedSimFaults(t, state); len(faults) != 1 || faults[0].Kind != sim.FaultLatency {
		t.Errorf("after a restart with another file the state holds %+v, want only that file's rule", faults)
	}
}

func writeSimFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func isEC2Code(err error, code string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}

func savedSimFaults(t *testing.T, state string) []sim.Fault {
	t.Helper()
	world, err := sim.New(sim.Config{StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	return world.Faults()
}
