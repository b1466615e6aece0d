// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// Resource is a cloud object the world keeps besides instances: a VPC, a
// subnet, a security group, a resource group, a NIC, a network. Each front
// owns the shape of its kinds; the world only stores, orders and persists
// them, so that what a client created is there after a restart and a
// reference to what it did not create can fail as the cloud fails it.
type Resource struct {
	Cloud string `json:"cloud"`
	// Kind is the front's name for the type ("subnet", "resourceGroup").
	Kind string `json:"kind"`
	// ID is unique within the cloud and kind. Fronts of clouds whose ids
	// are case-insensitive store them in one case.
	ID     string          `json:"id"`
	Region string          `json:"region,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
	// Created and Seq are set by the world when the resource is first put,
	// and kept by later puts of the same id.
	Created time.Time `json:"created"`
	Seq     uint64    `json:"seq"`
}

type resourceKey struct{ Cloud, Kind, ID string }

// PutResource creates a resource or replaces the one with its id, and
// reports whether it created it. It is a change Sync waits for.
func (w *World) PutResource(r Resource) (created bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := resourceKey{r.Cloud, r.Kind, r.ID}
	if old, ok := w.resources[k]; ok {
		r.Created, r.Seq = old.Created, old.Seq
	} else {
		w.seq++
		r.Created, r.Seq, created = w.clock.Now(), w.seq, true
	}
	r.Body = slices.Clone(r.Body)
	w.resources[k] = &r
	w.changed()
	return created
}

// GetResource returns a resource by id.
func (w *World) GetResource(cloud, kind, id string) (Resource, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.resources[resourceKey{cloud, kind, id}]
	if !ok {
		return Resource{}, false
	}
	c := *r
	c.Body = slices.Clone(r.Body)
	return c, true
}

// DeleteResource removes a resource, reporting whether it was there.
func (w *World) DeleteResource(cloud, kind, id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := resourceKey{cloud, kind, id}
	if _, ok := w.resources[k]; !ok {
		return false
	}
	delete(w.resources, k)
	w.changed()
	return true
}

// Resources lists a cloud's resources of a kind that keep accepts (nil
// keeps all), in the order they were created.
func (w *World) Resources(cloud, kind string, keep func(Resource) bool) []Resource {
	w.mu.Lock()
	var out []Resource
	for k, r := range w.resources {
		if k.Cloud == cloud && k.Kind == kind {
			c := *r
			c.Body = slices.Clone(r.Body)
			out = append(out, c)
		}
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b Resource) int { return cmp.Compare(a.Seq, b.Seq) })
	if keep != nil {
		out = slices.DeleteFunc(out, func(r Resource) bool { return !keep(r) })
	}
	return out
}

func (w *World) sortedResources() []*Resource {
	out := make([]*Resource, 0, len(w.resources))
	for _, r := range w.resources {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Resource) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}
