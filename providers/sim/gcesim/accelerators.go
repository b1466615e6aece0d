// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A zone's accelerator types are the GPU models of the machine types it
// offers. The catalog's GPU machine types all come with their GPUs
// attached (A2, A3, G2), so an instance's accelerators are its machine
// type's: an insert may name them, and must then name those.

// acceleratorType is a GPU model as GCE's accelerator types describe it.
type acceleratorType struct {
	name, description string
	// maxCards is the most of them one instance can have, over every
	// machine type GCE has, not only the catalog's.
	maxCards int32
}

// acceleratorTypes names the GPU models GCE sells as GCE does, keyed by
// the catalog's model.
var acceleratorTypes = map[string]acceleratorType{
	"T4":        {"nvidia-tesla-t4", "NVIDIA T4", 4},
	"L4":        {"nvidia-l4", "NVIDIA L4", 8},
	"P4":        {"nvidia-tesla-p4", "NVIDIA P4", 4},
	"P100":      {"nvidia-tesla-p100", "NVIDIA P100", 4},
	"V100":      {"nvidia-tesla-v100", "NVIDIA V100", 8},
	"A100-40GB": {"nvidia-tesla-a100", "NVIDIA A100 40GB", 16},
	"A100-80GB": {"nvidia-a100-80gb", "NVIDIA A100 80GB", 8},
	"H100":      {"nvidia-h100-80gb", "NVIDIA H100 80GB", 8},
	"H100-MEGA": {"nvidia-h100-mega-80gb", "NVIDIA H100 80GB Mega", 8},
	"H200":      {"nvidia-h200-141gb", "NVIDIA H200 141GB", 8},
	"B200":      {"nvidia-b200", "NVIDIA B200", 8},
}

// acceleratorOf is a catalog GPU model as GCE names it. A model the
// table lacks, from a catalog with GPUs GCE has begun to sell since, is
// named as GCE names its newer GPUs, "nvidia-" and the model in lower
// case, so machine types never lose their accelerators.
func acceleratorOf(model string) acceleratorType {
	if a, ok := acceleratorTypes[model]; ok {
		return a
	}
	if canonical, ok := catalog.NormalizeGPU(model); ok {
		if a, ok := acceleratorTypes[canonical]; ok {
			return a
		}
	}
	name := strings.ToLower(strings.NewReplacer(" ", "-", "_", "-").Replace(model))
	if !strings.HasPrefix(name, "nvidia-") {
		name = "nvidia-" + name
	}
	return acceleratorType{name: name, description: "NVIDIA " + model, maxCards: 8}
}

// zoneAccelerators lists the accelerator types of a zone by name.
func (s *Server) zoneAccelerators(zone string) []acceleratorType {
	var out []acceleratorType
	for _, t := range s.offered(zone) {
		if a := acceleratorOf(t.GPUModel); t.GPUs > 0 && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b acceleratorType) int { return cmp.Compare(a.name, b.name) })
	return out
}

// acceleratorPath is an accelerator type's path.
func acceleratorPath(project, zone, name string) string {
	return scope(project, zone) + "/acceleratorTypes/" + name
}

func renderAccelerator(l links, project, zone string, a acceleratorType) *computepb.AcceleratorType {
	return &computepb.AcceleratorType{
		Kind:                    proto.String("compute#acceleratorType"),
		Id:                      proto.Uint64(stableID("accelerator\x00" + a.name)),
		CreationTimestamp:       proto.String(epoch),
		Name:                    proto.String(a.name),
		Description:             proto.String(a.description),
		Zone:                    proto.String(l.zone(project, zone)),
		SelfLink:                proto.String(l.url(acceleratorPath(project, zone, a.name))),
		MaximumCardsPerInstance: proto.Int32(a.maxCards),
	}
}

// getAccelerator serves acceleratorTypes.get.
func (s *Server) getAccelerator(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	path := acceleratorPath(project, zone, name)
	if err := s.admitZone(r, OpAcceleratorTypeGet, project, zone, path); err != nil {
		return err
	}
	for _, a := range s.zoneAccelerators(zone) {
		if a.name == name {
			return writeProto(w, renderAccelerator(linksOf(r), project, zone, a))
		}
	}
	return notFound(path)
}

// listAccelerators serves acceleratorTypes.list.
func (s *Server) listAccelerators(w http.ResponseWriter, r *http.Request, project, zone string) error {
	collection := scope(project, zone) + "/acceleratorTypes"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admitZone(r, OpAcceleratorTypesList, project, zone, scope(project, zone)), invalid); err != nil {
		return err
	}
	l := linksOf(r)
	items, next := page(r, collection, q, s.keyedAccelerators([]string{zone}))
	return writeList(w, l, collection, next, &computepb.AcceleratorTypeList{
		Kind:  proto.String("compute#acceleratorTypeList"),
		Items: renderAll(items, renderAcceleratorIn(l, project)),
	})
}

// aggregatedAccelerators serves acceleratorTypes.aggregatedList, keyed
// "zones/Z", with a NO_RESULTS_ON_PAGE warning for zones without any on
// the page.
func (s *Server) aggregatedAccelerators(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/aggregated/acceleratorTypes"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admit(r, OpAcceleratorTypesAggregatedList, project, "", "", "projects/"+project), invalid); err != nil {
		return err
	}
	zones := s.allZones()
	l := linksOf(r)
	items, next := page(r, collection, q, s.keyedAccelerators(zones))
	return writeList(w, l, collection, next, &computepb.AcceleratorTypeAggregatedList{
		Kind: proto.String("compute#acceleratorTypeAggregatedList"),
		Items: aggregate(items, "zones/", zones, renderAcceleratorIn(l, project),
			func(types []*computepb.AcceleratorType, warning *computepb.Warning) *computepb.AcceleratorTypesScopedList {
				return &computepb.AcceleratorTypesScopedList{AcceleratorTypes: types, Warning: warning}
			}),
	})
}

// renderAcceleratorIn renders the accelerator types of a page.
func renderAcceleratorIn(l links, project string) func(keyed[acceleratorType]) *computepb.AcceleratorType {
	return func(a keyed[acceleratorType]) *computepb.AcceleratorType {
		return renderAccelerator(l, project, a.scope, a.item)
	}
}

func (s *Server) keyedAccelerators(zones []string) []keyed[acceleratorType] {
	var out []keyed[acceleratorType]
	for _, z := range zones {
		for _, a := range s.zoneAccelerators(z) {
			out = append(out, keyed[acceleratorType]{scope: z, name: a.name, item: a})
		}
	}
	return out
}

// guestAccelerators checks the accelerators an instance names against its
// machine type's, which are what it gets: none named, or exactly those.
// GCE words a mismatch "[nvidia-tesla-a100, n1-highmem-8] features are not
// compatible for creating instance."
func (s *Server) guestAccelerators(l links, field, project, zone string, typ sim.InstanceType, given []*computepb.AcceleratorConfig) *apiError {
	if len(given) == 0 {
		return nil
	}
	own, hasOwn := acceleratorOf(typ.GPUModel), typ.GPUs > 0
	for i, g := range given {
		f := field + ".guestAccelerators[" + strconv.Itoa(i) + "]"
		ar, ok := l.parseRef(g.GetAcceleratorType(), ref{project: project, scope: "zones", location: zone, collection: "acceleratorTypes"})
		if !ok {
			return invalidField(f+".acceleratorType", g.GetAcceleratorType(), "The URL is malformed.")
		}
		if ar.project != project || ar.location != zone || !slices.ContainsFunc(s.zoneAccelerators(zone), func(a acceleratorType) bool { return a.name == ar.name }) {
			return notFound(acceleratorPath(ar.project, ar.location, ar.name))
		}
		if !hasOwn || ar.name != own.name || len(given) > 1 {
			return &apiError{Status: http.StatusBadRequest, Reason: "badRequest",
				Message: "[" + ar.name + ", " + typ.Name + "] features are not compatible for creating instance."}
		}
		if n := g.GetAcceleratorCount(); int(n) != typ.GPUs {
			return invalidField(f+".acceleratorCount", strconv.Itoa(int(n)),
				"Machine type "+typ.Name+" comes with "+strconv.Itoa(typ.GPUs)+" "+own.name+" accelerator cards attached.")
		}
	}
	return nil
}
