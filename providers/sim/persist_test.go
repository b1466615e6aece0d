// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestSyncSavesWhatCallersChanged(t *testing.T) {
	tests := []struct {
		name string
		// change does something to the world; tick moves its clock.
		change    func(t *testing.T, w *World, tick func(time.Duration))
		syncSaves uint64 // how many saves Sync makes
		saveSaves uint64 // how many more saves a Save after it makes
	}{
		{name: "nothing", change: func(*testing.T, *World, func(time.Duration)) {}},
		{name: "reads", change: func(t *testing.T, w *World, _ func(time.Duration)) {
			w.Get("i-missing")
			w.List("aws", nil)
		}},
		{name: "a launch", syncSaves: 1, change: func(t *testing.T, w *World, _ func(time.Duration)) {
			if _, err := w.Launch(spec("t")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a fault firing", syncSaves: 1, change: func(t *testing.T, w *World, _ func(time.Duration)) {
			w.faults = []*Fault{{Kind: FaultThrottle, Times: 1}}
			w.Intercept(Call{Cloud: "aws", Op: "DescribeInstances"})
		}},
		// A restart would redo what time alone changed, so Sync leaves
		// it to Save.
		{name: "an operation settling", saveSaves: 1, change: func(t *testing.T, w *World, tick func(time.Duration)) {
			w.operations["op"] = &Operation{ID: "op", Cloud: "gcp", Kind: "insert", DoneAt: epoch.Add(time.Minute)}
			w.settleSoon(epoch.Add(time.Minute))
			tick(time.Minute)
			w.Operation("op")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, clock := newWorld(t, Config{StatePath: filepath.Join(t.TempDir(), "state.json")})
			tt.change(t, w, clock.Advance)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if got := w.Saves(); got != tt.syncSaves {
				t.Errorf("Sync saved %d times, want %d", got, tt.syncSaves)
			}
			if err := w.Sync(); err != nil || w.Saves() != tt.syncSaves {
				t.Errorf("a second Sync saved again (%d saves, %v)", w.Saves(), err)
			}
			if err := w.Save(); err != nil {
				t.Fatal(err)
			}
			if got := w.Saves() - tt.syncSaves; got != tt.saveSaves {
				t.Errorf("Save after Sync saved %d times, want %d", got, tt.saveSaves)
			}
		})
	}
}

// Callers that queue behind a save in progress are all covered by the one
// save that follows it.
func TestSyncSharesSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w, _ := newWorld(t, Config{StatePath: path, Capacity: 100})
	const callers = 20
	w.saving.Lock() // a save in progress
	var ids []string
	for i := range callers {
		res, err := w.Launch(LaunchSpec{Cloud: "aws", Zone: "us-east-1a", InstanceType: "g4dn.xlarge", Market: catalog.OnDemand, Token: string(rune('a' + i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Instance.ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() { errs <- w.Sync() })
	}
	w.saving.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := w.Saves(); got != 1 {
		t.Errorf("%d callers queued behind a save caused %d saves, want 1", callers, got)
	}
	again, _ := newWorld(t, Config{StatePath: path})
	for _, id := range ids {
		if _, ok := again.Get(id); !ok {
			t.Errorf("instance %s is not in the state file", id)
		}
	}
}

// BenchmarkSave measures one save of a world running a fleet-scale number
// of instances, each launched with its own token and the tags gpufleet
// puts on a node, as `sim serve --state` makes after every change a
// request made.
//
//	go test ./providers/sim -run '^$' -bench Save -benchmem
func BenchmarkSave(b *testing.B) {
	const instances = 2000
	clock := NewManualClock(epoch)
	w, err := New(Config{Clock: clock, Capacity: instances, StatePath: filepath.Join(b.TempDir(), "state.json")})
	if err != nil {
		b.Fatal(err)
	}
	for i := range instances {
		s := spec(fmt.Sprintf("token-%04d", i))
		s.Tags = map[string]string{"gpufleet-fleet": "inference", "gpufleet-workload": "serve", "gpufleet-offer": "aws/us-east-1a/p5.48xlarge/on-demand", "Name": fmt.Sprintf("inference-serve-%04d", i)}
		if _, err := w.Launch(s); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		w.dirty = true
		if err := w.Save(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	info, err := os.Stat(w.cfg.StatePath)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(info.Size()), "file-bytes")
	b.ReportMetric(instances, "instances")
}
