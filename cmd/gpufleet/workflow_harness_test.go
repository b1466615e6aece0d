// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A small GitHub Actions runner for the example workflows: it reads a
// workflow, runs its one job's steps in order as a GitHub-hosted runner
// would — `run:` with bash, the composite action of this repository
// expanded in place, GITHUB_OUTPUT, GITHUB_ENV and GITHUB_PATH carried from
// step to step — and emulates the few actions the workflows use. Whatever
// it does not know (a key, an action, an expression, a shell) is an error,
// so that a change to a workflow it cannot follow fails the test rather
// than being skipped.

// workflowFile, workflowJob, workflowStep and actionFile are the parts of
// the workflow and action syntax the harness runs; they are decoded with
// unknown keys refused.
type workflowFile struct {
	Name        string                     `yaml:"name"`
	On          map[string]workflowTrigger `yaml:"on"`
	Permissions map[string]string          `yaml:"permissions"`
	Concurrency struct {
		Group            string `yaml:"group"`
		CancelInProgress bool   `yaml:"cancel-in-progress"`
	} `yaml:"concurrency"`
	Env  map[string]string      `yaml:"env"`
	Jobs map[string]workflowJob `yaml:"jobs"`
}

type workflowTrigger struct {
	Types []string `yaml:"types"`
	Paths []string `yaml:"paths"`
}

type workflowJob struct {
	If     string            `yaml:"if"`
	RunsOn string            `yaml:"runs-on"`
	Env    map[string]string `yaml:"env"`
	Steps  []workflowStep    `yaml:"steps"`
}

type workflowStep struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	With  map[string]string `yaml:"with"`
	Env   map[string]string `yaml:"env"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
}

type actionFile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Default     string `yaml:"default"`
		Required    bool   `yaml:"required"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string         `yaml:"using"`
		Steps []workflowStep `yaml:"steps"`
	} `yaml:"runs"`
}

func decodeYAMLStrict(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("reading %s, %w", path, err)
	}
	return nil
}

// loadWorkflow reads a workflow with the one job the harness runs.
func loadWorkflow(t *testing.T, path string) *workflowFile {
	t.Helper()
	var wf workflowFile
	if err := decodeYAMLStrict(path, &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%s has %d jobs; the harness runs workflows of one job", path, len(wf.Jobs))
	}
	return &wf
}

// pullRequestEvent is the pull_request event a workflow is run for.
type pullRequestEvent struct {
	action           string // opened, synchronize, closed…
	number           int
	baseRef, baseSHA string
	headRef, headSHA string
	merged           bool
	// changed are the files the pull request changes, for the workflow's
	// paths filter.
	changed []string
}

func (e pullRequestEvent) payload() map[string]any {
	return map[string]any{
		"action": e.action,
		"number": float64(e.number),
		"pull_request": map[string]any{
			"number": float64(e.number),
			"merged": e.merged,
			"base":   map[string]any{"ref": e.baseRef, "sha": e.baseSHA},
			"head":   map[string]any{"ref": e.headRef, "sha": e.headSHA},
		},
	}
}

// actionsRunner is the harness: one repository on one fake GitHub.
type actionsRunner struct {
	t   *testing.T
	dir string
	// origin is the repository actions/checkout clones.
	origin string
	// slug is owner/name, apiURL the fake GitHub API, token the run's
	// GITHUB_TOKEN.
	slug, apiURL, token string
	secrets             map[string]string
	// localActions maps a `uses:` path (owner/name/dir, no @ref) to the
	// directory of a composite action in this checkout.
	localActions map[string]string
	// runnerEnv is the environment the runner's processes start with, on
	// top of the GitHub variables.
	runnerEnv []string
	// fakeBin holds the runner's preinstalled tools the test fakes (gh);
	// goBin the go command actions/setup-go puts on the PATH.
	fakeBin, goBin string
	// runs lists the finished runs for the fake gh: "WORKFLOW SHA
	// CONCLUSION ID" a line.
	runs   string
	nextID int
}

// jobResult is how a job ended, with its log.
type jobResult struct {
	runID      int
	skipped    bool
	conclusion string // success or failure
	log        string
	// steps are the outcomes by step, composite steps included, as
	// "NAME: OUTCOME".
	steps []string
	// outputs are each step's outputs by id.
	outputs map[string]map[string]string
	// workspace is where the job checked out the repository.
	workspace string
}

func newActionsRunner(t *testing.T, dir string) *actionsRunner {
	t.Helper()
	r := &actionsRunner{t: t, dir: dir, nextID: 9000, runs: filepath.Join(dir, "runs.txt"),
		fakeBin: filepath.Join(dir, "runner-bin"), goBin: filepath.Join(dir, "setup-go-bin"), localActions: map[string]string{}}
	for _, d := range []string{r.fakeBin, r.goBin, filepath.Join(dir, "artifacts")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(r.runs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// job is one job's run: its directories, the environment and PATH its
// steps added, and what they did.
type job struct {
	r                               *actionsRunner
	res                             *jobResult
	temp, toolCache, home, eventPth string
	github                          strictMap
	// env is what steps wrote to GITHUB_ENV; path what they wrote to
	// GITHUB_PATH, the latest first.
	env    map[string]string
	path   []string
	failed bool
	log    *bytes.Buffer
	n      int
}

// run runs wf for ev and returns how its job ended; it fails the test
// when the harness cannot follow the workflow.
func (r *actionsRunner) run(wf *workflowFile, file string, ev pullRequestEvent) *jobResult {
	t := r.t
	t.Helper()
	r.checkTrigger(wf, ev)
	r.nextID++
	id := r.nextID
	base := filepath.Join(r.dir, "run-"+fmt.Sprint(id))
	j := &job{r: r, res: &jobResult{runID: id, outputs: map[string]map[string]string{}, workspace: filepath.Join(base, "work", "fleets")},
		temp: filepath.Join(base, "temp"), toolCache: filepath.Join(base, "toolcache"), home: filepath.Join(base, "home"),
		env: map[string]string{}, log: &bytes.Buffer{}}
	for _, d := range []string{j.res.workspace, j.temp, j.toolCache, j.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	j.eventPth = filepath.Join(base, "event.json")
	if err := os.WriteFile(j.eventPth, mustJSON(t, ev.payload()), 0o644); err != nil {
		t.Fatal(err)
	}
	j.github = strictMap{
		"token": r.token, "repository": r.slug, "event_name": "pull_request", "event": ev.payload(),
		"sha": ev.headSHA, "ref": fmt.Sprintf("refs/pull/%d/merge", ev.number), "workspace": j.res.workspace,
		"run_id": fmt.Sprint(id), "api_url": r.apiURL,
	}
	ctx := j.context(nil, nil)
	if _, err := ctx.interpolate(wf.Concurrency.Group); err != nil {
		t.Fatalf("%s: concurrency: %v", file, err)
	}
	for _, jb := range wf.Jobs {
		if jb.RunsOn != "ubuntu-latest" {
			t.Fatalf("%s runs on %q; the harness is an ubuntu-latest runner", file, jb.RunsOn)
		}
		ok, err := ctx.condition(jb.If)
		if err != nil {
			t.Fatalf("%s: the job's if: %v", file, err)
		}
		if !ok {
			j.res.skipped, j.res.conclusion = true, "skipped"
			return j.res
		}
		outer := merged(wf.Env, jb.Env)
		steps := strictMap{}
		for _, s := range jb.Steps {
			j.step(s, outer, steps, nil)
		}
	}
	j.res.conclusion = "success"
	if j.failed {
		j.res.conclusion = "failure"
	}
	j.res.log = j.log.String()
	f, err := os.OpenFile(r.runs, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s %s %d\n", filepath.Base(file), ev.headSHA, j.res.conclusion, id)
	return j.res
}

// checkTrigger fails the test unless wf runs for ev: the event, its
// activity type and the paths filter.
func (r *actionsRunner) checkTrigger(wf *workflowFile, ev pullRequestEvent) {
	t := r.t
	t.Helper()
	trig, ok := wf.On["pull_request"]
	if !ok || len(wf.On) != 1 {
		t.Fatalf("the workflow %q does not run on pull_request alone: %v", wf.Name, slices.Sorted(maps.Keys(wf.On)))
	}
	types := cmpOrSlice(trig.Types, []string{"opened", "synchronize", "reopened"})
	if !slices.Contains(types, ev.action) {
		t.Fatalf("the workflow %q does not run for a pull request %s (types %v)", wf.Name, ev.action, types)
	}
	if len(trig.Paths) == 0 {
		return
	}
	for _, file := range ev.changed {
		for _, pattern := range trig.Paths {
			if strings.ContainsAny(strings.TrimSuffix(pattern, "/**"), "*?[]!") {
				t.Fatalf("the paths filter %q is a glob the harness does not match", pattern)
			}
			if dir, ok := strings.CutSuffix(pattern, "/**"); ok && strings.HasPrefix(file, dir+"/") || file == pattern {
				return
			}
		}
	}
	t.Fatalf("the workflow %q does not run for a pull request that changes %v: its paths are %v", wf.Name, ev.changed, trig.Paths)
}

func cmpOrSlice(s, or []string) []string {
	if len(s) == 0 {
		return or
	}
	return s
}

// merged is the env maps in order, later ones winning.
func merged(envs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, e := range envs {
		maps.Copy(out, e)
	}
	return out
}

// context is what a step's expressions read: steps are the step contexts
// of its job or composite action, action the action it runs in (nil for
// the job's own steps).
func (j *job) context(steps strictMap, action *actionScope) *exprContext {
	github := maps.Clone(j.github)
	contexts := map[string]any{
		"github":  github,
		"env":     merged(j.env),
		"runner":  strictMap{"temp": j.temp, "tool_cache": j.toolCache, "os": "Linux", "arch": runnerArch(), "name": "harness"},
		"secrets": strictMap(mapAny(j.r.secrets)),
		"steps":   steps,
	}
	if steps == nil {
		contexts["steps"] = strictMap{}
	}
	if action != nil {
		github["action_ref"], github["action_path"] = action.ref, action.dir
		contexts["inputs"] = strictMap(mapAny(action.inputs))
	}
	return &exprContext{contexts: contexts, failed: j.failed}
}

// actionScope is the composite action a step runs in.
type actionScope struct {
	ref, dir string
	inputs   map[string]string
}

func mapAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// runnerArch is runner.arch and RUNNER_ARCH as GitHub names it.
func runnerArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "X64"
	case "arm64":
		return "ARM64"
	}
	return strings.ToUpper(runtime.GOARCH)
}

// step runs one step: outer is the env of the workflow and job (and, in a
// composite action, of the step that uses it), steps the step contexts it
// adds its own to. It returns whether the step failed.
func (j *job) step(s workflowStep, outer map[string]string, steps strictMap, action *actionScope) {
	t := j.r.t
	t.Helper()
	name := cmpOrString(s.Name, s.Uses, firstLine(s.Run))
	record := func(outcome string, outputs map[string]string) {
		j.res.steps = append(j.res.steps, name+": "+outcome)
		if s.ID != "" {
			steps[s.ID] = map[string]any{"outputs": outputs, "outcome": outcome, "conclusion": outcome}
			if action == nil {
				j.res.outputs[s.ID] = outputs
			}
		}
	}
	ctx := j.context(steps, action)
	env := map[string]string{}
	var err error
	for k, v := range outer {
		if env[k], err = ctx.interpolate(v); err != nil {
			t.Fatalf("step %q: env %s: %v", name, k, err)
		}
	}
	// The env context holds the workflow's and job's env, and what steps
	// wrote to GITHUB_ENV.
	ctx.contexts["env"] = merged(j.env, env)
	ok, err := ctx.condition(s.If)
	if err != nil {
		t.Fatalf("step %q: if: %v", name, err)
	}
	if !ok {
		fmt.Fprintf(j.log, "##[skipped] %s\n", name)
		record("skipped", map[string]string{})
		return
	}
	for k, v := range s.Env {
		if env[k], err = ctx.interpolate(v); err != nil {
			t.Fatalf("step %q: env %s: %v", name, k, err)
		}
	}
	with := map[string]string{}
	for k, v := range s.With {
		if with[k], err = ctx.interpolate(v); err != nil {
			t.Fatalf("step %q: with %s: %v", name, k, err)
		}
	}
	fmt.Fprintf(j.log, "##[group]%s\n", name)
	var outputs map[string]string
	switch {
	case s.Run != "" && s.Uses != "":
		t.Fatalf("step %q has both run and uses", name)
	case s.Run != "":
		if len(s.With) > 0 {
			t.Fatalf("step %q: a run step has no with", name)
		}
		if action != nil && s.Shell == "" {
			t.Fatalf("step %q of a composite action has no shell, which GitHub requires", name)
		}
		script, err := ctx.interpolate(s.Run)
		if err != nil {
			t.Fatalf("step %q: run: %v", name, err)
		}
		outputs, err = j.shell(s.Shell, script, env, action)
		if err != nil {
			fmt.Fprintf(j.log, "##[error]%s: %v\n", name, err)
			record("failure", outputs)
			j.failed = true
			return
		}
	case s.Uses != "":
		outputs, err = j.uses(s.Uses, with, env, action)
		if err != nil {
			fmt.Fprintf(j.log, "##[error]%s: %v\n", name, err)
			record("failure", outputs)
			j.failed = true
			return
		}
	default:
		t.Fatalf("step %q has neither run nor uses", name)
	}
	record("success", outputs)
}

func cmpOrString(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// environ is a step's process environment: the runner's, GitHub's
// variables, what earlier steps wrote to GITHUB_ENV and GITHUB_PATH, then
// the step's env: in that order, later ones winning.
func (j *job) environ(env map[string]string, action *actionScope, files map[string]string) []string {
	vars := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": j.home, "LANG": "C.UTF-8",
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": j.res.workspace,
		"GITHUB_REPOSITORY": j.r.slug, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": j.eventPth,
		"GITHUB_SHA": j.github["sha"].(string), "GITHUB_REF": j.github["ref"].(string), "GITHUB_RUN_ID": j.github["run_id"].(string),
		"GITHUB_API_URL": j.r.apiURL, "GITHUB_SERVER_URL": "https://github.com",
		"RUNNER_TEMP": j.temp, "RUNNER_TOOL_CACHE": j.toolCache, "RUNNER_OS": "Linux", "RUNNER_ARCH": runnerArch(),
	}
	for _, kv := range j.r.runnerEnv {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	vars["PATH"] = strings.Join(append(append([]string{}, j.path...), j.r.fakeBin, vars["PATH"]), string(os.PathListSeparator))
	maps.Copy(vars, j.env)
	if action != nil {
		vars["GITHUB_ACTION_PATH"], vars["GITHUB_ACTION_REF"] = action.dir, action.ref
	}
	maps.Copy(vars, files)
	maps.Copy(vars, env)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// shell runs a run step's script as the runner does, and reads what it
// wrote to GITHUB_OUTPUT, GITHUB_ENV and GITHUB_PATH.
func (j *job) shell(shell, script string, env map[string]string, action *actionScope) (map[string]string, error) {
	t := j.r.t
	t.Helper()
	j.n++
	file := filepath.Join(j.temp, fmt.Sprintf("step-%d.sh", j.n))
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var args []string
	switch shell {
	case "": // a workflow's own run steps
		args = []string{"bash", "-e", file}
	case "bash":
		args = []string{"bash", "--noprofile", "--norc", "-eo", "pipefail", file}
	default:
		t.Fatalf("the shell %q is not one the harness runs", shell)
	}
	files := map[string]string{}
	for _, name := range []string{"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY"} {
		files[name] = filepath.Join(j.temp, fmt.Sprintf("step-%d.%s", j.n, strings.ToLower(strings.TrimPrefix(name, "GITHUB_"))))
		if err := os.WriteFile(files[name], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = j.res.workspace
	cmd.Env = j.environ(env, action, files)
	cmd.Stdout, cmd.Stderr = j.log, j.log
	runErr := cmd.Run()
	outputs, err := readCommandFile(files["GITHUB_OUTPUT"])
	if err != nil {
		t.Fatal(err)
	}
	setEnv, err := readCommandFile(files["GITHUB_ENV"])
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(j.env, setEnv)
	paths, err := os.ReadFile(files["GITHUB_PATH"])
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Split(strings.TrimSpace(string(paths)), "\n") {
		if p = strings.TrimSpace(p); p != "" {
			j.path = append([]string{p}, j.path...)
		}
	}
	return outputs, runErr
}

// readCommandFile reads GITHUB_OUTPUT or GITHUB_ENV: NAME=VALUE lines and
// NAME<<DELIMITER blocks.
func readCommandFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	lines := bufio.NewScanner(bytes.NewReader(data))
	for lines.Scan() {
		line := lines.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var value []string
			closed := false
			for lines.Scan() {
				if lines.Text() == delim {
					closed = true
					break
				}
				value = append(value, lines.Text())
			}
			if !closed {
				return nil, fmt.Errorf("%s: %s<<%s is never closed", path, name, delim)
			}
			out[name] = strings.Join(value, "\n")
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is neither NAME=VALUE nor NAME<<DELIMITER", path, line)
		}
		out[name] = value
	}
	return out, lines.Err()
}

// uses runs an action: this repository's composite action from its
// directory here, or one of the harness's emulated actions.
func (j *job) uses(uses string, with, env map[string]string, action *actionScope) (map[string]string, error) {
	t := j.r.t
	t.Helper()
	path, ref, ok := strings.Cut(uses, "@")
	if !ok || ref == "" {
		t.Fatalf("uses: %q names no ref", uses)
	}
	if dir, ok := j.r.localActions[path]; ok {
		return j.composite(dir, ref, with, env)
	}
	known := map[string][]string{
		"actions/checkout":          {"ref", "fetch-depth"},
		"actions/setup-go":          {"go-version"},
		"actions/cache":             {"path", "key"},
		"actions/upload-artifact":   {"name", "path", "retention-days"},
		"actions/download-artifact": {"name", "run-id", "github-token", "path"},
	}
	inputs, ok := known[path]
	if !ok {
		t.Fatalf("uses: %q is not an action the harness emulates", uses)
	}
	for k := range with {
		if !slices.Contains(inputs, k) {
			t.Fatalf("uses: %s with %s, an input the harness does not emulate", uses, k)
		}
	}
	switch path {
	case "actions/checkout":
		return nil, j.checkout(with)
	case "actions/setup-go":
		if with["go-version"] == "" {
			return nil, fmt.Errorf("setup-go without a go-version")
		}
		// setup-go puts go and GOPATH/bin on the PATH.
		j.path = append([]string{j.r.goBin, filepath.Join(j.home, "go", "bin")}, j.path...)
		return nil, nil
	case "actions/cache":
		// A cache miss: the runner's cache is empty on every run.
		if with["path"] == "" || with["key"] == "" || strings.Contains(with["key"], "--") || strings.HasSuffix(with["key"], "-") {
			return nil, fmt.Errorf("cache with path %q and key %q: one is empty or has an empty part", with["path"], with["key"])
		}
		return map[string]string{"cache-hit": "false"}, nil
	case "actions/upload-artifact":
		return nil, j.upload(with)
	case "actions/download-artifact":
		return nil, j.download(with)
	}
	panic("unreachable")
}

// composite runs the composite action in dir at ref: its inputs from with
// and their defaults, its steps in order with their own step contexts, its
// outputs from their values.
func (j *job) composite(dir, ref string, with, env map[string]string) (map[string]string, error) {
	t := j.r.t
	t.Helper()
	var act actionFile
	if err := decodeYAMLStrict(filepath.Join(dir, "action.yml"), &act); err != nil {
		t.Fatal(err)
	}
	if act.Runs.Using != "composite" {
		t.Fatalf("%s runs using %q; the harness runs composite actions", dir, act.Runs.Using)
	}
	scope := &actionScope{ref: ref, dir: dir, inputs: map[string]string{}}
	for k := range with {
		if _, ok := act.Inputs[k]; !ok {
			t.Fatalf("%s has no input %q", dir, k)
		}
	}
	defaults := j.context(nil, &actionScope{ref: ref, dir: dir})
	for k, in := range act.Inputs {
		v, ok := with[k]
		if !ok {
			var err error
			if v, err = defaults.interpolate(in.Default); err != nil {
				t.Fatalf("%s: the default of %s: %v", dir, k, err)
			}
		}
		if in.Required && v == "" {
			return nil, fmt.Errorf("input %s is required", k)
		}
		scope.inputs[k] = v
	}
	steps := strictMap{}
	outerFailed := j.failed
	j.failed = false
	for _, s := range act.Runs.Steps {
		j.step(s, env, steps, scope)
	}
	failed := j.failed
	j.failed = outerFailed
	ctx := j.context(steps, scope)
	outputs := map[string]string{}
	for k, out := range act.Outputs {
		v, err := ctx.interpolate(out.Value)
		if err != nil {
			t.Fatalf("%s: output %s: %v", dir, k, err)
		}
		outputs[k] = v
	}
	if failed {
		return outputs, fmt.Errorf("a step of the action failed")
	}
	return outputs, nil
}

// checkout is actions/checkout: the pull request's merge commit, or ref,
// fetched with the depth asked for (1 by default) into the workspace.
func (j *job) checkout(with map[string]string) error {
	ref := cmpOrString(with["ref"], j.github["ref"].(string))
	depth := cmpOrString(with["fetch-depth"], "1")
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-c", "advice.detachedHead=false"}, args...)...)
		cmd.Dir = j.res.workspace
		cmd.Env = j.environ(nil, nil, nil)
		cmd.Stdout, cmd.Stderr = j.log, j.log
		return cmd.Run()
	}
	remote := "refs/remotes/origin/" + ref
	if strings.HasPrefix(ref, "refs/pull/") {
		remote = "refs/remotes/pull/" + strings.TrimPrefix(ref, "refs/pull/")
	} else {
		ref = "refs/heads/" + ref
	}
	fetch := []string{"fetch", "--no-tags", "origin", "+" + ref + ":" + remote}
	if depth == "0" {
		fetch = []string{"fetch", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*", "+" + ref + ":" + remote}
	} else {
		fetch = append([]string{fetch[0], "--depth=" + depth}, fetch[1:]...)
	}
	checkout := []string{"checkout", "--force", remote}
	if branch, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		checkout = []string{"checkout", "--force", "-B", branch, remote}
	}
	for _, args := range [][]string{
		{"init", "-q"}, {"remote", "add", "origin", "file://" + j.r.origin}, fetch, checkout,
	} {
		if err := git(args...); err != nil {
			return fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

// upload is actions/upload-artifact of one file, kept under the run's id.
func (j *job) upload(with map[string]string) error {
	if strings.ContainsAny(with["path"], "*?\n") {
		j.r.t.Fatalf("upload-artifact of %q: the harness uploads one file", with["path"])
	}
	data, err := os.ReadFile(with["path"])
	if err != nil {
		return fmt.Errorf("upload-artifact: %w", err)
	}
	dir := filepath.Join(j.r.dir, "artifacts", fmt.Sprint(j.res.runID), with["name"])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, filepath.Base(with["path"])), data, 0o644)
}

// download is actions/download-artifact of a named artifact of another
// run, which takes a token.
func (j *job) download(with map[string]string) error {
	if with["run-id"] == "" || with["github-token"] == "" || with["name"] == "" {
		return fmt.Errorf("download-artifact of %q from run %q with a token %v: the harness downloads a named artifact of a run, with a token",
			with["name"], with["run-id"], with["github-token"] != "")
	}
	from := filepath.Join(j.r.dir, "artifacts", with["run-id"], with["name"])
	files, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("download-artifact: no artifact %s in run %s", with["name"], with["run-id"])
	}
	to := cmpOrString(with["path"], j.res.workspace)
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, f.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
