// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, allCommands(sub)...)
	}
	return out
}

// Every flag of every command can be set from GPUFLEET_<FLAG>, and its
// help says which variable; every command that does something has
// examples; -o means a format wherever it appears.
func TestEveryFlagHasItsVariableAndEveryCommandExamples(t *testing.T) {
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	for _, c := range allCommands(a.rootCommand()) {
		if c.Hidden || c.Name() == "help" || strings.HasPrefix(c.CommandPath(), "gpufleet completion") {
			continue
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Name == "version" || f.Hidden {
				return
			}
			if !strings.Contains(f.Usage, "[GPUFLEET_") {
				t.Errorf("%s --%s: its help names no GPUFLEET_ variable", c.CommandPath(), f.Name)
			}
			if f.Shorthand == "o" && !strings.Contains(f.Usage, "format") {
				t.Errorf("%s -o is not an output format: %q", c.CommandPath(), f.Usage)
			}
		})
		if c.Runnable() && c.Example == "" {
			t.Errorf("%s has no examples", c.CommandPath())
		}
	}
}

// A variable sets the flag the command line leaves alone; the command
// line wins over it.
func TestFlagsFromTheEnvironment(t *testing.T) {
	run1 := func(args ...string) int {
		return run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
	}
	if got := run1("plan", "--repo", "../../examples/fleet-repo"); got != 0 {
		t.Fatalf("plan: exit %d", got)
	}
	t.Setenv("GPUFLEET_DETAILED_EXITCODE", "true")
	if got := run1("plan", "--repo", "../../examples/fleet-repo"); got != 2 {
		t.Errorf("with GPUFLEET_DETAILED_EXITCODE=true plan exits %d, want 2", got)
	}
	if got := run1("plan", "--repo", "../../examples/fleet-repo", "--detailed-exitcode=false"); got != 0 {
		t.Errorf("the command line's --detailed-exitcode=false lost to the variable: exit %d", got)
	}
	t.Setenv("GPUFLEET_DETAILED_EXITCODE", "")
	t.Setenv("GPUFLEET_FLEET", "training,batch")
	var out bytes.Buffer
	run(context.Background(), []string{"plan", "--repo", "../../examples/fleet-repo"}, &out, &bytes.Buffer{})
	if !strings.Contains(out.String(), "fleet training") || !strings.Contains(out.String(), "fleet batch") || strings.Contains(out.String(), "fleet inference") {
		t.Errorf("GPUFLEET_FLEET=training,batch did not narrow the plan to them:\n%s", out.String())
	}
	t.Setenv("GPUFLEET_FLEET", "")
	t.Setenv("GPUFLEET_MAX_PRICE_AGE", "soon")
	var stderr bytes.Buffer
	if got := run(context.Background(), []string{"plan", "--repo", "../../examples/fleet-repo"}, &bytes.Buffer{}, &stderr); got != 1 || !strings.Contains(stderr.String(), "GPUFLEET_MAX_PRICE_AGE") {
		t.Errorf("a bad GPUFLEET_MAX_PRICE_AGE: exit %d, %s", got, stderr.String())
	}
}

func TestVersionFlagAndCompletions(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, &out, &bytes.Buffer{}); code != 0 || !strings.HasPrefix(out.String(), "gpufleet ") {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"plan", "-o", ""}, []string{"text", "json", "markdown"}},
		{[]string{"validate", "-o", ""}, []string{"text", "json"}},
		{[]string{"catalog", "refresh", "--cloud", ""}, []string{"aws", "azure", "gcp"}},
		{[]string{"plan", "--repo", "../../examples/fleet-repo", "--fleet", ""}, []string{"batch", "inference", "training"}},
	} {
		var got bytes.Buffer
		run(context.Background(), append([]string{cobra.ShellCompRequestCmd}, tt.args...), &got, &bytes.Buffer{})
		for _, w := range tt.want {
			if !strings.Contains(got.String(), w+"\n") {
				t.Errorf("completing %v: %q lacks %s", tt.args, got.String(), w)
			}
		}
	}
}
