// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim/clienttest"
)

// How the AWS CLI tests find and run the CLIs: every distinct one on the
// machine, each in an environment of its own that no setting of the
// machine's reaches.

// awsCLI is one installed AWS CLI.
type awsCLI struct{ path, version string }

// cliCandidates are where the CLIs are looked for besides PATH.
var cliCandidates = []string{"/usr/bin/aws"}

// awsCLIs finds every distinct AWS CLI: two paths to one installation,
// or a shim in front of it, count once, by the version they report.
func awsCLIs(t *testing.T) []awsCLI {
	t.Helper()
	paths := slices.Clone(cliCandidates)
	if p, err := exec.LookPath("aws"); err == nil {
		paths = append([]string{p}, paths...)
	}
	var out []awsCLI
	seen := map[string]bool{}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		p = unshimmed(t, p)
		cmd := exec.Command(p, "--version")
		cmd.Env = cliEnv(t, "")
		raw, err := cmd.CombinedOutput()
		fields := strings.Fields(string(raw))
		if err != nil || len(fields) == 0 || !strings.HasPrefix(fields[0], "aws-cli/") {
			t.Logf("%s is not a working AWS CLI: %v %s", p, err, raw)
			continue
		}
		if seen[fields[0]] {
			continue
		}
		seen[fields[0]] = true
		out = append(out, awsCLI{path: p, version: fields[0]})
	}
	if len(out) == 0 {
		clienttest.Missing(t, "awscli", "apt-get install awscli (or pip install awscli)")
	}
	return out
}

// unshimmed is the installation a pyenv shim at path would run, or path
// itself if it is not one. A shim finds its installation anew on every
// call, which costs about half a second of CPU, more than the call does
// against the front; the tests run the installation directly.
func unshimmed(t *testing.T, path string) string {
	t.Helper()
	root := os.Getenv("PYENV_ROOT")
	if root == "" || filepath.Dir(path) != filepath.Join(root, "shims") {
		return path
	}
	cmd := exec.Command(filepath.Join(root, "bin", "pyenv"), "which", filepath.Base(path))
	out, err := cmd.Output()
	if err != nil {
		t.Logf("%s is a pyenv shim that names no installation (%v); running the shim", path, err)
		return path
	}
	return strings.TrimSpace(string(out))
}

// cliEnv is the environment a CLI runs in: the test's own, without any
// AWS setting of the machine's, with fake credentials, no config files, no
// pager, one attempt per call (so an error shows as it is answered), and
// caBundle as its CA bundle when set.
func cliEnv(t *testing.T, caBundle string) []string {
	t.Helper()
	dir := t.TempDir()
	config, credentials := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	for _, f := range []string{config, credentials} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"AWS_ACCESS_KEY_ID=AKIDCLITEST",
		"AWS_SECRET_ACCESS_KEY=cli-test-secret",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE="+config,
		"AWS_SHARED_CREDENTIALS_FILE="+credentials,
		"AWS_PAGER=",
		"AWS_CLI_AUTO_PROMPT=off",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_RETRY_MODE=standard",
		"AWS_MAX_ATTEMPTS=1",
	)
	if caBundle != "" {
		env = append(env, "AWS_CA_BUNDLE="+caBundle)
	}
	return env
}

// session runs one CLI against one endpoint.
type session struct {
	t        *testing.T
	cli      awsCLI
	endpoint string
	env      []string
	// driver runs the commands when the CLI is a Python script; without
	// one, each command is a process of its own.
	driver *cliDriver
	// service is the CLI's service the commands are of; "" is ec2.
	service string
}

// newSession is a session of cli against endpoint, trusting caBundle when
// it is set, with a driver of its own when the CLI can have one.
func newSession(t *testing.T, cli awsCLI, endpoint, caBundle string) *session {
	t.Helper()
	s := &session{t: t, cli: cli, endpoint: endpoint, env: cliEnv(t, caBundle)}
	s.driver = startDriver(t, cli, s.env)
	return s
}

// cliError is the CLI's report of an API error.
type cliError struct{ code, op, message string }

var cliErrorLine = regexp.MustCompile(`An error occurred \(([^)]+)\) when calling the (\w+) operation(?: \(reached max retries: \d+\))?: (.*)`)

// run runs `aws ec2 ARGS... --endpoint-url E --output json` and returns
// its output, or the API error it reported.
func (s *session) run(args ...string) ([]byte, *cliError) {
	s.t.Helper()
	full := append([]string{cmp.Or(s.service, "ec2")}, args...)
	full = append(full, "--endpoint-url", s.endpoint, "--output", "json")
	var stdout, stderr []byte
	var code int
	if s.driver != nil {
		stdout, stderr, code = s.driver.run(s.t, full)
	} else {
		stdout, stderr, code = s.process(full)
	}
	if code == 0 {
		return stdout, nil
	}
	m := cliErrorLine.FindStringSubmatch(string(stderr))
	if m == nil {
		s.t.Fatalf("aws %s: exit status %d\nstderr: %s", strings.Join(args, " "), code, stderr)
	}
	if code != 254 && code != 255 {
		s.t.Errorf("aws %s exited %d on an API error, want 254 or 255 (the CLI's for one)", strings.Join(args, " "), code)
	}
	return nil, &cliError{code: m[1], op: m[2], message: strings.TrimSpace(m[3])}
}

// process runs the CLI with args as a process of its own and returns what
// it wrote and its exit status.
func (s *session) process(args []string) (stdout, stderr []byte, code int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.cli.path, args...)
	cmd.Env = s.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		s.t.Fatalf("aws %s: %v", strings.Join(args, " "), err)
	}
	return out.Bytes(), errOut.Bytes(), cmd.ProcessState.ExitCode()
}

// json runs a command that must succeed and decodes its output.
func (s *session) json(into any, args ...string) {
	s.t.Helper()
	out, cerr := s.run(args...)
	if cerr != nil {
		s.t.Fatalf("aws %s: %s: %s", strings.Join(args, " "), cerr.code, cerr.message)
	}
	if into == nil {
		return
	}
	if err := json.Unmarshal(out, into); err != nil {
		s.t.Fatalf("aws %s printed what does not decode: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fails runs a command that must fail with code, and returns the message.
func (s *session) fails(code string, args ...string) string {
	s.t.Helper()
	_, cerr := s.run(args...)
	switch {
	case cerr == nil:
		s.t.Fatalf("aws %s succeeded, want %s", strings.Join(args, " "), code)
	case cerr.code != code:
		s.t.Fatalf("aws %s failed with %s (%s), want %s", strings.Join(args, " "), cerr.code, cerr.message, code)
	}
	return cerr.message
}
