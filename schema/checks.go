// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The checks here are the ones CUE cannot make alone: they need the catalog,
// other fields far away, or the rules clouds put on tag and label values.

// nameRE is what a fleet or workload name must look like so it can travel
// as an AWS tag, an Azure tag and a GCE label value, and be part of an Azure
// VM name.
var nameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$`)

// GCE label keys and values are the strictest of the three clouds.
var (
	labelKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

// ReservedFleetNames cannot name a fleet: a fleet's status is
// <status dir>/<fleet>.json, and these names are files gpufleet writes
// there for itself.
var ReservedFleetNames = []string{"gpufleet"}

// Limits on the size of a repository. A fleet larger than these is far
// more likely a typo than a plan, and every run would create, list and
// report each of its nodes.
const (
	MaxWorkloads = 5_000
	MaxNodes     = 50_000
)

// ReservedLabelPrefix marks the tags gpufleet puts on instances it owns.
const ReservedLabelPrefix = "gpufleet-"

func (l *loader) checkConfig(v cue.Value, cfg *Config) bool {
	ok := true
	fail := func(at string, format string, args ...any) {
		l.errs.add(valuePosition(v, at), "gpufleet."+at, format, args...)
		ok = false
	}

	if top, _, _ := strings.Cut(cfg.Status.Dir, "/"); slices.Contains([]string{ConfigFile, FleetsDir, PolicyDir, "cue.mod"}, top) {
		fail("status.dir", "%q is where gpufleet reads specs; status files go elsewhere, such as \"status\"", cfg.Status.Dir)
	}

	d, err := time.ParseDuration(cfg.Defaults.RawBlocklist)
	if err != nil || d <= 0 {
		fail("defaults.blocklistFor", "%q is not a positive duration such as \"30m\" or \"2h\"", cfg.Defaults.RawBlocklist)
	}
	cfg.Defaults.BlocklistFor = d
	l.resolveBudget(v, &cfg.Defaults, fail)

	enabled := cfg.Clouds.Enabled()
	if len(enabled) == 0 {
		fail("clouds", "no cloud is enabled: configure at least one of aws, azure, gcp, lambda, oci")
	}
	for _, cloud := range enabled {
		regions := cloudRegions(cfg, cloud)
		if len(*regions) == 0 {
			for _, r := range l.cat.RegionsOf(cloud) {
				*regions = append(*regions, r.Name)
			}
			continue
		}
		for i, name := range *regions {
			if _, known := l.cat.Region(cloud, name); !known {
				fail(fmt.Sprintf("clouds.%s.regions[%d]", cloud, i), "unknown %s region %q%s", cloud, name, didYouMean(name, l.regionNames(cloud)))
			}
		}
		if dup := firstDuplicate(*regions); dup != "" {
			fail(fmt.Sprintf("clouds.%s.regions", cloud), "region %q is listed twice", dup)
		}
	}
	if cfg.Clouds.Azure != nil && cfg.Clouds.Azure.Enabled {
		l.checkAzureLaunch(cfg.Clouds.Azure, fail)
	}
	if cfg.Clouds.OCI != nil && cfg.Clouds.OCI.Enabled {
		l.checkOCILaunch(cfg.Clouds.OCI, fail)
	}
	for _, cloud := range enabled {
		if b := cfg.cloudBootstrap(cloud); b != nil {
			l.loadBootstrap(b, v, "clouds."+cloud+".launch.bootstrap", "gpufleet", []string{cloud})
		}
	}
	for i, r := range cfg.Reservations {
		at := fmt.Sprintf("reservations[%d]", i)
		if !slices.Contains(enabled, r.Cloud) {
			fail(at+".cloud", "cloud %s is not enabled", r.Cloud)
			continue
		}
		if !slices.Contains(cfg.Clouds.Regions(r.Cloud), r.Region) {
			fail(at+".region", "region %q is not a configured %s region", r.Region, r.Cloud)
			continue
		}
		if !l.offersType(r.Cloud, r.Region, r.InstanceType) {
			fail(at+".instanceType", "%s does not offer %q in %s", r.Cloud, r.InstanceType, r.Region)
		}
	}
	l.checkPricing(cfg.Pricing, fail)
	return ok
}

func cloudRegions(cfg *Config, cloud string) *[]string {
	switch cloud {
	case catalog.AWS:
		return &cfg.Clouds.AWS.Regions
	case catalog.Azure:
		return &cfg.Clouds.Azure.Regions
	case catalog.GCP:
		return &cfg.Clouds.GCP.Regions
	case catalog.Lambda:
		return &cfg.Clouds.Lambda.Regions
	case catalog.OCI:
		return &cfg.Clouds.OCI.Regions
	}
	return nil
}

func (l *loader) offersType(cloud, region, instanceType string) bool {
	for _, o := range l.cat.Offers {
		if o.Cloud == cloud && o.Region == region && o.InstanceType == instanceType {
			return true
		}
	}
	return false
}

func (l *loader) regionNames(cloud string) []string {
	var names []string
	for _, r := range l.cat.RegionsOf(cloud) {
		names = append(names, r.Name)
	}
	return names
}

func (l *loader) checkFleet(cfg *Config, fleet *Fleet, v cue.Value) {
	base := "fleets." + pathString([]string{fleet.Name})
	switch {
	case !nameRE.MatchString(fleet.Name):
		l.errs.add(fleet.Pos, base, "fleet name %q cannot be used as a cloud tag or GCE label: use lowercase letters, digits and '-', start with a letter, at most 40 characters", fleet.Name)
	case slices.Contains(ReservedFleetNames, fleet.Name):
		l.errs.add(fleet.Pos, base, "fleet name %q is reserved: the status directory's %s.json holds gpufleet's own state; choose another name", fleet.Name, fleet.Name)
	}
	l.checkLabels(fleet.Labels, v, base)
	for i := range fleet.Workloads {
		w := &fleet.Workloads[i]
		wv := v.LookupPath(cue.MakePath(cue.Str("workloads"), cue.Str(w.Name)))
		l.checkWorkload(cfg, w, wv, base+".workloads."+pathString([]string{w.Name}))
		l.checkLambdaName(fleet.Name, w, base+".workloads."+pathString([]string{w.Name}))
	}
}

// checkBroken makes the checks that need no other field on a fleet that
// did not decode, so that its other mistakes are reported in the same run.
func (l *loader) checkBroken(name string, v cue.Value) {
	iter, err := v.LookupPath(cue.ParsePath("workloads")).Fields()
	if err != nil {
		return
	}
	for iter.Next() {
		model, err := iter.Value().LookupPath(cue.ParsePath("gpu.model")).String()
		if err != nil {
			continue
		}
		w := &Workload{Name: iter.Selector().Unquoted()}
		w.Pos = l.workloadDecl[[2]string{name, w.Name}]
		base := "fleets." + pathString([]string{name}) + ".workloads." + pathString([]string{w.Name})
		l.checkGPU(w, model, iter.Value(), base)
	}
}

func (l *loader) checkGPU(w *Workload, model string, v cue.Value, base string) {
	pos := valuePosition(v, "gpu.model")
	if pos.File == "" {
		pos = w.Pos
	}
	if normal, ok := catalog.NormalizeGPU(model); ok {
		w.GPU.Model = normal
	} else if s := catalog.SuggestGPU(model); len(s) > 0 {
		l.errs.add(pos, base+".gpu.model", "unknown GPU model %q: did you mean %s?", model, orList(s))
	} else {
		l.errs.add(pos, base+".gpu.model", "unknown GPU model %q: known models are %s", model, strings.Join(catalog.Models(), ", "))
	}
}

func (l *loader) checkWorkload(cfg *Config, w *Workload, v cue.Value, base string) {
	fail := func(at string, format string, args ...any) {
		pos := valuePosition(v, at)
		if pos.File == "" {
			pos = w.Pos
		}
		p := base
		if at != "" {
			p += "." + at
		}
		l.errs.add(pos, p, format, args...)
	}

	if !nameRE.MatchString(w.Name) {
		fail("", "workload name %q cannot be used as a cloud tag or GCE label: use lowercase letters, digits and '-', start with a letter, at most 40 characters", w.Name)
	}
	l.checkLabels(w.Labels, v, base)

	l.checkGPU(w, w.GPU.Model, v, base)

	enabled := cfg.Clouds.Enabled()
	if len(w.Placement.Clouds) == 0 {
		w.Placement.Clouds = enabled
	} else {
		if dup := firstDuplicate(w.Placement.Clouds); dup != "" {
			fail("placement.clouds", "cloud %q is listed twice", dup)
		}
		var usable []string
		for _, c := range w.Placement.Clouds {
			if slices.Contains(enabled, c) {
				usable = append(usable, c)
			}
		}
		if len(usable) == 0 {
			fail("placement.clouds", "none of the clouds %s is enabled in %s", strings.Join(w.Placement.Clouds, ", "), ConfigFile)
			return
		}
	}
	if w.Bootstrap != nil {
		l.loadBootstrap(w.Bootstrap, v, "bootstrap", base, w.Placement.Clouds)
	}
	if w.EFA {
		l.checkEFA(w, fail)
	}

	for i, pattern := range append(w.Placement.Regions.Allow, w.Placement.Regions.Deny...) {
		if err := checkRegionPattern(pattern); err != nil {
			at := fmt.Sprintf("placement.regions.allow[%d]", i)
			if i >= len(w.Placement.Regions.Allow) {
				at = fmt.Sprintf("placement.regions.deny[%d]", i-len(w.Placement.Regions.Allow))
			}
			fail(at, "%v", err)
			return
		}
	}
	candidates := l.candidateRegions(cfg, w)
	unmatched := false
	for i, glob := range w.Placement.Regions.Allow {
		if !slices.ContainsFunc(candidates, func(r regionRef) bool { return matchRegion(glob, r.cloud, r.name) }) {
			fail(fmt.Sprintf("placement.regions.allow[%d]", i), "pattern %q matches no configured region of %s", glob, strings.Join(w.Placement.Clouds, ", "))
			unmatched = true
		}
	}
	allowed := allowedRegions(candidates, w.Placement.Regions.Allow, w.Placement.Regions.Deny)
	if len(allowed) == 0 {
		if !unmatched {
			fail("placement.regions.deny", "the deny patterns remove every region the allow patterns match")
		}
		return
	}
	for i, zone := range w.Placement.Zones {
		if !slices.ContainsFunc(allowed, func(r regionRef) bool { return slices.Contains(r.zones, zone) }) {
			fail(fmt.Sprintf("placement.zones[%d]", i), "zone %q is not in any region this workload may use", zone)
		}
	}
	if d := w.Data; d != nil {
		if _, ok := l.cat.Region(d.Cloud, d.Region); !ok {
			fail("data.region", "unknown %s region %q%s", d.Cloud, d.Region, didYouMean(d.Region, l.regionNames(d.Cloud)))
		}
	}
	l.checkSpread(w, allowed, fail)
}

// checkSpread rejects spread shares that no placement of the node count can
// meet, which would otherwise show up only as a puzzling shortfall.
func (l *loader) checkSpread(w *Workload, allowed []regionRef, fail func(string, string, ...any)) {
	if w.Nodes == 0 {
		return
	}
	perCloud := int(w.Spread.MaxPerCloud*float64(w.Nodes) + 1e-9)
	perRegion := int(w.Spread.MaxPerRegion*float64(w.Nodes) + 1e-9)
	clouds := map[string]bool{}
	for _, r := range allowed {
		clouds[r.cloud] = true
	}
	perZone := w.Spread.MaxPerZone
	if perZone > 0 && w.Placement.Gang == "zone" && perZone < w.Nodes {
		fail("spread.maxPerZone", "gang placement puts all %d nodes in one zone, but the spread allows at most %d per zone", w.Nodes, perZone)
		return
	}
	if perZone > 0 {
		zones := 0
		for _, r := range allowed {
			for _, z := range r.zones {
				if len(w.Placement.Zones) == 0 || slices.Contains(w.Placement.Zones, z) {
					zones++
				}
			}
		}
		if perZone*zones < w.Nodes {
			fail("spread.maxPerZone", "%s per zone in the %s allowed can hold only %s of %d",
				plural(perZone, "node"), plural(zones, "zone"), plural(perZone*zones, "node"), w.Nodes)
			return
		}
		most := 0
		for _, r := range allowed {
			most = max(most, len(r.zones))
		}
		if w.Placement.Gang == "region" && perZone*most < w.Nodes {
			fail("spread.maxPerZone", "gang placement puts all %d nodes in one region, and %s per zone in at most %s a region can hold only %s",
				w.Nodes, plural(perZone, "node"), plural(most, "zone"), plural(perZone*most, "node"))
			return
		}
	}
	if w.Gang() {
		if perRegion < w.Nodes {
			fail("spread.maxPerRegion", "gang placement puts all %d nodes in one region, but the spread allows at most %d per region", w.Nodes, perRegion)
		}
		if perCloud < w.Nodes {
			fail("spread.maxPerCloud", "gang placement puts all %d nodes in one cloud, but the spread allows at most %d per cloud", w.Nodes, perCloud)
		}
		return
	}
	if perCloud*len(clouds) < w.Nodes {
		fail("spread.maxPerCloud", "a share of %g allows %s per cloud, so the %s usable can hold only %s of %d",
			w.Spread.MaxPerCloud, plural(perCloud, "node"), plural(len(clouds), "cloud"), plural(perCloud*len(clouds), "node"), w.Nodes)
	}
	if perRegion*len(allowed) < w.Nodes {
		fail("spread.maxPerRegion", "a share of %g allows %s per region, so the %s allowed can hold only %s of %d",
			w.Spread.MaxPerRegion, plural(perRegion, "node"), plural(len(allowed), "region"), plural(perRegion*len(allowed), "node"), w.Nodes)
	}
}

func (l *loader) checkLabels(labels map[string]string, v cue.Value, base string) {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		at := "labels." + pathString([]string{k})
		pos := valuePosition(v, at)
		switch {
		case strings.HasPrefix(k, ReservedLabelPrefix):
			l.errs.add(pos, base+"."+at, "label keys starting with %q are reserved for gpufleet", ReservedLabelPrefix)
		case !labelKeyRE.MatchString(k):
			l.errs.add(pos, base+"."+at, "label key %q cannot be a GCE label: lowercase letters, digits, '_' and '-', starting with a letter, at most 63 characters", k)
		case !labelValueRE.MatchString(labels[k]):
			l.errs.add(pos, base+"."+at, "label value %q cannot be a GCE label: lowercase letters, digits, '_' and '-', at most 63 characters", labels[k])
		}
	}
}

type regionRef struct {
	cloud, name string
	zones       []string
}

// candidateRegions lists the configured regions of the workload's enabled
// clouds.
func (l *loader) candidateRegions(cfg *Config, w *Workload) []regionRef {
	var out []regionRef
	enabled := cfg.Clouds.Enabled()
	for _, cloud := range w.Placement.Clouds {
		if !slices.Contains(enabled, cloud) {
			continue
		}
		for _, name := range cfg.Clouds.Regions(cloud) {
			r, _ := l.cat.Region(cloud, name)
			out = append(out, regionRef{cloud: cloud, name: name, zones: r.Zones})
		}
	}
	return out
}

func allowedRegions(regions []regionRef, allow, deny []string) []regionRef {
	var out []regionRef
	for _, r := range regions {
		if MatchRegion(r.cloud, r.name, allow, deny) {
			out = append(out, r)
		}
	}
	return out
}

// valuePosition finds where the value at a path below v is written, falling
// back to its closest written ancestor.
func valuePosition(v cue.Value, at string) Position {
	p := cue.ParsePath(at)
	sels := p.Selectors()
	for n := len(sels); n >= 0; n-- {
		sub := v.LookupPath(cue.MakePath(sels[:n]...))
		if !sub.Exists() {
			continue
		}
		if pos := userPosition(sub); pos.File != "" {
			return pos
		}
	}
	return Position{}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstDuplicate(list []string) string {
	seen := map[string]bool{}
	for _, s := range list {
		if seen[s] {
			return s
		}
		seen[s] = true
	}
	return ""
}

func orList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

func didYouMean(name string, candidates []string) string {
	if s := catalog.Closest(name, candidates, 3); len(s) > 0 {
		return ": did you mean " + orList(s) + "?"
	}
	return ""
}

// checkAzureLaunch asks for what ARM cannot create a Linux VM without: an
// SSH key, password sign-in being off, and a subnet for its NIC in each
// configured region.
func (l *loader) checkAzureLaunch(az *Azure, fail func(at string, format string, args ...any)) {
	if az.Launch.SSHPublicKey == "" {
		fail("clouds.azure.launch", "sshPublicKey is required: Azure VMs sign in with an SSH key only (an \"ssh-ed25519 …\" or \"ssh-rsa …\" public key)")
	}
	var missing []string
	for _, region := range az.Regions {
		if az.Launch.SubnetByRegion[region] == "" {
			missing = append(missing, region)
		}
	}
	if len(missing) > 0 {
		fail("clouds.azure.launch.subnetByRegion", "no subnet for %s: each VM's NIC needs one, by resource id (/subscriptions/…/virtualNetworks/…/subnets/…)", strings.Join(missing, ", "))
	}
}

// checkOCILaunch asks for what an OCI launch cannot go without: an image
// and a subnet in each configured region, by OCID, OCIDs being regional.
func (l *loader) checkOCILaunch(oci *OCI, fail func(at string, format string, args ...any)) {
	for _, need := range []struct {
		field, what string
		by          map[string]string
	}{
		{"imageByRegion", "image", oci.Launch.ImageByRegion},
		{"subnetByRegion", "subnet", oci.Launch.SubnetByRegion},
	} {
		var missing []string
		for _, region := range oci.Regions {
			if need.by[region] == "" {
				missing = append(missing, region)
			}
		}
		if len(missing) > 0 {
			fail("clouds.oci.launch."+need.field, "no %s for %s: each region's nodes need one, by OCID (ocid1.%s.oc1.…), or leave the region out of clouds.oci.regions",
				need.what, strings.Join(missing, ", "), need.what)
		}
	}
}

// checkEFA asks that a workload wanting EFA can have it: it runs on AWS,
// and some AWS type of its GPUs takes EFA.
func (l *loader) checkEFA(w *Workload, fail func(at string, format string, args ...any)) {
	if !slices.Contains(w.Placement.Clouds, catalog.AWS) {
		fail("efa", "EFA is an AWS network adapter, and the workload does not run on AWS")
		return
	}
	var without []string
	for _, o := range l.cat.Offers {
		if o.Cloud != catalog.AWS || o.GPUModel != w.GPU.Model || o.GPUs != w.GPU.PerNode {
			continue
		}
		if catalog.EFAInterfaces(o.InstanceType) > 0 {
			return
		}
		if !slices.Contains(without, o.InstanceType) {
			without = append(without, o.InstanceType)
		}
	}
	slices.Sort(without)
	if len(without) == 0 {
		fail("efa", "no AWS type has %d× %s", w.GPU.PerNode, w.GPU.Model)
		return
	}
	fail("efa", "no AWS type with %d× %s has EFA (%s): EFA needs a type such as p5.48xlarge or p4d.24xlarge", w.GPU.PerNode, w.GPU.Model, strings.Join(without, ", "))
}
