// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Merge returns existing with the prices of fresh put over it, each a
// loader's catalog of one cloud: for every region a fresh catalog lists,
// its cloud's offers there are replaced by the fresh ones, and the
// region's entry by the fresh one. Other clouds and regions keep their
// offers. No argument is changed.
//
// So a cloud loses offers only where it was read to the end: a loader
// fails rather than return a region it could not read, and leaves out of
// its Regions a region where it priced nothing (every row refused, or an
// opt-in region the account may not call), which therefore keeps what it
// had. Within a region read, an offer whose row is gone from the price
// list is gone from the catalog.
//
// The merged catalog is as old as its oldest part: FetchedAt is the
// earliest of the fresh catalogs' and, when any of existing's offers are
// kept, of existing's, so a plan never claims fresher prices than some of
// its offers have. Source joins every source that still contributes an
// offer: "snapshot+aws" after refreshing AWS over the snapshot, "aws+azure+gcp"
// once all three replaced all of it.
func Merge(existing *catalog.Catalog, fresh ...*catalog.Catalog) (*catalog.Catalog, error) {
	type place struct{ cloud, region string }
	covered := map[place]bool{}
	clouds := map[string]bool{}
	for _, f := range fresh {
		cloud := f.Source
		if !slices.Contains(catalog.Clouds, cloud) {
			return nil, fmt.Errorf("merging prices, want a catalog of one cloud, not of %q", cloud)
		}
		if clouds[cloud] {
			return nil, fmt.Errorf("merging prices, two catalogs of %s", cloud)
		}
		clouds[cloud] = true
		for _, r := range f.Regions {
			if r.Cloud != cloud {
				return nil, fmt.Errorf("merging %s prices, they list %s region %s", cloud, r.Cloud, r.Name)
			}
			covered[place{cloud, r.Name}] = true
		}
		for _, o := range f.Offers {
			if o.Cloud != cloud || !covered[place{cloud, o.Region}] {
				return nil, fmt.Errorf("merging %s prices, offer %s %s %s is outside the regions they list", cloud, o.Cloud, o.Region, o.InstanceType)
			}
		}
	}

	out := &catalog.Catalog{}
	for _, o := range existing.Offers {
		if !covered[place{o.Cloud, o.Region}] {
			out.Offers = append(out.Offers, o)
		}
	}
	var sources []string
	if len(out.Offers) > 0 || len(fresh) == 0 {
		out.FetchedAt = existing.FetchedAt
		sources = append(sources, existing.Source)
	}
	for _, f := range fresh {
		if out.FetchedAt.IsZero() || f.FetchedAt.Before(out.FetchedAt) {
			out.FetchedAt = f.FetchedAt
		}
		sources = append(sources, f.Source)
		out.Offers = append(out.Offers, f.Offers...)
	}
	out.Source = joinSources(sources...)
	sortOffers(out.Offers)
	out.Sources = usedSources(out.Offers, append([]*catalog.Catalog{existing}, fresh...))

	for _, r := range existing.Regions {
		if !covered[place{r.Cloud, r.Name}] {
			out.Regions = append(out.Regions, cloneRegion(r))
		}
	}
	for _, f := range fresh {
		for _, r := range f.Regions {
			out.Regions = append(out.Regions, cloneRegion(r))
		}
	}
	slices.SortFunc(out.Regions, func(a, b catalog.Region) int {
		return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.Name, b.Name))
	})

	out.Egress = slices.Clone(existing.Egress)
	for _, f := range fresh {
		for _, e := range f.Egress {
			if !slices.ContainsFunc(out.Egress, func(x catalog.Egress) bool { return x.Cloud == e.Cloud }) {
				out.Egress = append(out.Egress, e)
			}
		}
	}
	slices.SortFunc(out.Egress, func(a, b catalog.Egress) int { return cmp.Compare(a.Cloud, b.Cloud) })
	return out, nil
}

// usedSources are the sources, of those the catalogs name, that offers
// name, sorted by id: a source no offer is priced from any more is gone.
// Of two with one id the first catalog's is kept.
func usedSources(offers []catalog.Offer, from []*catalog.Catalog) []catalog.Source {
	used := map[string]bool{}
	for _, o := range offers {
		used[o.Source] = true
	}
	var out []catalog.Source
	for _, c := range from {
		for _, s := range c.Sources {
			if used[s.ID] && !slices.ContainsFunc(out, func(x catalog.Source) bool { return x.ID == s.ID }) {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b catalog.Source) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// joinSources joins "+"-joined sources into one, in a fixed order:
// snapshot first, then the clouds in catalog order, then any other.
func joinSources(sources ...string) string {
	have := map[string]bool{}
	for _, source := range sources {
		for s := range strings.SplitSeq(source, "+") {
			if s != "" {
				have[s] = true
			}
		}
	}
	var parts []string
	for _, s := range append([]string{"snapshot"}, catalog.Clouds...) {
		if have[s] {
			parts = append(parts, s)
			delete(have, s)
		}
	}
	// Sources this version does not know keep their place at the end.
	var rest []string
	for s := range have {
		rest = append(rest, s)
	}
	slices.Sort(rest)
	return strings.Join(append(parts, rest...), "+")
}

func cloneRegion(r catalog.Region) catalog.Region {
	r.Zones = slices.Clone(r.Zones)
	return r
}

// Freshest returns the catalog a plan should use: the one in the file at
// path when it exists and is not older than the embedded snapshot, else
// catalog.Default(). "Not older" because a refresh starts from the
// snapshot: a file that refreshed some clouds over this very snapshot is
// as old as the snapshot and fresher where it was refreshed. A file that
// exists but cannot be read or is not a valid catalog is an error, not a
// silent fallback to older prices.
func Freshest(path string) (*catalog.Catalog, error) {
	snapshot := catalog.Default()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return snapshot, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the catalog, %w", err)
	}
	defer f.Close()
	c, err := catalog.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: invalid catalog, %w", path, err)
	}
	if c.FetchedAt.Before(snapshot.FetchedAt) {
		return snapshot, nil
	}
	return c, nil
}
