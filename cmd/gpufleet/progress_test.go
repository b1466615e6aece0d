// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func progressActions() []planner.Action {
	aws := planner.OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g6.2xlarge", Market: catalog.OnDemand}
	gcp := planner.OfferKey{Cloud: "gcp", Region: "us-central1", Zone: "us-central1-a", InstanceType: "g2-standard-4", Market: catalog.OnDemand}
	var out []planner.Action
	for range 300 {
		out = append(out, planner.Action{Kind: planner.Create, Offer: aws})
	}
	out = append(out, planner.Action{Kind: planner.Create, Offer: gcp}, planner.Action{Kind: planner.Delete, Offer: gcp})
	return out
}

// Off a terminal, 302 actions make a handful of lines, not 302: one when
// the round starts, one every interval, and one when all are done.
func TestProgressOffATerminalPrintsAFewLines(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &out, every: 5 * time.Second, now: func() time.Time { return clock }}
	actions := progressActions()
	p.applying(1, nil, actions)
	for i, a := range actions {
		clock = clock.Add(100 * time.Millisecond) // 30 s in all
		res := status.ActionResult{Kind: a.Kind, Offer: a.Offer.String()}
		if i%100 == 7 {
			res.Error = "InsufficientInstanceCapacity"
		}
		p.applied(res)
	}
	p.done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || len(lines) > 9 {
		t.Fatalf("%d lines for 302 actions over 30 s:\n%s", len(lines), out.String())
	}
	if lines[0] != "Applying 301 to create, 1 to delete" {
		t.Errorf("first line %q", lines[0])
	}
	want := "  aws: 297 created, 0 deleted, 3 tries failed, 0 pending · gcp: 1 created, 1 deleted, 0 tries failed, 0 pending"
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line\n%q, want\n%q", last, want)
	}
	if strings.Contains(out.String(), "\r") || strings.Contains(out.String(), "\033") {
		t.Error("terminal control sequences off a terminal")
	}
}

// On a terminal the line is redrawn in place and ended before the summary.
func TestProgressOnATerminalRedrawsOneLine(t *testing.T) {
	var out bytes.Buffer
	p := &progress{w: &out, terminal: true, every: time.Hour, now: time.Now}
	actions := progressActions()[:3]
	p.applying(1, nil, actions)
	for _, a := range actions {
		p.applied(status.ActionResult{Kind: a.Kind, Offer: a.Offer.String()})
	}
	p.done()
	if n := strings.Count(out.String(), "\r\033[K"); n != 4 {
		t.Errorf("%d redraws, want 4 (the start and each action)", n)
	}
	if strings.Count(out.String(), "\n") != 2 || !strings.HasSuffix(out.String(), "pending\n") {
		t.Errorf("the display was not ended with one newline: %q", out.String())
	}
}

func TestColourOnlyWhereItIsWanted(t *testing.T) {
	got := string(colourLines([]byte("Plan: 1 to create\n  + create a\n  - delete b\n  ! refused c\nplain\n")))
	for _, want := range []string{green + "  + create a" + reset, red + "  - delete b" + reset, yellow + "  ! refused c" + reset, "\nplain\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	var buf bytes.Buffer
	if colourful(&buf) {
		t.Error("a buffer takes colour")
	}
}

// On a real terminal (a pty from script(1)) the demo shows its plan before
// it applies, redraws its progress in place and colours its creates; with
// NO_COLOR set to anything but the empty string it does not colour
// (no-color.org: an empty NO_COLOR asks for nothing).
func TestOnATerminal(t *testing.T) {
	t.Parallel()
	scriptCmd, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed: util-linux")
	}
	bin := buildGpufleet(t)
	for _, value := range []string{"unset", "1", ""} {
		noColor := value == "1"
		dir := t.TempDir()
		cmd := exec.Command(scriptCmd, "-qec", bin+" demo --dir "+filepath.Join(dir, "demo"), "/dev/null")
		cmd.Env = append(os.Environ(), "TERM=xterm")
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
		if value != "unset" {
			cmd.Env = append(cmd.Env, "NO_COLOR="+value)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo on a terminal: %v\n%s", err, out)
		}
		text := string(out)
		plan, applying, summary := strings.Index(text, "Actions: 22 to create"), strings.Index(text, "Applying 22 to create"), strings.Index(text, "Applied in 1 round")
		if plan < 0 || applying < plan || summary < applying {
			t.Errorf("plan at %d, progress at %d, summary at %d: want them in that order\n%s", plan, applying, summary, text)
		}
		if !strings.Contains(text, "\r\033[K") {
			t.Error("the progress was not redrawn in place")
		}
		if coloured := strings.Contains(text, green+"  + 4 × batch/eval"); coloured == noColor {
			t.Errorf("NO_COLOR %q, coloured %v", value, coloured)
		}
	}
}
