// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// DefaultAdoptMax bounds the instances one adoption takes unless told
// otherwise: a selector matching more is more likely a mistake than a
// fleet to take over at once.
const DefaultAdoptMax = 1000

// AdoptOptions say what to adopt into which workload.
type AdoptOptions struct {
	// Connect builds the providers once the specs say which clouds are
	// enabled; Providers, when set instead, are used as they are.
	Connect   Connect
	Providers map[string]providers.Provider
	Catalog   *catalog.Catalog
	Log       *slog.Logger
	Now       func() time.Time
	// Fleet and Workload name the workload the instances join.
	Fleet, Workload string
	// IDs or Selector (tags, labels on GCE, every one to match) pick the
	// instances; exactly one of them is set.
	IDs      []string
	Selector map[string]string
	// Max bounds how many instances a selector may match; more refuses
	// the adoption. DefaultAdoptMax when zero.
	Max int
	// Apply tags the instances once the plan holds no refusal; without it
	// the adoption is planned only.
	Apply bool
	// Confirm, when set, is asked before anything is tagged, with the
	// plan; false stops there.
	Confirm func(*Adoption) (bool, error)
	// Lock says who takes the repository lock, which an adoption that
	// tags holds from planning to tagging: no run may plan the workload
	// meanwhile on what it is about to change.
	Lock LockOptions
	// Parallelism bounds the tagging calls in flight.
	Parallelism int
}

// The plan of an adoption and what it did are render's types, which every
// output of it prints.
type (
	Adoption       = render.Adoption
	AdoptCandidate = render.AdoptCandidate
	AdoptRefusal   = render.AdoptRefusal
)

// Adopt plans taking running instances gpufleet did not launch into a
// workload and, with Apply, tags them with the ownership tags, so that
// from then on every run lists them, counts them as the workload's nodes
// on their offers and never launches their like a second time. Each
// instance is checked against the workload first — its cloud, GPU model
// and count, region and zone, market, account, price, that nobody owns
// it, and that the workload does not end up with more nodes than it asks
// for — and a single misfit refuses the whole adoption, tagging nothing.
// An instance adopted into the workload already is a no-op. The error is
// for what stopped the adoption from being planned or carried out; a
// refusal is in the plan.
func Adopt(ctx context.Context, c *Checkout, opts AdoptOptions) (*Adoption, error) {
	if (len(opts.IDs) == 0) == (len(opts.Selector) == 0) {
		return nil, errors.New("adopt takes instance ids or a tag selector, one of the two")
	}
	opts.Max = cmp.Or(opts.Max, DefaultAdoptMax)
	if opts.Max < 0 {
		return nil, fmt.Errorf("the bound of an adoption must be positive, not %d", opts.Max)
	}
	opts.Parallelism = cmp.Or(opts.Parallelism, 8)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.Apply {
		lockOpts := opts.Lock
		if lockOpts.Now == nil {
			lockOpts.Now = opts.Now
		}
		lock, err := c.Lock(ctx, lockOpts)
		if err != nil {
			return nil, err
		}
		lockCtx, lose := context.WithCancelCause(ctx)
		defer lose(nil)
		stop := lock.Keep(func(err error) {
			opts.Log.Error("the adoption lost the repository lock and stops", "err", err)
			lose(err)
		})
		defer func() {
			stop()
			// Released even when lost, as a run's is: a late renewal may
			// have made it this adoption's again, and a lock another took
			// over is left alone.
			if err := lock.Release(context.WithoutCancel(ctx)); err != nil {
				opts.Log.Warn("releasing the repository lock", "err", err)
			}
		}()
		if err := c.Sync(ctx); err != nil {
			return nil, err
		}
		ctx = lockCtx
	}
	head, err := c.Head()
	if err != nil {
		return nil, err
	}
	repo, err := schema.LoadWithCatalog(c.Dir, opts.Catalog)
	if err != nil {
		return nil, fmt.Errorf("the fleet specs at %s are invalid, %w", short(head), err)
	}
	fleet, ok := repo.Fleet(opts.Fleet)
	if !ok {
		return nil, fmt.Errorf("no fleet %q in the repository", opts.Fleet)
	}
	i := slices.IndexFunc(fleet.Workloads, func(w schema.Workload) bool { return w.Name == opts.Workload })
	if i < 0 {
		return nil, fmt.Errorf("fleet %q has no workload %q", opts.Fleet, opts.Workload)
	}
	w := &fleet.Workloads[i]
	provs := opts.Providers
	if provs == nil {
		if opts.Connect == nil {
			return nil, errors.New("adopt needs providers or a way to connect to the clouds")
		}
		var disconnect func() error
		if provs, disconnect, err = opts.Connect(ctx, repo.Config); err != nil {
			return nil, fmt.Errorf("connecting to the clouds, %w", err)
		}
		defer func() {
			if err := disconnect(); err != nil {
				opts.Log.Warn("closing the cloud clients", "err", err)
			}
		}()
	}
	clouds := repo.Config.Clouds.Enabled()
	for _, cloud := range clouds {
		if provs[cloud] == nil {
			return nil, fmt.Errorf("gpufleet.cue enables %s but no %s provider is configured", cloud, cloud)
		}
	}
	owned, unowned, err := observeForAdoption(ctx, provs, clouds, providers.UnownedSelector{IDs: opts.IDs, Tags: opts.Selector, Limit: opts.Max})
	if err != nil {
		return nil, err
	}
	a := planAdoption(repo, opts.Catalog, opts, fleet, w, owned, unowned)
	a.Revision = head.String()
	if a.Blocked() || len(a.Adopt) == 0 || !opts.Apply {
		return a, nil
	}
	if opts.Confirm != nil {
		yes, err := opts.Confirm(a)
		if err != nil {
			return a, err
		}
		if !yes {
			a.Declined = true
			return a, nil
		}
	}
	return a, tag(ctx, provs, a, w, opts)
}

// observeForAdoption lists what gpufleet owns in every enabled cloud, and
// the unowned instances sel picks in those whose providers adopt. A cloud
// that cannot be listed stops it: an instance missing from the picture
// could be adopted twice, or past the workload's count.
func observeForAdoption(ctx context.Context, provs map[string]providers.Provider, clouds []string, sel providers.UnownedSelector) (owned []planner.Instance, unowned []providers.Unowned, err error) {
	ownedBy := make([][]planner.Instance, len(clouds))
	unownedBy := make([][]providers.Unowned, len(clouds))
	var g errgroup.Group
	for i, cloud := range clouds {
		g.Go(func() error {
			var err error
			if ownedBy[i], err = provs[cloud].List(ctx, providers.Selector{}); err != nil {
				return fmt.Errorf("listing the instances in %s, %w", cloud, err)
			}
			adopter, ok := provs[cloud].(providers.Adopter)
			if !ok {
				// A cloud gpufleet cannot mark an instance as its own on
				// (Lambda Cloud has no tags, and names an instance once)
				// has nothing to adopt; what gpufleet owns there still
				// counts.
				return nil
			}
			if unownedBy[i], err = adopter.Unowned(ctx, sel); err != nil {
				return fmt.Errorf("listing the unowned instances in %s, %w", cloud, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, fmt.Errorf("could not list every cloud, so nothing was adopted: %w", err)
	}
	return slices.Concat(ownedBy...), slices.Concat(unownedBy...), nil
}

// planAdoption checks each instance found against the workload.
func planAdoption(repo *schema.Repo, cat *catalog.Catalog, opts AdoptOptions, fleet *schema.Fleet, w *schema.Workload, owned []planner.Instance, unowned []providers.Unowned) *Adoption {
	a := &Adoption{Fleet: fleet.Name, Workload: w.Name, Where: w.Pos.String(), Selector: describeSelector(opts), Nodes: w.Nodes, Adopt: []AdoptCandidate{}}
	adoptedBefore := 0
	for _, inst := range owned {
		if inst.Fleet == fleet.Name && inst.Workload == w.Name {
			if inst.State.Live() {
				a.Running++
			}
			if providers.Adopted(inst.Token) {
				adoptedBefore++
			}
		}
	}
	if len(unowned) > opts.Max {
		a.Refusal = fmt.Sprintf("the selector %s matches more than %d instances: nothing is tagged. Narrow the selector, or raise --max if you mean to adopt that many", a.Selector, opts.Max)
		return a
	}
	found := map[string]bool{}
	for _, u := range unowned {
		found[u.ID] = true
		if why := misfit(repo, cat, w, u); why != "" {
			offer := u.Offer
			a.Refused = append(a.Refused, AdoptRefusal{ID: u.ID, Offer: &offer, Reason: why})
			continue
		}
		a.Adopt = append(a.Adopt, AdoptCandidate{ID: u.ID, Offer: u.Offer, State: u.State, Account: u.Account,
			Token: providers.AdoptedToken(fleet.Name, w.Name, u.Offer.Cloud, u.ID), PriceMicros: offerPrice(cat, u.Offer)})
	}
	for _, id := range opts.IDs {
		if found[id] {
			continue
		}
		i := slices.IndexFunc(owned, func(inst planner.Instance) bool { return inst.ID == id })
		switch {
		case i >= 0 && !owned[i].State.Live():
			offer := owned[i].OfferKey
			a.Refused = append(a.Refused, AdoptRefusal{ID: id, Offer: &offer, Reason: fmt.Sprintf("it is %s: only a pending or running instance is adopted", owned[i].State)})
		case i >= 0 && owned[i].Fleet == fleet.Name && owned[i].Workload == w.Name:
			inst := owned[i]
			a.Already = append(a.Already, AdoptCandidate{ID: inst.ID, Offer: inst.OfferKey, State: inst.State, Token: inst.Token})
		case i >= 0:
			offer := owned[i].OfferKey
			a.Refused = append(a.Refused, AdoptRefusal{ID: id, Offer: &offer, Reason: fmt.Sprintf("owned by fleet %q (workload %q) already: gpufleet never takes an instance from another workload", owned[i].Fleet, owned[i].Workload)})
		default:
			a.Refused = append(a.Refused, AdoptRefusal{ID: id, Reason: "not found: no running instance of that id in the accounts and regions gpufleet.cue configures (" + accounts(repo.Config) + ")"})
		}
	}
	switch {
	case len(a.Refused) > 0:
		a.Refusal = fmt.Sprintf("%d of the %d instances cannot join %s/%s: nothing is tagged", len(a.Refused), len(a.Refused)+len(a.Adopt)+len(a.Already), fleet.Name, w.Name)
		return a
	case len(a.Adopt) == 0 && len(a.Already) > 0:
		a.Note = fmt.Sprintf("already adopted: %s/%s owns every instance asked for", fleet.Name, w.Name)
		return a
	case len(a.Adopt) == 0 && len(opts.Selector) > 0 && adoptedBefore > 0:
		// The instances a selector matched once are owned now, and owned
		// instances are not matched again: a repeat finds nothing new.
		a.Note = fmt.Sprintf("already adopted: no unowned instance matches %s, and %s/%s runs %d adopted nodes", a.Selector, fleet.Name, w.Name, adoptedBefore)
		return a
	case len(a.Adopt) == 0:
		a.Refusal = fmt.Sprintf("no unowned instance in the accounts and regions gpufleet.cue configures (%s) matches %s: nothing to adopt", accounts(repo.Config), a.Selector)
		return a
	}
	if total := a.Running + len(a.Adopt); total > w.Nodes {
		a.Refusal = fmt.Sprintf("adopting %d would give %s/%s %d nodes, and it asks for %d (%s): the next run would delete %d of them as surplus. Raise nodes, or adopt fewer; nothing is tagged",
			len(a.Adopt), fleet.Name, w.Name, total, w.Nodes, a.Where, total-w.Nodes)
		return a
	}
	forecast(repo, cat, a, owned)
	return a
}

// forecast plans the repository as if the adoption were done, with the
// catalog's prices, and refuses the instances the plan would delete at
// once (moved to a cheaper offer, most often): adopting a node only for
// the next run to replace it is not what anyone asks for. A plan that
// cannot be made refuses the adoption with its error.
func forecast(repo *schema.Repo, cat *catalog.Catalog, a *Adoption, owned []planner.Instance) {
	observed := slices.Clone(owned)
	for _, c := range a.Adopt {
		observed = append(observed, planner.Instance{ID: c.ID, OfferKey: c.Offer, Fleet: a.Fleet, Workload: a.Workload, Token: c.Token, State: c.State})
	}
	slices.SortFunc(observed, planner.CompareInstances)
	report, err := PlanOffline(OfflineInput{Repo: repo, Catalog: cat, Observed: observed})
	if err != nil {
		a.Refusal = fmt.Sprintf("the workload cannot be planned with the instances adopted (%v): nothing is tagged", err)
		return
	}
	deleted := map[string]planner.Action{}
	for _, act := range slices.Concat(report.Changes.Actions, report.Changes.Refused, report.Changes.Deferred) {
		if act.Kind == planner.Delete {
			deleted[act.Instance] = act
		}
	}
	kept := a.Adopt[:0]
	for _, c := range a.Adopt {
		if act, ok := deleted[c.ID]; ok {
			offer := c.Offer
			a.Refused = append(a.Refused, AdoptRefusal{ID: c.ID, Offer: &offer,
				Reason: "the next run would delete it (" + act.Reason + "); keep such nodes with movable: false on the workload, or adopt instances of the offer it plans"})
			continue
		}
		kept = append(kept, c)
	}
	a.Adopt = kept
	if len(a.Refused) > 0 {
		a.Refusal = fmt.Sprintf("%d of the %d instances cannot join %s/%s: nothing is tagged", len(a.Refused), len(a.Refused)+len(a.Adopt)+len(a.Already), a.Fleet, a.Workload)
	}
}

// misfit says why an unowned instance cannot be a node of the workload,
// "" when it can: the checks the planner makes of an offer before it
// keeps a node there, so that the next run keeps what was adopted rather
// than deleting it as disallowed.
func misfit(repo *schema.Repo, cat *catalog.Catalog, w *schema.Workload, u providers.Unowned) string {
	o := u.Offer
	if !slices.Contains(w.Placement.Clouds, o.Cloud) {
		return fmt.Sprintf("cloud %s: the workload runs on %s only", o.Cloud, strings.Join(w.Placement.Clouds, ", "))
	}
	if !u.State.Live() {
		return fmt.Sprintf("it is %s: only a pending or running instance is adopted", u.State)
	}
	model, gpus, known := typeGPUs(cat, o.Cloud, o.InstanceType)
	switch {
	case !known:
		return fmt.Sprintf("instance type %s is not in the catalog: gpufleet cannot price it or keep it", o.InstanceType)
	case model != w.GPU.Model || gpus != w.GPU.PerNode:
		return fmt.Sprintf("instance type %s has %d × %s, and the workload asks for %d × %s per node", o.InstanceType, gpus, model, w.GPU.PerNode, w.GPU.Model)
	}
	if !schema.MatchRegion(o.Cloud, o.Region, w.Placement.Regions.Allow, w.Placement.Regions.Deny) {
		return fmt.Sprintf("region %s is not allowed by the workload's placement.regions (allow %s, deny %s)", o.Region, orNone(w.Placement.Regions.Allow), orNone(w.Placement.Regions.Deny))
	}
	if len(w.Placement.Zones) > 0 && !slices.Contains(w.Placement.Zones, o.Zone) {
		return fmt.Sprintf("zone %s is not one of the workload's placement.zones (%s)", o.Zone, strings.Join(w.Placement.Zones, ", "))
	}
	if !marketAllowed(w.Capacity, o.Market) {
		return fmt.Sprintf("it is a %s instance, and the workload's capacity %q takes %s", o.Market, w.Capacity, marketsOf(w.Capacity))
	}
	if want := account(repo.Config, o.Cloud); want != "" && u.Account != want {
		return fmt.Sprintf("it is in %s %s, not gpufleet.cue's %s", accountWord(o.Cloud), u.Account, want)
	}
	price := offerPrice(cat, o)
	switch {
	case price <= 0:
		return fmt.Sprintf("the catalog has no price for %s: the planner would not keep a node there", o)
	case w.MaxPricePerNodeHour != nil && price > catalog.Micros(*w.MaxPricePerNodeHour):
		return fmt.Sprintf("it costs $%.3f/h, over the workload's maxPricePerNodeHour of $%.3f", float64(price)/1e6, *w.MaxPricePerNodeHour)
	}
	if w.EFA && o.Cloud == catalog.AWS && catalog.EFAInterfaces(o.InstanceType) == 0 {
		return fmt.Sprintf("instance type %s has no EFA, and the workload asks for it", o.InstanceType)
	}
	if b := repo.Config.BootstrapFor(w, o.Cloud); b != nil && w.Movable {
		return fmt.Sprintf("the workload's nodes on %s run bootstrap %s (%s), which an adopted instance never ran: the next run would replace it. Adopt into a workload without one, or one that is not movable", o.Cloud, b.File, b.Digest)
	}
	return ""
}

// marketAllowed mirrors the planner's reading of a capacity policy.
func marketAllowed(policy string, m catalog.Market) bool {
	switch policy {
	case schema.CapacitySpot:
		return m == catalog.Spot
	case schema.CapacitySpotFallback:
		return true
	}
	return m == catalog.OnDemand
}

func marketsOf(policy string) string {
	switch policy {
	case schema.CapacitySpot:
		return "spot only"
	case schema.CapacitySpotFallback:
		return "spot and on-demand"
	}
	return "on-demand only"
}

// typeGPUs is what GPUs an instance type has, as the catalog says.
func typeGPUs(cat *catalog.Catalog, cloud, instanceType string) (model string, gpus int, ok bool) {
	for _, o := range cat.Offers {
		if o.Cloud == cloud && o.InstanceType == instanceType {
			return o.GPUModel, o.GPUs, true
		}
	}
	return "", 0, false
}

// offerPrice is the catalog's price of an offer: the zone's, else the
// region's.
func offerPrice(cat *catalog.Catalog, key planner.OfferKey) int64 {
	var regional int64
	for _, o := range cat.Offers {
		if o.Cloud != key.Cloud || o.Region != key.Region || o.InstanceType != key.InstanceType || o.Market != key.Market {
			continue
		}
		switch o.Zone {
		case key.Zone:
			return o.PriceMicros
		case "":
			regional = o.PriceMicros
		}
	}
	return regional
}

// account is the account gpufleet.cue names for a cloud: the Azure
// subscription or the GCP project. AWS names none: the credentials'
// account is the only one EC2 lists.
func account(cfg schema.Config, cloud string) string {
	switch {
	case cloud == catalog.Azure && cfg.Clouds.Azure != nil:
		return cfg.Clouds.Azure.Subscription
	case cloud == catalog.GCP && cfg.Clouds.GCP != nil:
		return cfg.Clouds.GCP.Project
	}
	return ""
}

func accountWord(cloud string) string {
	switch cloud {
	case catalog.Azure:
		return "subscription"
	case catalog.GCP:
		return "project"
	}
	return "account"
}

// accounts names where an adoption looks, for a refusal to say.
func accounts(cfg schema.Config) string {
	var out []string
	for _, cloud := range cfg.Clouds.Enabled() {
		switch cloud {
		case catalog.AWS:
			out = append(out, "aws: the credentials' account")
		case catalog.Azure:
			out = append(out, fmt.Sprintf("azure: subscription %s, resource group %s", cfg.Clouds.Azure.Subscription, cfg.Clouds.Azure.ResourceGroup))
		case catalog.GCP:
			out = append(out, "gcp: project "+cfg.Clouds.GCP.Project)
		}
	}
	return strings.Join(out, "; ")
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// describeSelector says how an adoption picks its instances.
func describeSelector(opts AdoptOptions) string {
	if len(opts.IDs) > 0 {
		return "--id " + strings.Join(opts.IDs, ",")
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(opts.Selector)) {
		pairs = append(pairs, k+"="+opts.Selector[k])
	}
	return strings.Join(pairs, ",")
}

// tag puts the ownership tags on the adoption's instances. The checks
// hold for all of them, so each is tagged on its own, a few at a time; a
// cloud call that fails leaves the others tagged, and the error names
// the instances left, which a repeat of the same adoption takes (those
// tagged already are no-ops).
func tag(ctx context.Context, provs map[string]providers.Provider, a *Adoption, w *schema.Workload, opts AdoptOptions) error {
	adopted := make([]planner.Instance, len(a.Adopt))
	errs := make([]error, len(a.Adopt))
	var g errgroup.Group
	g.SetLimit(opts.Parallelism)
	var mu sync.Mutex
	for i, c := range a.Adopt {
		g.Go(func() error {
			adopter := provs[c.Offer.Cloud].(providers.Adopter)
			u := providers.Unowned{ID: c.ID, Offer: c.Offer, State: c.State, Account: c.Account}
			req := providers.CreateRequest{Token: c.Token, Offer: c.Offer, Fleet: a.Fleet, Workload: a.Workload, Labels: w.Labels}
			inst, err := adopter.Adopt(ctx, u, req)
			if err != nil {
				errs[i] = fmt.Errorf("adopting %s, %w", c.ID, err)
				return nil
			}
			mu.Lock()
			adopted[i] = inst
			mu.Unlock()
			opts.Log.Info("adopted", "instance", c.ID, "offer", c.Offer.String(), "fleet", a.Fleet, "workload", a.Workload)
			return nil
		})
	}
	g.Wait()
	for i, inst := range adopted {
		if errs[i] == nil {
			a.Adopted = append(a.Adopted, inst)
		}
	}
	a.Applied = len(a.Adopted) == len(a.Adopt)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tagged %d of %d instances; run the same adoption again to take the rest: %w", len(a.Adopted), len(a.Adopt), err)
	}
	return nil
}
