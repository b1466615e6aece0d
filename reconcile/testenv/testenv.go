// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/providers/lambda"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// Env is a fleet repository at Origin (URL for Git) and, unless made with
// NewOrigin, the emulated clouds serving World on loopback.
type Env struct {
	t        testing.TB
	Dir      string
	Origin   string
	URL      string
	World    *sim.World
	Emulator *emulator.Emulator
	pushes   int
}

// Example is the example fleet repository, examples/fleet-repo.
func Example(t testing.TB) fs.FS {
	t.Helper()
	src, err := fs.Sub(examples.FleetRepo, "fleet-repo")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// New is the example fleets and emulated clouds made with cfg.
func New(t testing.TB, cfg sim.Config) *Env {
	t.Helper()
	return NewFrom(t, cfg, Example(t))
}

// NewFrom is New for any fleet repository.
func NewFrom(t testing.TB, cfg sim.Config, src fs.FS) *Env {
	t.Helper()
	e := NewOrigin(t, src)
	var err error
	if e.World, err = sim.New(cfg); err != nil {
		t.Fatal(err)
	}
	// Injected throttling asks for 50 ms rather than ARM's second: the
	// runs still back off as Azure asks, and tests that throttle often
	// do not spend their time waiting.
	if e.Emulator, err = emulator.Start(e.World, emulator.Options{ARMThrottleRetryAfter: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Emulator.Close(context.Background()) })
	return e
}

// NewOrigin is the repository alone, for tests that run the clouds
// another way (the command's --sim, a process of its own).
func NewOrigin(t testing.TB, src fs.FS) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{t: t, Dir: dir, Origin: filepath.Join(dir, "origin.git")}
	if err := examples.Seed(e.Origin, filepath.Join(dir, "seed"), src, "Example fleets"); err != nil {
		t.Fatal(err)
	}
	if err := quietOrigin(e.Origin); err != nil {
		t.Fatal(err)
	}
	e.URL = "file://" + e.Origin
	return e
}

// quietOrigin turns off the `git gc --auto` that git-receive-pack starts
// after every push, as a busy server repository would: a test's runs push
// tens of times, and the collection, a process each, finds nothing to do.
func quietOrigin(dir string) error {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	cfg.Raw.Section("receive").SetOption("autogc", "false")
	return repo.SetConfig(cfg)
}

// Endpoints point providers at the emulated clouds.
func (e *Env) Endpoints() clouds.Endpoints {
	ep := e.Emulator.Endpoints
	return clouds.Endpoints{AWS: ep.EC2, Azure: ep.ARM, GCP: ep.GCE, Lambda: ep.Lambda, OCI: ep.OCI}
}

// Push commits a file to the origin from a clone of its own, as a person
// would, and returns the commit.
func (e *Env) Push(path, content, message string) plumbing.Hash {
	e.t.Helper()
	e.pushes++
	dir := filepath.Join(e.Dir, fmt.Sprintf("person-%d", e.pushes))
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: e.URL})
	if err != nil {
		e.t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := wt.Add(path); err != nil {
		e.t.Fatal(err)
	}
	who := &object.Signature{Name: "a person", Email: "person@example.com", When: time.Now()}
	hash, err := wt.Commit(message, &git.CommitOptions{Author: who, Committer: who, AllowEmptyCommits: true})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return hash
}

// Repo opens the origin.
func (e *Env) Repo() *git.Repository {
	e.t.Helper()
	repo, err := git.PlainOpen(e.Origin)
	if err != nil {
		e.t.Fatal(err)
	}
	return repo
}

// Head is the commit at the origin's main branch.
func (e *Env) Head() *object.Commit {
	e.t.Helper()
	repo := e.Repo()
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// Statuses reads every status/*.json at the origin's head, failing on one
// that is not valid JSON.
func (e *Env) Statuses() (fleets map[string]*status.FleetStatus, state *status.RepoState) {
	e.t.Helper()
	tree, err := e.Head().Tree()
	if err != nil {
		e.t.Fatal(err)
	}
	fleets = map[string]*status.FleetStatus{}
	err = tree.Files().ForEach(func(f *object.File) error {
		name, ok := strings.CutPrefix(f.Name, "status/")
		if !ok || !strings.HasSuffix(name, ".json") {
			return nil
		}
		text, err := f.Contents()
		if err != nil {
			return err
		}
		if name == status.StateFile {
			state = &status.RepoState{}
			return json.Unmarshal([]byte(text), state)
		}
		var st status.FleetStatus
		if err := json.Unmarshal([]byte(text), &st); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		fleets[st.Fleet] = &st
		return nil
	})
	if err != nil {
		e.t.Fatalf("a status file at the head is not valid: %v", err)
	}
	return fleets, state
}

// StatusAtHead is one fleet's status at the origin's head.
func (e *Env) StatusAtHead(fleet string) *status.FleetStatus {
	e.t.Helper()
	fleets, _ := e.Statuses()
	st, ok := fleets[fleet]
	if !ok {
		e.t.Fatalf("no status/%s.json at the head", fleet)
	}
	return st
}

// LockMessage is the message of the commit the origin's lock ref points
// at, "" when there is no lock ref.
func (e *Env) LockMessage() string {
	e.t.Helper()
	repo := e.Repo()
	ref, err := repo.Reference("refs/gpufleet/lock", true)
	if err != nil {
		return ""
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Message
}

// Live counts running or pending instances per fleet/workload, from the
// emulator itself.
func (e *Env) Live() map[string]int {
	out := map[string]int{}
	for _, inst := range e.World.Instances() {
		if inst.State == sim.StatePending || inst.State == sim.StateRunning {
			fleet, workload := Owner(inst)
			out[fleet+"/"+workload]++
		}
	}
	return out
}

// Owner is the fleet and workload an emulated instance is a node of: by
// its ownership tags, or on Lambda Cloud, which has none, by its name.
func Owner(inst *sim.Instance) (fleet, workload string) {
	if inst.Cloud == "lambda" {
		fleet, workload, _, _ = lambda.ParseNodeName(inst.Properties["name"])
		return fleet, workload
	}
	return inst.Tags[providers.TagFleet], inst.Tags[providers.TagWorkload]
}

// Creates counts the create calls the clouds received, including those
// still waiting out an injected latency.
func (e *Env) Creates() int {
	calls := e.World.Calls()
	return calls["aws RunInstances"] + calls["azure put"] + calls["gcp instances.insert"] + calls["gcp instances.bulkInsert"] + calls["lambda launch"] + calls["oci LaunchInstance"]
}

// Mutations counts the calls that change a cloud: creates and deletes.
func (e *Env) Mutations() int {
	calls := e.World.Calls()
	return e.Creates() + calls["aws TerminateInstances"] + calls["azure delete"] + calls["gcp instances.delete"] + calls["lambda terminate"] + calls["oci TerminateInstance"]
}

// NodeToken is the token of the node an emulated instance is: the token it
// is tagged with, or, for a node launched in a batch under the batch's
// first token, the token of its own slot — by its launch index on EC2, by
// its name on GCE. Two live instances with one node token are one node
// launched twice.
func NodeToken(inst *sim.Instance) string {
	fleet, workload, token := inst.Tags[providers.TagFleet], inst.Tags[providers.TagWorkload], inst.Tags[providers.TagToken]
	switch inst.Cloud {
	case "aws":
		if i, err := strconv.Atoi(inst.Properties["amiLaunchIndex"]); err == nil && i > 0 {
			if own, ok := planner.TokenAt(token, i); ok {
				return own
			}
			return fmt.Sprintf("%s#%d", token, i)
		}
	case "gcp":
		if own, ok := providers.NodeToken(fleet, workload, token, inst.Name); ok {
			return own
		}
		return token + "#" + inst.Name
	case "lambda":
		// Lambda has no tags: a node's name carries its token.
		if _, _, own, ok := lambda.ParseNodeName(inst.Properties["name"]); ok {
			return own
		}
		return "#" + inst.ID
	}
	return token
}
