// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// TestInvalidInsert sends what the SDK lets a caller send but GCE refuses.
func TestInvalidInsert(t *testing.T) {
	manyLabels := map[string]string{}
	for i := range 65 {
		manyLabels[fmt.Sprintf("k%d", i)] = "v"
	}
	tests := []struct {
		name    string
		edit    func(req *computepb.InsertInstanceRequest)
		reason  string
		message string
	}{
		{"name with underscore", func(r *computepb.InsertInstanceRequest) { r.InstanceResource.Name = proto.String("bad_name") },
			"invalid", "Invalid value for field 'resource.name': 'bad_name'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"},
		{"name of 64 characters", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Name = proto.String(strings.Repeat("a", 64))
		},
			"invalid", "Invalid value for field 'resource.name': '" + strings.Repeat("a", 64) + "'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"},
		{"no name", func(r *computepb.InsertInstanceRequest) { r.InstanceResource.Name = nil },
			"invalid", "Invalid value for field 'resource.name': ''. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"},
		{"unknown machine type", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.MachineType = proto.String("zones/us-central1-a/machineTypes/n9-giant-1")
		}, "invalid", "Invalid value for field 'resource.machineType': 'zones/us-central1-a/machineTypes/n9-giant-1'. Machine type with name 'n9-giant-1' does not exist in zone 'us-central1-a'."},
		{"machine type of another zone", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.MachineType = proto.String("zones/us-east1-b/machineTypes/g2-standard-4")
		}, "invalid", "Invalid value for field 'resource.machineType': 'zones/us-east1-b/machineTypes/g2-standard-4'. Machine type with name 'g2-standard-4' does not exist in zone 'us-central1-a'."},
		{"machine type not offered in the zone", func(r *computepb.InsertInstanceRequest) {
			r.Zone = "us-west1-a"
			r.InstanceResource.MachineType = proto.String("a2-highgpu-1g")
		}, "invalid", "Invalid value for field 'resource.machineType': 'a2-highgpu-1g'. Machine type with name 'a2-highgpu-1g' does not exist in zone 'us-west1-a'."},
		{"no machine type", func(r *computepb.InsertInstanceRequest) { r.InstanceResource.MachineType = nil },
			"required", "Required field 'resource.machineType' not specified"},
		{"label key with capitals", func(r *computepb.InsertInstanceRequest) { r.InstanceResource.Labels = map[string]string{"Env": "prod"} },
			"invalid", "Invalid value for field 'resource.labels': ''. Label key 'Env' violates format constraints. The key must start with a lowercase character, can only contain lowercase letters, numeric characters, underscores and dashes. The key can be at most 63 characters long. International characters are allowed."},
		{"label value with a dot", func(r *computepb.InsertInstanceRequest) { r.InstanceResource.Labels = map[string]string{"env": "a.b"} },
			"invalid", "Invalid value for field 'resource.labels': ''. Label value 'a.b' violates format constraints. The value can only contain lowercase letters, numeric characters, underscores and dashes. The value can be at most 63 characters long. International characters are allowed."},
		{"label key too long", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Labels = map[string]string{strings.Repeat("k", 64): "v"}
		}, "invalid", ""},
		{"65 labels", func(r *computepb.InsertInstanceRequest) { r.InstanceResource.Labels = manyLabels },
			"invalid", "Invalid value for field 'resource.labels': ''. Resource cannot have more than 64 labels."},
		{"unknown provisioning model", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Scheduling.ProvisioningModel = proto.String("CHEAP")
		}, "invalid", "Invalid value for field 'resource.scheduling.provisioningModel': 'CHEAP'. Must be one of [SPOT, STANDARD]."},
		{"unknown termination action", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Scheduling.InstanceTerminationAction = proto.String("EXPLODE")
		}, "invalid", "Invalid value for field 'resource.scheduling.instanceTerminationAction': 'EXPLODE'. Must be one of [DELETE, STOP]."},
		{"GPU machine live-migrating", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Scheduling.OnHostMaintenance = proto.String("MIGRATE")
		}, "invalid", "Invalid value for field 'resource.scheduling.onHostMaintenance': 'MIGRATE'. Instances with guest accelerators do not support live migration."},
		{"spot restarting", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Scheduling.ProvisioningModel = proto.String("SPOT")
			r.InstanceResource.Scheduling.AutomaticRestart = proto.Bool(true)
		}, "invalid", "Invalid value for field 'resource.scheduling.automaticRestart': 'true'. Scheduling must have preemptible be false when AutomaticRestart is true."},
		{"no disks", func(r *computepb.InsertInstanceRequest) { r.InstanceResource.Disks = nil },
			"invalid", "Invalid value for field 'resource.disks': ''. Boot disk must be specified."},
		{"disk without source", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Disks[0].InitializeParams.SourceImage = nil
		},
			"invalid", "Invalid value for field 'resource.disks[0]': ''. Boot disk must have a source image, snapshot or disk."},
		{"disk smaller than its image", func(r *computepb.InsertInstanceRequest) {
			r.InstanceResource.Disks[0].InitializeParams.DiskSizeGb = proto.Int64(5)
		}, "invalid", "Invalid value for field 'resource.disks[0].initializeParams.diskSizeGb': '5'. Requested disk size cannot be smaller than the image size (10 GB)"},
		{"requestId not a UUID", func(r *computepb.InsertInstanceRequest) { r.RequestId = proto.String("retry-1") },
			"invalid", "Invalid value for field 'requestId': 'retry-1'. The request id must be a valid UUID with the exception that zero UUID is not supported (00000000-0000-0000-0000-000000000000)."},
		{"zero requestId", func(r *computepb.InsertInstanceRequest) {
			r.RequestId = proto.String("00000000-0000-0000-0000-000000000000")
		},
			"invalid", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{}, Options{})
			req := vm{name: "fine"}.request()
			tt.edit(req)
			_, err := f.instances.Insert(context.Background(), req)
			wantAPIError(t, err, 400, tt.reason, tt.message)
			if n := len(f.world.List("gcp", nil)); n != 0 {
				t.Errorf("a refused insert created %d instances", n)
			}
		})
	}
}

// TestRawBadInput sends what the SDK never would.
func TestRawBadInput(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.create(t, vm{name: "present"})
	const instances = "/compute/v1/projects/gpufleet-test/zones/us-central1-a/instances"
	const aggregated = "/compute/v1/projects/gpufleet-test/aggregated/instances"
	valid := `{"name":"x","machineType":"g2-standard-4","disks":[{"initializeParams":{"sourceImage":"projects/debian-cloud/global/images/family/debian-12"}}]}`
	otherToken := encodeCursor(cursor{Zone: zone, Name: "present", Query: 1})
	const machineTypes = "/compute/v1/projects/gpufleet-test/zones/us-central1-a/machineTypes"
	otherZoneToken := encodeCursor(cursor{Zone: "us-central1-b", Name: "g2-standard-4", Query: fnvOf("/compute/v1/projects/gpufleet-test/zones/us-central1-b/machineTypes\x00")})

	tests := []struct {
		name, method, path, body string
		status                   int
		reason                   string
		message                  string
	}{
		{"malformed JSON", "POST", instances, `{"name":`, 400, "invalid", ""},
		{"unknown field", "POST", instances, `{"name":"x","flavour":"vanilla"}`, 400, "invalid", ""},
		{"wrong type", "POST", instances, `{"name":7}`, 400, "invalid", ""},
		{"JSON null", "POST", instances, `null`, 400, "invalid", ""},
		{"JSON array", "POST", instances, `[]`, 400, "invalid", ""},
		{"empty body", "POST", instances, ``, 400, "required", "Required field 'resource' not specified"},
		{"oversized body", "POST", instances, `{"description":"` + strings.Repeat("x", 2*maxBody) + `"}`, 400, "invalid", "Request payload size exceeds the limit: " + strconv.Itoa(maxBody) + " bytes."},
		{"valid body, empty requestId", "POST", instances + "?requestId=", valid, 400, "invalid", ""},
		{"unknown zone", "POST", "/compute/v1/projects/gpufleet-test/zones/atlantis-1a/instances", valid, 404, "notFound", "The resource 'projects/gpufleet-test/zones/atlantis-1a' was not found"},
		{"instance name with a space", "GET", instances + "/bad%20name", "", 400, "invalid", "Invalid value for field 'instance': 'bad name'. Must be a match of regex '[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19}'"},
		{"delete with a bad requestId", "DELETE", instances + "/present?requestId=nope", "", 400, "invalid", ""},
		{"PUT on an instance", "PUT", instances + "/present", valid, 404, "notFound", ""},
		{"unknown collection", "GET", "/compute/v1/projects/gpufleet-test/zones/us-central1-a/disks", "", 404, "notFound", ""},
		{"another API version", "GET", "/compute/beta/projects/gpufleet-test/aggregated/instances", "", 404, "notFound", ""},
		{"empty path segment", "GET", "/compute/v1/projects//aggregated/instances", "", 404, "notFound", ""},
		{"root", "GET", "/", "", 404, "notFound", ""},
		{"maxResults not a number", "GET", aggregated + "?maxResults=ten", "", 400, "invalid", ""},
		{"maxResults negative", "GET", aggregated + "?maxResults=-1", "", 400, "invalid", ""},
		{"maxResults too large", "GET", aggregated + "?maxResults=501", "", 400, "invalid", "Invalid value for field 'maxResults': '501'. Must be less than or equal to 500"},
		{"garbage page token", "GET", aggregated + "?pageToken=bm90LWpzb24", "", 400, "invalid", "Invalid value for field 'pageToken': 'bm90LWpzb24'."},
		{"malformed query string", "GET", aggregated + "?pageToken=%%%", "", 400, "invalid", ""},
		{"page token of another filter", "GET", aggregated + "?pageToken=" + otherToken, "", 400, "invalid", ""},
		{"returnPartialSuccess not a bool", "GET", aggregated + "?returnPartialSuccess=maybe", "", 400, "invalid", ""},
		{"orderBy on an unsorted field", "GET", aggregated + "?orderBy=status", "", 400, "invalid", "Invalid value for field 'orderBy': 'status'. Sorting by this field is not supported."},
		{"orderBy newest first, across scopes", "GET", aggregated + "?orderBy=creationTimestamp%20desc", "", 400, "invalid", ""},
		{"unknown operation", "GET", "/compute/v1/projects/gpufleet-test/zones/us-central1-a/operations/nope", "", 404, "notFound", ""},
		{"wait in an unknown zone", "POST", "/compute/v1/projects/gpufleet-test/zones/nowhere/operations/nope/wait", "", 404, "notFound", ""},
		{"unknown region", "GET", "/compute/v1/projects/gpufleet-test/regions/mars-central1", "", 404, "notFound", "The resource 'projects/gpufleet-test/regions/mars-central1' was not found"},
		{"a project no id can name", "GET", "/compute/v1/projects/Not_A_Project", "", 404, "notFound", "The resource 'projects/Not_A_Project' was not found"},
		{"POST on a region", "POST", "/compute/v1/projects/gpufleet-test/regions/us-central1", "{}", 404, "notFound", ""},
		{"machine types of an unknown zone", "GET", "/compute/v1/projects/gpufleet-test/zones/atlantis-1a/machineTypes", "", 404, "notFound", "The resource 'projects/gpufleet-test/zones/atlantis-1a' was not found"},
		{"unknown machine type", "GET", machineTypes + "/n9-giant-1", "", 404, "notFound", "The resource 'projects/gpufleet-test/zones/us-central1-a/machineTypes/n9-giant-1' was not found"},
		{"machine types filtered on labels", "GET", machineTypes + "?filter=labels.a%3Db", "", 400, "invalid", "Invalid value for field 'filter': 'labels.a=b'. Invalid list filter expression."},
		{"machine types, maxResults too large", "GET", machineTypes + "?maxResults=501", "", 400, "invalid", ""},
		{"machine types, page token of another zone", "GET", machineTypes + "?pageToken=" + otherZoneToken, "", 400, "invalid", ""},
		{"aggregated machine types, garbage page token", "GET", "/compute/v1/projects/gpufleet-test/aggregated/machineTypes?pageToken=bm90LWpzb24", "", 400, "invalid", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, f.url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var env errorEnvelope
			body, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatalf("body is not GCE's error envelope: %v\n%s", err, body)
			}
			if resp.StatusCode != tt.status || env.Error.Code != tt.status {
				t.Errorf("status %d (body %d), want %d", resp.StatusCode, env.Error.Code, tt.status)
			}
			if len(env.Error.Errors) != 1 || env.Error.Errors[0].Reason != tt.reason || env.Error.Errors[0].Domain != "global" {
				t.Errorf("errors %+v, want one with reason %q in domain global", env.Error.Errors, tt.reason)
			}
			if tt.message != "" && env.Error.Message != tt.message {
				t.Errorf("message\n got %q\nwant %q", env.Error.Message, tt.message)
			}
		})
	}
	if n := len(f.world.List("gcp", nil)); n != 1 {
		t.Errorf("bad requests changed the world: %d instances", n)
	}
}

// fnvOf is queryHash's hash of a collection and filter.
func fnvOf(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// TestRecoveryAnswersInGCEShape shows the last line of defence: a handler
// that panics (here, for want of a world) still answers GCE's 500.
func TestRecoveryAnswersInGCEShape(t *testing.T) {
	srv := New(nil, Options{})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/compute/v1/projects/p/aggregated/instances", nil))
	var env errorEnvelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 500 || env.Error.Errors[0].Reason != "backendError" || srv.panics.Load() != 1 {
		t.Errorf("got %d %+v after %d panics", rec.Code, env.Error, srv.panics.Load())
	}
}

// FuzzServe throws arbitrary requests at a front and checks that every
// answer is a GCE response or envelope and that nothing panics.
func FuzzServe(f *testing.F) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		f.Fatal(err)
	}
	srv := New(world, Options{WaitTimeout: 1})
	seeds := []struct{ method, path, body string }{
		{"POST", "/compute/v1/projects/p/zones/us-central1-a/instances?requestId=8d3c1f9e-2b7a-4c5d-9e6f-0a1b2c3d4e5f", `{"name":"a","machineType":"g2-standard-4","disks":[{"initializeParams":{"sourceImage":"x"}}],"labels":{"k":"v"}}`},
		{"POST", "/compute/v1/projects/p/zones/us-central1-a/instances", `{"name":"b","machineType":"zones/us-central1-a/machineTypes/a3-highgpu-8g","scheduling":{"provisioningModel":"SPOT"},"disks":[{"source":"d"}]}`},
		{"POST", "/compute/v1/projects/p/zones/us-central1-a/instances", `{"disks":[{}],"networkInterfaces":[{}],"scheduling":{}}`},
		{"POST", "/compute/v1/projects/p/zones/us-central1-a/instances/bulkInsert?requestId=8d3c1f9e-2b7a-4c5d-9e6f-0a1b2c3d4e5f", `{"count":"3","minCount":"2","namePattern":"n-##","instanceProperties":{"machineType":"g2-standard-4","disks":[{"initializeParams":{"sourceImage":"x"}}]}}`},
		{"POST", "/compute/v1/projects/p/zones/us-central1-a/instances/bulkInsert", `{"count":"2","perInstanceProperties":{"a":{},"b":{}},"instanceProperties":{"machineType":"g2-standard-4","disks":[{}]}}`},
		{"GET", "/compute/v1/projects/p/zones/us-central1-a/instances/a", ""},
		{"GET", "/compute/v1/projects/p/zones/us-central1-a/instances/12345", ""},
		{"DELETE", "/compute/v1/projects/p/zones/us-central1-a/instances/a?requestId=1", ""},
		{"GET", "/compute/v1/projects/p/aggregated/instances?filter=(labels.a%3D%22b%22)%20status%3DRUNNING&maxResults=1", ""},
		{"GET", "/compute/v1/projects/p/aggregated/instances?pageToken=eyJ6IjoiIiwibiI6IiJ9", ""},
		{"POST", "/compute/v1/projects/p/zones/us-central1-a/operations/x/wait", ""},
		{"GET", "/compute/v1/projects/p/zones/us-central1-a/operations/x", ""},
		{"GET", "/compute/v1/projects/p/regions/us-central1", ""},
		{"GET", "/compute/v1/projects/p", ""},
		{"GET", "/compute/v1/projects/p/zones/us-central1-a/machineTypes?maxResults=2&filter=name%20%3D%20g2-standard-4", ""},
		{"GET", "/compute/v1/projects/p/zones/us-central1-a/machineTypes/a3-highgpu-8g", ""},
		{"GET", "/compute/v1/projects/p/aggregated/machineTypes?maxResults=3", ""},
		{"GET", "/compute/v1/projects/p/zones?maxResults=2", ""},
		{"GET", "/compute/v1/projects/p/regions/us-central1", ""},
		{"GET", "/compute/v1/projects/p/aggregated/acceleratorTypes?filter=name%20eq%20nvidia-.*", ""},
		{"GET", "/compute/v1/projects/debian-cloud/zones/-/imageFamilyViews/debian-12", ""},
		{"GET", "/compute/v1/projects/debian-cloud/global/images/family/debian-12", ""},
		{"POST", "/compute/v1/projects/p/global/networks", `{"name":"n","autoCreateSubnetworks":false}`},
		{"POST", "/compute/v1/projects/p/regions/us-central1/subnetworks", `{"name":"s","network":"global/networks/n","ipCidrRange":"10.0.0.0/24"}`},
		{"DELETE", "/compute/v1/projects/p/global/networks/default", ""},
		{"GET", "/compute/v1/projects/p/zones/us-central1-a/operations?filter=operationGroupId%20eq%20%22.*%5Cbx%5Cb.*%22", ""},
		{"POST", "/compute/v1/projects/p/global/operations/x/wait", ""},
		{"POST", "/compute/v1/projects/p/zones/us-central1-a/instances", `{"name":"g","machineType":"g2-standard-4","guestAccelerators":[{"acceleratorType":"nvidia-l4","acceleratorCount":1}],"networkInterfaces":[{"subnetwork":"regions/us-central1/subnetworks/s"}],"disks":[{"initializeParams":{"sourceImage":"projects/debian-cloud/zones/-/imageFamilyViews/debian-12"}}]}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.body)
	}
	f.Fuzz(func(t *testing.T, method, target, body string) {
		req, err := http.NewRequest(method, "http://gce.test"+target, strings.NewReader(body))
		if err != nil {
			t.Skip()
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Errorf("%s %s answered %d: %s", method, target, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Errorf("%s %s answered with invalid JSON: %s", method, target, rec.Body)
		}
		if n := srv.panics.Load(); n != 0 {
			t.Fatalf("%d requests panicked", n)
		}
	})
}
