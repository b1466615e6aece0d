// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

const exampleRepo = "../examples/fleet-repo"

func TestLoadExampleAppliesDefaults(t *testing.T) {
	repo, err := Load(exampleRepo)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range repo.Fleets {
		names = append(names, f.Name)
	}
	if want := []string{"batch", "inference", "training"}; !slices.Equal(names, want) {
		t.Fatalf("fleets = %v, want %v (sorted)", names, want)
	}
	cfg := repo.Config
	if cfg.Defaults.BlocklistFor != 30*time.Minute || cfg.Defaults.Disruption.Budget != (Budget{Nodes: 8, Field: "defaults.disruption.budget", Raw: "8"}) || cfg.Defaults.Prune {
		t.Errorf("defaults = %+v", cfg.Defaults)
	}
	if got := cfg.Clouds.Enabled(); !slices.Equal(got, []string{"aws", "azure", "gcp", "lambda"}) {
		t.Errorf("enabled clouds = %v", got)
	}
	if l := cfg.Clouds.Lambda; l.Launch.SSHKeyName != "gpufleet" || !slices.Equal(l.Regions, []string{"us-east-1", "us-south-1", "us-west-1"}) || l.Launch.Image != "" {
		t.Errorf("lambda = %+v", l)
	}
	if cfg.Clouds.AWS.Launch.DiskGB != 500 || !strings.HasPrefix(cfg.Clouds.AWS.Launch.Image, "resolve:ssm:") {
		t.Errorf("aws launch = %+v", cfg.Clouds.AWS.Launch)
	}
	if cfg.Clouds.GCP.Launch.DiskGB != 200 || cfg.Clouds.Azure.Launch.AdminUsername != "mlops" {
		t.Errorf("launch defaults not applied: gcp disk %d, azure user %q", cfg.Clouds.GCP.Launch.DiskGB, cfg.Clouds.Azure.Launch.AdminUsername)
	}

	inference, _ := repo.Fleet("inference")
	embed := inference.Workloads[1]
	if embed.Name != "embed" || embed.GPU.Model != "A10G" {
		t.Errorf("embed GPU = %q, want the A10 alias normalised to A10G", embed.GPU.Model)
	}
	if embed.Capacity != CapacityOnDemand || !embed.Movable || embed.RunHours != 720 || embed.Spread.MaxPerCloud != 1 {
		t.Errorf("embed defaults = capacity %q movable %v runHours %v maxPerCloud %v", embed.Capacity, embed.Movable, embed.RunHours, embed.Spread.MaxPerCloud)
	}
	if embed.Pos.File != "fleets/inference.cue" || embed.Pos.Line == 0 {
		t.Errorf("embed position = %v", embed.Pos)
	}
	batch, _ := repo.Fleet("batch")
	if got := batch.Workloads[0].Placement.Clouds; !slices.Equal(got, []string{"aws", "azure", "gcp", "lambda"}) {
		t.Errorf("batch clouds = %v, want every enabled cloud", got)
	}
	training, _ := repo.Fleet("training")
	finetune, pretrain := training.Workloads[0], training.Workloads[1]
	if finetune.Name != "finetune" || !slices.Equal(finetune.Placement.Clouds, []string{"aws", "gcp", "lambda"}) || finetune.Capacity != CapacityOnDemand {
		t.Errorf("finetune = %+v", finetune)
	}
	if pretrain.Name != "pretrain" || !pretrain.Gang() || pretrain.Movable || pretrain.Data == nil || pretrain.Data.SizeGB != 2000 {
		t.Errorf("pretrain = %+v", pretrain)
	}
	if *training.Budget != 500 || training.Pos != (Position{File: "fleets/training.cue", Line: 5, Column: 9}) {
		t.Errorf("training budget %v at %v", *training.Budget, training.Pos)
	}
}

func TestLoadExpandsEmptyRegionLists(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte("package gpufleet\n\ngpufleet: clouds: gcp: project: \"acme-gpu-fleet\"\n"))
	repo, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range catalog.Default().RegionsOf("gcp") {
		want = append(want, r.Name)
	}
	if got := repo.Config.Clouds.Regions("gcp"); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("gcp regions = %v, want the catalog's %v", got, want)
	}
	if len(repo.Fleets) != 0 {
		t.Errorf("fleets = %v, want none", repo.Fleets)
	}
}

// loadErrors loads dir and returns its errors as text, failing the test if
// the load succeeds.
func loadErrors(t *testing.T, dir string) string {
	t.Helper()
	_, err := Load(dir)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load = %v, want Errors", err)
	}
	return errs.Error()
}

const minimalConfig = "package gpufleet\n\ngpufleet: clouds: aws: regions: [\"us-east-1\"]\n"

func minimalRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte(minimalConfig))
	return dir
}

func TestLoadBadInput(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{{
		name: "symlink outside the repository",
		setup: func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "secret.cue")
			writeFile(t, outside, []byte("package gpufleet\n"))
			mkdir(t, filepath.Join(dir, "fleets"))
			symlink(t, outside, filepath.Join(dir, "fleets", "evil.cue"))
		},
		want: "fleets/evil.cue: refused: the file is a symlink that leads outside the repository",
	}, {
		name: "relative symlink climbing out",
		setup: func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "fleets"))
			symlink(t, "../../../../etc/hostname", filepath.Join(dir, "fleets", "up.cue"))
		},
		want: "fleets/up.cue: refused: the file is a symlink that leads outside the repository",
	}, {
		name: "file over the size limit",
		setup: func(t *testing.T, dir string) {
			big := append([]byte("package gpufleet\n"), bytes.Repeat([]byte("// padding\n"), MaxFileSize/10)...)
			writeFile(t, filepath.Join(dir, "fleets", "big.cue"), big)
		},
		want: fmt.Sprintf("fleets/big.cue: file is %d bytes, over the limit of %d bytes", 17+MaxFileSize/10*11, MaxFileSize),
	}, {
		name: "not UTF-8",
		setup: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "fleets", "latin1.cue"), []byte("package gpufleet\n\n// caf\xe9\n"))
		},
		want: "fleets/latin1.cue:3:7: file is not valid UTF-8",
	}, {
		name: "named pipe",
		setup: func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "policy"))
			if err := syscall.Mkfifo(filepath.Join(dir, "policy", "pipe.cue"), 0o644); err != nil {
				t.Skip("no named pipes here:", err)
			}
		},
		want: "policy/pipe.cue: not a regular file (p---------)",
	}, {
		name: "directory named like a file",
		setup: func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "fleets", "odd.cue"))
			writeFile(t, filepath.Join(dir, "fleets", "odd.cue", "real.cue"), []byte("package gpufleet\n\nfleets: x: owner: 1\n"))
		},
		want: "fleets/odd.cue/real.cue:3:19: fleets.x.owner: conflicting values 1 and string (mismatched types int and string)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := minimalRepo(t)
			tt.setup(t, dir)
			if got := loadErrors(t, dir); got != tt.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestLoadFollowsSymlinksInsideTheRepository(t *testing.T) {
	dir := minimalRepo(t)
	writeFile(t, filepath.Join(dir, "shared", "team.cue"), []byte("package gpufleet\n\nfleets: shared: owner: \"ops\"\n"))
	mkdir(t, filepath.Join(dir, "fleets"))
	symlink(t, "../shared/team.cue", filepath.Join(dir, "fleets", "team.cue"))
	repo, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(repo.Fleets) != 1 || repo.Fleets[0].Owner != "ops" {
		t.Errorf("fleets = %+v", repo.Fleets)
	}
}

func TestLoadEmptyOrMissingDirectory(t *testing.T) {
	if got, want := loadErrors(t, t.TempDir()), "gpufleet.cue: not found: a gpufleet repository has gpufleet.cue at its root"; got != want {
		t.Errorf("empty directory: %s, want %s", got, want)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if got := loadErrors(t, missing); !strings.Contains(got, missing+": cannot open the repository: no such file or directory") {
		t.Errorf("missing directory: %s", got)
	}
}

func TestLoadThousandsOfFiles(t *testing.T) {
	dir := minimalRepo(t)
	const n = 2000
	for i := range n {
		src := fmt.Sprintf("package gpufleet\n\nfleets: \"f%04d\": {\n\towner: \"team\"\n\tworkloads: w: {gpu: {model: \"T4\", perNode: 1}, nodes: %d}\n}\n", i, i%5)
		writeFile(t, filepath.Join(dir, "fleets", fmt.Sprintf("team%02d", i%20), fmt.Sprintf("f%04d.cue", i)), []byte(src))
	}
	// One mistake among them must still be found and placed.
	writeFile(t, filepath.Join(dir, "fleets", "team07", "f0007.cue"), []byte("package gpufleet\n\nfleets: f0007: {owner: \"team\", workloads: w: {gpu: {model: \"T4\", perNode: 1}, nodes: -2}}\n"))
	got := loadErrors(t, dir)
	if want := "fleets/team07/f0007.cue:3:86: fleets.f0007.workloads.w.nodes: invalid value -2 (out of bound >=0)"; got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
	writeFile(t, filepath.Join(dir, "fleets", "team07", "f0007.cue"), []byte("package gpufleet\n\nfleets: f0007: owner: \"team\"\n"))
	repo, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(repo.Fleets) != n || len(repo.Files) != n+1 {
		t.Errorf("loaded %d fleets from %d files, want %d from %d", len(repo.Fleets), len(repo.Files), n, n+1)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
