// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An AWS CLI spends about a second and a half of CPU importing itself on
// every command, far more than the command takes against the front; run
// once per command, the AWS CLI cases were the largest cost of the whole
// test suite. A driver runs a session's commands in one Python process of
// the CLI's own interpreter, each through the CLI's own entry point
// (testdata/awscli_driver.py calls awscli.clidriver.main, as the aws script
// does), so the imports are paid once a session. What a command does,
// prints and exits with is the CLI's; only the process around it is
// shared. Commands whose point is the process (--version, a TLS handshake
// refused) still run as processes of their own.

// cliDriver is one CLI's Python process running commands in turn.
type cliDriver struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	answers *json.Decoder
}

// driverAnswer is the driver's report of one command.
type driverAnswer struct {
	RC     int    `json:"rc"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// startDriver starts a driver for cli in env, or returns nil when cli is
// not a Python script (a bundled binary, say), whose commands then run as
// processes.
func startDriver(t *testing.T, cli awsCLI, env []string) *cliDriver {
	t.Helper()
	python := scriptInterpreter(cli.path)
	if python == "" {
		return nil
	}
	script, err := filepath.Abs(filepath.Join("testdata", "awscli_driver.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the AWS CLI driver with %s: %v", python, err)
	}
	d := &cliDriver{cmd: cmd, stdin: stdin, answers: json.NewDecoder(bufio.NewReader(stdout))}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the AWS CLI driver (%s) ended with %v\n%s", cli.version, err, stderr.String())
		}
	})
	return d
}

// run runs one command (args without "aws") and returns what it wrote and
// the status the aws script would have exited with.
func (d *cliDriver) run(t *testing.T, args []string) (stdout, stderr []byte, code int) {
	t.Helper()
	line, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("aws %s: the driver took no command: %v", strings.Join(args, " "), err)
	}
	answered := make(chan error, 1)
	var a driverAnswer
	go func() { answered <- d.answers.Decode(&a) }()
	// A command that hangs is killed, as the per-process runs' context
	// does; the answer is then an error.
	timer := time.AfterFunc(time.Minute, func() { d.cmd.Process.Kill() })
	defer timer.Stop()
	if err := <-answered; err != nil {
		t.Fatalf("aws %s: no answer from the driver: %v", strings.Join(args, " "), err)
	}
	return []byte(a.Stdout), []byte(a.Stderr), a.RC
}

// scriptInterpreter is the Python interpreter a script's #! line names, or
// "" if path is not a Python script.
func scriptInterpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	first, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(first, "#!"))
	if len(fields) == 0 || !strings.Contains(filepath.Base(fields[0]), "python") {
		return ""
	}
	return fields[0]
}
