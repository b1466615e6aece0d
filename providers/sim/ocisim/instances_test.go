// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var instanceID = regexp.MustCompile(`^ocid1\.instance\.oc1\.us-ashburn-1\.[a-z2-7]{60}$`)

func TestLifecycle(t *testing.T) {
	f := newFront(t, sim.Config{PendingFor: time.Minute, OperationTime: 30 * time.Second}, Options{})
	ctx := context.Background()
	resp, err := f.launchWith(f.compute(), details(ad1, a10, "gf.train.w.x"), "token-1")
	if err != nil {
		t.Fatal(err)
	}
	inst := resp.Instance
	if !instanceID.MatchString(*inst.Id) {
		t.Fatalf("launched %s, want an instance OCID of us-ashburn-1", *inst.Id)
	}
	if resp.Etag == nil || *resp.Etag == "" || resp.OpcRequestId == nil || *resp.OpcRequestId == "" {
		t.Errorf("the launch answered without an etag or opc-request-id: %v, %v", resp.Etag, resp.OpcRequestId)
	}
	if inst.LifecycleState != core.InstanceLifecycleStateProvisioning || *inst.AvailabilityDomain != ad1 || *inst.CompartmentId != compartment ||
		*inst.Region != ashburn || *inst.Shape != a10 || *inst.DisplayName != "gf.train.w.x" || inst.FreeformTags["gpufleet.dev/owner"] != "test" {
		t.Fatalf("a new instance is %v", inst)
	}
	if !inst.TimeCreated.Equal(epoch) {
		t.Errorf("the instance was created at %v, want the world's now, %v", inst.TimeCreated, epoch)
	}
	src, ok := inst.SourceDetails.(core.InstanceSourceViaImageDetails)
	if !ok || *src.ImageId != image {
		t.Errorf("the instance boots from %#v, want the image %s", inst.SourceDetails, image)
	}
	if inst.ShapeConfig == nil || *inst.ShapeConfig.Gpus != 1 || *inst.ShapeConfig.Ocpus != 15 || *inst.ShapeConfig.MemoryInGBs != 240 {
		t.Errorf("the instance's shape config is %v", inst.ShapeConfig)
	}
	if inst.Metadata["ssh_authorized_keys"] != sshKey {
		t.Errorf("the instance's metadata is %v, want its SSH key", inst.Metadata)
	}

	state := func() core.InstanceLifecycleStateEnum {
		t.Helper()
		got, err := f.get(*inst.Id)
		if err != nil {
			t.Fatal(err)
		}
		return got.LifecycleState
	}
	f.clock.Advance(time.Minute - time.Nanosecond)
	if s := state(); s != core.InstanceLifecycleStateProvisioning {
		t.Fatalf("just before the launch time the instance is %s, want PROVISIONING", s)
	}
	f.clock.Advance(time.Nanosecond)
	if s := state(); s != core.InstanceLifecycleStateRunning {
		t.Fatalf("after the launch time the instance is %s, want RUNNING", s)
	}

	terminate := func() (core.TerminateInstanceResponse, error) {
		return f.compute().TerminateInstance(ctx, core.TerminateInstanceRequest{InstanceId: inst.Id, PreserveBootVolume: common.Bool(false)})
	}
	term, err := terminate()
	if err != nil {
		t.Fatal(err)
	}
	if term.RawResponse.StatusCode != http.StatusNoContent {
		t.Errorf("a terminate answered %d, want 204", term.RawResponse.StatusCode)
	}
	if s := state(); s != core.InstanceLifecycleStateTerminating {
		t.Fatalf("after the terminate the instance is %s, want TERMINATING", s)
	}
	// A second terminate while it is terminating is answered as the first.
	if term, err := terminate(); err != nil || term.RawResponse.StatusCode != http.StatusNoContent {
		t.Fatalf("a second terminate answered %v", err)
	}
	f.clock.Advance(30 * time.Second)
	_, err = f.get(*inst.Id)
	wantServiceError(t, err, http.StatusNotFound, CodeNotAuthorizedOrNotFound)
	_, err = terminate()
	wantServiceError(t, err, http.StatusNotFound, CodeNotAuthorizedOrNotFound)
}

// Each region's API knows its own instances only.
func TestInstancesAreRegional(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	inst := f.launch(details(ad1, a10, "n"), "t")
	elsewhere := f.computeIn(frankfurt, testKey())
	_, err := elsewhere.GetInstance(context.Background(), core.GetInstanceRequest{InstanceId: inst.Id})
	wantServiceError(t, err, http.StatusNotFound, CodeNotAuthorizedOrNotFound)
	list, err := elsewhere.ListInstances(context.Background(), core.ListInstancesRequest{CompartmentId: common.String(compartment)})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("Frankfurt lists %d instances (%v), want none of Ashburn's", len(list.Items), err)
	}
	fra := f.launchOn(elsewhere, details("gpuf:EU-FRANKFURT-1-AD-1", a10, "n"))
	if !strings.HasPrefix(*fra.Id, "ocid1.instance.oc1.eu-frankfurt-1.") || *fra.Region != frankfurt {
		t.Errorf("a Frankfurt instance is %s in %s", *fra.Id, *fra.Region)
	}
}

func (f *front) launchOn(c core.ComputeClient, d core.LaunchInstanceDetails) core.Instance {
	f.t.Helper()
	resp, err := c.LaunchInstance(context.Background(), core.LaunchInstanceRequest{LaunchInstanceDetails: d})
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.Instance
}

// listAll pages through ListInstances and returns the ids in order and
// how many pages it took.
func (f *front) listAll(req core.ListInstancesRequest) ([]string, int) {
	f.t.Helper()
	var ids []string
	pages := 0
	for {
		resp, err := f.compute().ListInstances(context.Background(), req)
		if err != nil {
			f.t.Fatal(err)
		}
		pages++
		for _, inst := range resp.Items {
			ids = append(ids, *inst.Id)
		}
		if resp.OpcNextPage == nil {
			return ids, pages
		}
		req.Page = resp.OpcNextPage
		if pages > 100 {
			f.t.Fatal("the list does not end")
		}
	}
}

func TestListPaging(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	var launched []string
	for i, name := range []string{"c", "a", "b", "a", "c"} {
		ad := ad1
		if i%2 == 1 {
			ad = ad2
		}
		launched = append(launched, *f.launch(details(ad, a10, name), "token-"+name+string(rune('0'+i))).Id)
	}
	reverse := func(ids []string) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[len(ids)-1-i] = id
		}
		return out
	}
	all := core.ListInstancesRequest{CompartmentId: common.String(compartment)}
	ids, pages := f.listAll(all)
	if strings.Join(ids, " ") != strings.Join(reverse(launched), " ") || pages != 1 {
		t.Fatalf("the list is %v in %d pages, want the five instances newest first in one page", ids, pages)
	}
	paged := all
	paged.Limit = common.Int(2)
	if ids, pages := f.listAll(paged); strings.Join(ids, " ") != strings.Join(reverse(launched), " ") || pages != 3 {
		t.Fatalf("by pages of 2 the list is %v in %d pages, want the five newest first in 3", ids, pages)
	}
	oldestFirst := paged
	oldestFirst.SortOrder = core.ListInstancesSortOrderAsc
	if ids, _ := f.listAll(oldestFirst); strings.Join(ids, " ") != strings.Join(launched, " ") {
		t.Errorf("sorted oldest first the list is %v, want launch order", ids)
	}
	byName := paged
	byName.SortBy = core.ListInstancesSortByDisplayname
	want := []string{launched[1], launched[3], launched[2], launched[0], launched[4]}
	if ids, _ := f.listAll(byName); strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("sorted by name the list is %v, want %v: a, a, b, c, c, ties oldest first", ids, want)
	}

	for _, c := range []struct {
		name string
		req  core.ListInstancesRequest
		want []string
	}{
		{"by display name", core.ListInstancesRequest{DisplayName: common.String("a")}, []string{launched[3], launched[1]}},
		{"by availability domain", core.ListInstancesRequest{AvailabilityDomain: common.String(ad2)}, []string{launched[3], launched[1]}},
		{"by state", core.ListInstancesRequest{LifecycleState: core.InstanceLifecycleStateRunning}, reverse(launched)},
		{"by a state none is in", core.ListInstancesRequest{LifecycleState: core.InstanceLifecycleStateStopped}, nil},
		{"in another compartment", core.ListInstancesRequest{CompartmentId: common.String("ocid1.compartment.oc1..other")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := c.req
			if req.CompartmentId == nil {
				req.CompartmentId = common.String(compartment)
			}
			req.Limit = common.Int(1)
			if ids, _ := f.listAll(req); strings.Join(ids, " ") != strings.Join(c.want, " ") {
				t.Errorf("the list is %v, want %v", ids, c.want)
			}
		})
	}

	// A page begins where the last ended, though an instance launched or
	// terminated in between.
	first, err := f.compute().ListInstances(context.Background(), oldestFirst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.compute().TerminateInstance(context.Background(), core.TerminateInstanceRequest{InstanceId: first.Items[1].Id}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Nanosecond)
	newest := *f.launch(details(ad1, a10, "d"), "token-d").Id
	rest := oldestFirst
	rest.Page = first.OpcNextPage
	ids, _ = f.listAll(rest)
	if strings.Join(ids, " ") != strings.Join(append(launched[2:], newest), " ") {
		t.Errorf("after a terminate and a launch, the pages after the first list %v, want %v", ids, append(launched[2:], newest))
	}
}

// With no limit, a page holds 50 instances.
func TestListDefaultLimit(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	for range defaultLimit + 1 {
		if _, err := f.world.Launch(sim.LaunchSpec{Cloud: catalog.OCI, Zone: "US-ASHBURN-AD-1", InstanceType: a10, Market: catalog.OnDemand, Scope: compartment}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := f.compute().ListInstances(context.Background(), core.ListInstancesRequest{CompartmentId: common.String(compartment)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != defaultLimit || resp.OpcNextPage == nil {
		t.Fatalf("the first page holds %d instances, next page %v; want %d and a next page", len(resp.Items), resp.OpcNextPage, defaultLimit)
	}
}

func TestListInvalid(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	for _, c := range []struct {
		name, query, code string
	}{
		{"no compartment", "", CodeMissingParameter},
		{"a limit of 0", "&limit=0", CodeInvalidParameter},
		{"a limit that is not a number", "&limit=many", CodeInvalidParameter},
		{"a page token this API did not give", "&page=%25%25", CodeInvalidParameter},
		{"an unknown state", "&lifecycleState=SLEEPING", CodeInvalidParameter},
		{"an availability domain of another region", "&availabilityDomain=gpuf:EU-FRANKFURT-1-AD-1", CodeInvalidParameter},
		{"an unknown sort", "&sortBy=SHAPE", CodeInvalidParameter},
	} {
		t.Run(c.name, func(t *testing.T) {
			query := "?compartmentId=" + compartment + c.query
			if c.query == "" {
				query = ""
			}
			wantAnswer(t, f.send(signed(t, testKey(), "GET", computeHost, "/20160918/instances"+query, nil)), http.StatusBadRequest, c.code)
		})
	}
}

func TestRetryToken(t *testing.T) {
	f := newFront(t, sim.Config{OperationTime: time.Minute}, Options{})
	first := f.launch(details(ad1, a10, "same"), "token-1")
	again := f.launch(details(ad1, a10, "same"), "token-1")
	if *again.Id != *first.Id {
		t.Fatalf("a repeat with the token launched %s, want the first instance %s", *again.Id, *first.Id)
	}
	if n := len(f.world.Instances()); n != 1 {
		t.Fatalf("two launches with one token left %d instances, want 1", n)
	}

	_, err := f.launchWith(f.compute(), details(ad1, a10, "different"), "token-1")
	se := wantServiceError(t, err, http.StatusConflict, CodeConflict)
	if se.GetMessage() != "The retry token was used for a different request." {
		t.Errorf("a reused token is refused with %q", se.GetMessage())
	}

	// A token is the tenancy's in one region: Frankfurt's is another.
	fra := details("gpuf:EU-FRANKFURT-1-AD-1", a10, "same")
	if resp, err := f.launchWith(f.computeIn(frankfurt, testKey()), fra, "token-1"); err != nil || *resp.Id == *first.Id {
		t.Fatalf("the token in another region answered %v, %v; want a new instance", resp.Id, err)
	}

	// A display name is a label, which any number of instances share.
	if other := f.launch(details(ad1, a10, "same"), "token-2"); *other.Id == *first.Id {
		t.Fatal("a launch with another token answered the first instance")
	}

	// Once terminated and gone, the instance is still the token's answer,
	// as it ended.
	if _, err := f.compute().TerminateInstance(context.Background(), core.TerminateInstanceRequest{InstanceId: first.Id}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.get(*first.Id); err == nil {
		t.Fatal("a terminated instance is still there after the operation time")
	}
	gone := f.launch(details(ad1, a10, "same"), "token-1")
	if *gone.Id != *first.Id || gone.LifecycleState != core.InstanceLifecycleStateTerminated {
		t.Fatalf("the token answers %s %s after its instance is gone, want %s TERMINATED", *gone.Id, gone.LifecycleState, *first.Id)
	}
	// A day later the token is spent, and launches anew.
	f.clock.Advance(24 * time.Hour)
	if fresh := f.launch(details(ad1, a10, "same"), "token-1"); *fresh.Id == *first.Id {
		t.Fatal("a token over a day old still answers its instance")
	}
}

// The user data is neither kept in the world, nor sent back in any
// answer; the rest of the metadata is.
func TestUserDataIsNeverKept(t *testing.T) {
	path := t.TempDir() + "/world.json"
	f := newFront(t, sim.Config{StatePath: path}, Options{})
	const secret = "hunter2-very-secret"
	encoded := base64.StdEncoding.EncodeToString([]byte("#cloud-config\npassword: " + secret + "\n"))
	d := details(ad1, a10, "kept")
	d.Metadata["user_data"] = encoded
	inst := f.launch(d, "token-1")
	if _, ok := inst.Metadata["user_data"]; ok {
		t.Error("the launch's answer echoes the user data")
	}
	if inst.Metadata["ssh_authorized_keys"] != sshKey {
		t.Errorf("the launch's answer has the metadata %v, want its SSH key", inst.Metadata)
	}
	f.launch(d, "token-1")
	got, err := f.get(*inst.Id)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Metadata["user_data"]; ok || *got.DisplayName != "kept" || *got.ImageId != image {
		t.Errorf("the instance reads back as %v", got)
	}
	f.listAll(core.ListInstancesRequest{CompartmentId: common.String(compartment)})

	for _, s := range []string{secret, encoded} {
		if strings.Contains(f.answers.String(), s) {
			t.Errorf("an answer holds the user data (%.12s…)", s)
		}
	}
	if err := f.world.Save(); err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, encoded} {
		if strings.Contains(string(state), s) {
			t.Errorf("the world's state file holds the user data (%.12s…)", s)
		}
	}
	for _, inst := range f.world.Instances() {
		for k, v := range inst.Properties {
			if strings.Contains(v, encoded) || strings.Contains(k, "user_data") {
				t.Errorf("the world's instance keeps %s", k)
			}
		}
	}
	if !strings.Contains(string(state), subnet) {
		t.Error("the state file does not keep the launch's subnet")
	}
}
