// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestSetFaultsKeepsWhatIdenticalRulesFired(t *testing.T) {
	capacity := Fault{Cloud: "aws", Op: "RunInstances", Kind: FaultCapacity, Times: 2}
	throttle := Fault{Cloud: "gcp", Kind: FaultThrottle, Rate: 0.5}
	slow := Fault{Kind: FaultLatency, Rate: 1, Latency: Duration(time.Second)}
	fired := func(f Fault, n int) Fault { f.Fired = n; return f }
	tests := []struct {
		name     string
		had      []Fault
		declared []Fault
		want     []Fault
	}{
		{name: "the same rules", had: []Fault{fired(capacity, 2), fired(throttle, 7)}, declared: []Fault{capacity, throttle},
			want: []Fault{fired(capacity, 2), fired(throttle, 7)}},
		{name: "the same rules in another order", had: []Fault{fired(capacity, 2), fired(throttle, 7)}, declared: []Fault{throttle, capacity},
			want: []Fault{fired(throttle, 7), fired(capacity, 2)}},
		{name: "other rules", had: []Fault{fired(capacity, 2)}, declared: []Fault{throttle, slow},
			want: []Fault{throttle, slow}},
		{name: "a rule changed in times only", had: []Fault{fired(capacity, 2)}, declared: []Fault{{Cloud: "aws", Op: "RunInstances", Kind: FaultCapacity, Times: 3}},
			want: []Fault{{Cloud: "aws", Op: "RunInstances", Kind: FaultCapacity, Times: 3}}},
		{name: "a rule changed in code only", had: []Fault{fired(capacity, 2)}, declared: []Fault{{Cloud: "aws", Op: "RunInstances", Kind: FaultCapacity, Code: "InsufficientInstanceCapacity", Times: 2}},
			want: []Fault{{Cloud: "aws", Op: "RunInstances", Kind: FaultCapacity, Code: "InsufficientInstanceCapacity", Times: 2}}},
		{name: "a repeated rule takes one count each", had: []Fault{fired(capacity, 2), fired(capacity, 1)}, declared: []Fault{capacity, capacity, capacity},
			want: []Fault{fired(capacity, 2), fired(capacity, 1), capacity}},
		{name: "no rules", had: []Fault{fired(capacity, 2)}, declared: nil, want: []Fault{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := newWorld(t, Config{})
			for _, f := range tt.had {
				w.faults = append(w.faults, &f)
			}
			var declared []*Fault
			for _, f := range tt.declared {
				declared = append(declared, &f)
			}
			if err := w.SetFaults(declared...); err != nil {
				t.Fatal(err)
			}
			if got := w.Faults(); !slices.Equal(got, tt.want) {
				t.Errorf("faults = %+v, want %+v", got, tt.want)
			}
		})
	}
	w, _ := newWorld(t, Config{})
	if err := w.SetFaults(&Fault{Kind: "meteor", Times: 1}); err == nil {
		t.Error("SetFaults took a fault of no known kind")
	}
}

// What `sim serve --faults` does on every start: a counted fault that
// fired before a restart does not fire again after it, and a new file's
// rules are the only ones left.
func TestSetFaultsAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	file := func() []*Fault {
		return []*Fault{{Cloud: "aws", Op: "RunInstances", Kind: FaultCapacity, Times: 2}}
	}
	call := Call{Cloud: "aws", Op: "RunInstances", Zone: "us-east-1a"}
	w, _ := newWorld(t, Config{StatePath: path})
	if err := w.SetFaults(file()...); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if w.Intercept(call).Err == nil {
			t.Fatalf("call %d was spared by the fault", i)
		}
	}
	if err := w.Save(); err != nil {
		t.Fatal(err)
	}

	again, _ := newWorld(t, Config{StatePath: path})
	if err := again.SetFaults(file()...); err != nil {
		t.Fatal(err)
	}
	if got := again.Faults(); len(got) != 1 || got[0].Fired != 2 {
		t.Fatalf("faults after a restart with the same file = %+v, want the one rule, fired twice", got)
	}
	if out := again.Intercept(call); out.Err != nil {
		t.Errorf("the spent fault struck again after a restart: %+v", out.Err)
	}
	if err := again.Save(); err != nil {
		t.Fatal(err)
	}

	third, _ := newWorld(t, Config{StatePath: path})
	if err := third.SetFaults(&Fault{Cloud: "gcp", Kind: FaultThrottle, Rate: 0.5}); err != nil {
		t.Fatal(err)
	}
	if got := third.Faults(); len(got) != 1 || got[0].Cloud != "gcp" || got[0].Fired != 0 {
		t.Errorf("faults after a restart with another file = %+v, want only its rule", got)
	}
}
