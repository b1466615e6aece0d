// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// GCE reports the quotas of a region on the region resource and the
// project-wide ones (GPUS_ALL_REGIONS among them) on the project resource,
// each as {metric, limit, usage}. The world keeps one set of quotas for
// every project, so any project reads the same ones.

// epoch is the creation time GCE gives the resources that have always
// existed: regions and machine types.
const epoch = "1969-12-31T16:00:00.000-08:00"

// projectCreatedAt is the creation time of every emulated project, and
// of its default network.
var projectCreatedAt = time.Date(2024, 1, 1, 8, 0, 0, 0, time.UTC)

// getProject serves projects.get: the project with its global quotas.
func (s *Server) getProject(w http.ResponseWriter, r *http.Request, project string) error {
	resource := "projects/" + project
	if err := s.admit(r, OpProjectGet, project, "", "", resource); err != nil {
		return err
	}
	if !nameRE.MatchString(project) {
		// Project ids are lower-case words like instance names; a path
		// that cannot name one names nothing.
		return notFound(resource)
	}
	number := projectNumber(project)
	resp := &computepb.Project{
		Kind:                  proto.String("compute#project"),
		Id:                    proto.Uint64(number),
		Name:                  proto.String(project),
		CreationTimestamp:     proto.String(timestamp(projectCreatedAt)),
		SelfLink:              proto.String(linksOf(r).url(resource)),
		DefaultServiceAccount: proto.String(defaultServiceAccount(project)),
		DefaultNetworkTier:    proto.String("PREMIUM"),
		XpnProjectStatus:      proto.String("UNSPECIFIED_XPN_PROJECT_STATUS"),
		VmDnsSetting:          proto.String("ZONAL_ONLY"),
		CommonInstanceMetadata: &computepb.Metadata{
			Kind:        proto.String("compute#metadata"),
			Fingerprint: proto.String(fingerprint(nil)),
		},
		Quotas: s.quotas("", catalog.GlobalScope),
	}
	return writeProto(w, resp)
}

// projectNumber is a project's number, which has twelve digits.
func projectNumber(project string) uint64 {
	return stableID(project)%900_000_000_000 + 100_000_000_000
}

// defaultServiceAccount is the project's Compute Engine default service
// account, which an instance asking for "default" runs as.
func defaultServiceAccount(project string) string {
	return fmt.Sprintf("%d-compute@developer.gserviceaccount.com", projectNumber(project))
}

// quotas renders the world's quotas of one scope: a region's, or with
// region "" the global ones. GCE reports both limit and usage as numbers,
// usage 0 included.
func (s *Server) quotas(region string, scope catalog.QuotaScope) []*computepb.Quota {
	var out []*computepb.Quota
	for _, q := range s.world.Quotas(cloud, region) {
		if q.Scope != scope {
			continue
		}
		out = append(out, &computepb.Quota{
			Metric: proto.String(q.Name),
			Limit:  proto.Float64(float64(q.Limit)),
			Usage:  proto.Float64(float64(q.Used)),
		})
	}
	return out
}

// stableID is a numeric id derived from a name, the same on every read and
// restart.
func stableID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() >> 1
}
