// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema"
)

// Bootstrap names the first-boot file a workload's nodes on one cloud
// run: a node launched from another version of it, or without one, is
// replaced, unless the workload is not movable.
type Bootstrap struct {
	Cloud  string `json:"cloud"`
	File   string `json:"file"`
	Digest string `json:"digest"`
}

// Tag is the digest as a node carries it: its hex digits.
func (b Bootstrap) Tag() string { return strings.TrimPrefix(b.Digest, "sha256:") }

// Bootstraps reads, for each workload ("fleet/workload"), the bootstrap
// its nodes run on each cloud it may use, from a repository's settings.
func Bootstraps(cfg *schema.Config, fleets []schema.Fleet) map[string][]Bootstrap {
	out := map[string][]Bootstrap{}
	for _, f := range fleets {
		for _, w := range f.Workloads {
			var list []Bootstrap
			for _, cloud := range w.Placement.Clouds {
				if b := cfg.BootstrapFor(&w, cloud); b != nil {
					list = append(list, Bootstrap{Cloud: cloud, File: b.File, Digest: b.Digest})
				}
			}
			slices.SortFunc(list, func(a, b Bootstrap) int { return strings.Compare(a.Cloud, b.Cloud) })
			if len(list) > 0 {
				out[f.Name+"/"+w.Name] = list
			}
		}
	}
	return out
}

// outdated reports whether a node was launched with another bootstrap than
// its workload's nodes on its cloud now run.
func outdated(inst Instance, boots []Bootstrap) bool {
	if inst.Bootstrap == BootstrapUnknown {
		return false
	}
	want := ""
	for _, b := range boots {
		if b.Cloud == inst.Cloud {
			want = b.Tag()
		}
	}
	return inst.Bootstrap != want
}

// replacedReason says which bootstrap a node ran and which replaces it.
func replacedReason(inst Instance, boots []Bootstrap) string {
	was := "no bootstrap"
	if inst.Bootstrap != "" {
		was = "bootstrap sha256:" + inst.Bootstrap
	}
	now := "none"
	for _, b := range boots {
		if b.Cloud == inst.Cloud {
			now = b.File + " " + b.Digest
		}
	}
	return "replaced: launched with " + was + "; its workload's nodes now boot with " + now
}
