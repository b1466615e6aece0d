// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
)

// shellcheck is the shellcheck command, or "" when it is not installed and
// GPUFLEET_REQUIRE_CLIENTS does not name it, which skips what needs it.
func shellcheck(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("shellcheck")
	if err == nil {
		return path
	}
	if slices.Contains(strings.Split(os.Getenv("GPUFLEET_REQUIRE_CLIENTS"), ","), "shellcheck") {
		t.Fatal("shellcheck is not installed, and GPUFLEET_REQUIRE_CLIENTS requires it: apt-get install shellcheck")
	}
	t.Log("shellcheck not installed (apt-get install shellcheck): the scripts are not checked")
	return ""
}

// Every workflow, the examples' and the project's own, passes actionlint:
// their syntax, expressions, contexts, permissions and the actions they
// use, and with shellcheck their run: scripts.
func TestEveryWorkflowPassesActionlint(t *testing.T) {
	var files []string
	for _, glob := range []string{"workflows/*.yml", "../.github/workflows/*.yml"} {
		found, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	if len(files) < 3 {
		t.Fatalf("found only %v to lint", files)
	}
	linter, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{Shellcheck: shellcheck(t)})
	if err != nil {
		t.Fatal(err)
	}
	problems, err := linter.LintFiles(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s:%d:%d: %s [%s]", p.Filepath, p.Line, p.Column, p.Message, p.Kind)
	}
	t.Logf("linted %s", strings.Join(files, ", "))
}

// actionlint reads workflows, not a composite action's metadata: the
// action's bash steps and the installer pass shellcheck on their own.
func TestTheActionsScriptsPassShellcheck(t *testing.T) {
	sc := shellcheck(t)
	if sc == "" {
		t.Skip("shellcheck not installed")
	}
	raw, err := os.ReadFile("github-action/action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Runs struct {
			Steps []struct {
				Name  string `yaml:"name"`
				Shell string `yaml:"shell"`
				Run   string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatal(err)
	}
	scripts := 0
	for i, step := range action.Runs.Steps {
		if step.Run == "" {
			continue
		}
		if step.Shell != "bash" {
			t.Errorf("step %d (%s) runs with shell %q, not bash", i+1, step.Name, step.Shell)
			continue
		}
		if strings.Contains(step.Run, "${{") {
			t.Errorf("step %d (%s) puts an expression into its script's text: pass it through env", i+1, step.Name)
		}
		// GitHub sets these for every step.
		script := "#!/bin/bash\n: \"$GITHUB_OUTPUT $GITHUB_ENV $GITHUB_PATH $GITHUB_ACTION_PATH $RUNNER_TEMP $RUNNER_TOOL_CACHE $RUNNER_ARCH\"\n" + step.Run
		cmd := exec.Command(sc, "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("step %d (%s) fails shellcheck: %v\n%s", i+1, step.Name, err, out)
		}
		scripts++
	}
	if scripts < 5 {
		t.Errorf("checked only %d scripts of the action", scripts)
	}
	for _, file := range []string{"github-action/install.sh", "../.ci/run", "../.ci/release-check"} {
		if out, err := exec.Command(sc, file).CombinedOutput(); err != nil {
			t.Errorf("%s fails shellcheck: %v\n%s", file, err, out)
		}
	}
}
