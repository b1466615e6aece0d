// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

func TestResourcesAreKeptInOrderAndSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w, clock := newWorld(t, Config{StatePath: path})
	if !w.PutResource(Resource{Cloud: "aws", Kind: "subnet", ID: "subnet-b", Region: "us-east-1", Body: json.RawMessage(`{"cidr":"10.0.1.0/24"}`)}) {
		t.Fatal("the first put of subnet-b did not create it")
	}
	clock.Advance(time.Minute)
	w.PutResource(Resource{Cloud: "aws", Kind: "subnet", ID: "subnet-a", Region: "us-east-1"})
	w.PutResource(Resource{Cloud: "aws", Kind: "vpc", ID: "vpc-1"})
	w.PutResource(Resource{Cloud: "gcp", Kind: "subnet", ID: "subnet-a"})
	clock.Advance(time.Minute)
	if w.PutResource(Resource{Cloud: "aws", Kind: "subnet", ID: "subnet-b", Body: json.RawMessage(`{"cidr":"10.0.2.0/24"}`)}) {
		t.Fatal("a second put of subnet-b created it again")
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}

	again, err := New(Config{StatePath: path, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	subnets := again.Resources("aws", "subnet", nil)
	if len(subnets) != 2 || subnets[0].ID != "subnet-b" || subnets[1].ID != "subnet-a" {
		t.Fatalf("subnets after a restart = %+v, want subnet-b then subnet-a (creation order)", subnets)
	}
	var body bytes.Buffer
	if err := json.Compact(&body, subnets[0].Body); err != nil || body.String() != `{"cidr":"10.0.2.0/24"}` || !subnets[0].Created.Equal(epoch) {
		t.Errorf("subnet-b = %s created %v; want the second body, created at the first put", subnets[0].Body, subnets[0].Created)
	}
	if got := again.Resources("aws", "subnet", func(r Resource) bool { return r.ID == "subnet-a" }); len(got) != 1 {
		t.Errorf("filtered list = %+v", got)
	}
	if !again.DeleteResource("aws", "subnet", "subnet-a") || again.DeleteResource("aws", "subnet", "subnet-a") {
		t.Error("a delete did not report what was there")
	}
	if _, ok := again.GetResource("gcp", "subnet", "subnet-a"); !ok {
		t.Error("deleting AWS's subnet-a removed GCP's")
	}
}

func TestTheLatencyIsKeptUnlessTheCallerChoosesOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w, _ := newWorld(t, Config{StatePath: path})
	want := Latency{Launch: 3 * time.Second, Operation: 5 * time.Second}
	if err := w.SetLatency(want); err != nil {
		t.Fatal(err)
	}
	if err := w.SetLatency(Latency{Launch: -time.Second}); err == nil {
		t.Error("a negative latency was accepted")
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	kept, err := New(Config{StatePath: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := kept.Latency(); got != want {
		t.Errorf("latency after a restart = %+v, want %+v", got, want)
	}
	chosen, err := New(Config{StatePath: path, OperationTime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := chosen.Latency(); got != (Latency{Operation: time.Second}) {
		t.Errorf("latency the caller chose = %+v, want only its own", got)
	}
}

func TestAnEC2InstanceShutsDownForTheOperationTime(t *testing.T) {
	w, clock := newWorld(t, Config{PendingFor: 2 * time.Second, OperationTime: 4 * time.Second})
	res, err := w.Launch(spec("t1"))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Instance.ID
	steps := []struct {
		after time.Duration
		do    func()
		want  State
	}{
		{0, nil, StatePending},
		{time.Second, nil, StatePending},
		{time.Second, nil, StateRunning},
		{0, func() {
			if _, err := w.Terminate(id); err != nil {
				t.Fatal(err)
			}
		}, StateShuttingDown},
		{3 * time.Second, nil, StateShuttingDown},
		{time.Second, nil, StateTerminated},
	}
	for i, s := range steps {
		clock.Advance(s.after)
		if s.do != nil {
			s.do()
		}
		inst, ok := w.Get(id)
		if !ok || inst.State != s.want {
			t.Fatalf("step %d: state = %v (found %v), want %v", i, inst.State, ok, s.want)
		}
	}
}
