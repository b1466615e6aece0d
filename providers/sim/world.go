// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"cmp"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Config sets up a World. The zero value is usable: real clock, seed 0, the
// embedded catalog, in memory only.
type Config struct {
	// Seed drives every random choice: ids, random faults, preemptions.
	Seed uint64
	// Clock is the world's time; a *ManualClock lets tests move it.
	Clock Clock
	// Catalog lists the regions, zones and instance types that exist.
	Catalog *catalog.Catalog
	// StatePath, when set, is where the world is loaded from and saved to.
	StatePath string
	// Capacity is the number of instances of one type and market each zone
	// can hold, unless SetCapacity says otherwise. Zero means 64.
	Capacity int
	// Quota is the limit of every quota the catalog names (see
	// catalog.UsesFor), in its own unit, vCPUs or GPUs, unless SetQuota
	// or SetQuotas says otherwise. Zero means Unlimited.
	Quota int
	// PendingFor is how long a new instance stays pending before running.
	PendingFor time.Duration
	// OperationTime is how long a long-running operation (GCE, ARM) takes,
	// and how long an EC2 instance is shutting down or a Lambda Cloud or
	// OCI one terminating. (Latency says both; SetLatency changes them.)
	OperationTime time.Duration
	// PreemptedVisibleFor is how long a preempted GCE or Azure instance is
	// still listed before it is gone. Zero means 10 minutes. (EC2 lists
	// every terminated instance for an hour.)
	PreemptedVisibleFor time.Duration
}

// World is the simulated state of the clouds behind the emulator's
// fronts. All methods are safe for concurrent use.
type World struct {
	mu    sync.Mutex
	cfg   Config
	clock Clock
	cat   *catalog.Catalog
	// uni is the catalog's universe, indexed.
	uni universe
	rng *rand.Rand
	pcg *rand.PCG

	instances map[string]*Instance // by id
	// tokens maps a cloud's idempotency key to what it created.
	tokens     map[string]tokenEntry
	operations map[string]*Operation
	capacity   map[capacityKey]int
	// quota holds the limits of quotas in one region, and quotaNames, by
	// quotaKey with Region "", those of a quota in every region (see
	// quotaOf).
	quota      map[quotaKey]int
	quotaNames map[quotaKey]int
	// quotaBase is the base SetQuotas was last given; "" if never.
	quotaBase QuotaBase
	// account is what the clouds' accounts hold besides instances.
	account Account
	// unoffered are the instance types a zone does not offer, though its
	// region's catalog lists them.
	unoffered map[offeringKey]bool
	faults    []*Fault
	calls     map[string]int
	seq       uint64
	// rateLimits meter requests; buckets holds, for each tenant's bucket
	// that has been drawn on, the time it is full again, and throttled
	// counts by "cloud op" the calls an empty bucket refused.
	rateLimits []RateLimit
	buckets    map[bucketKey]time.Time
	throttled  map[string]int

	// changes counts what callers changed; saved is the count the state
	// file holds. Sync waits on them, so only callers whose changes are not
	// yet saved wait for a save.
	changes, saved atomic.Uint64
	// saving lets one save run at a time, so an older snapshot can never
	// land on disk after a newer one.
	saving sync.Mutex
	saves  atomic.Uint64
	// dirty marks what time alone changed: operations settling, instances
	// and tokens expiring. Loading an older state and applying the same
	// time redoes it, so nobody waits for it to be saved.
	dirty bool

	// resources are the objects other than instances clients created.
	resources map[resourceKey]*Resource
	// latencySet is whether Config chose the latency.
	latencySet bool

	idx indexes
}

type capacityKey struct {
	Cloud, Zone, InstanceType string
	Market                    catalog.Market
}

// quotaKey names a quota in one region, or Region "" for a global one.
type quotaKey struct {
	Cloud, Region, Name string
}

type offeringKey struct {
	Cloud, Zone, InstanceType string
}

type tokenEntry struct {
	InstanceID  string    `json:"instanceId"`
	OperationID string    `json:"operationId,omitempty"`
	Params      string    `json:"params"`
	Expires     time.Time `json:"expires"`
	// Gone is the instance as it ended, kept when it stops being listed:
	// EC2 answers a reused ClientToken with the terminated instance for a
	// day, well after it has left DescribeInstances.
	Gone *Instance `json:"gone,omitempty"`
	// Batch lists, for a token that launched several instances at once,
	// every instance in launch order; InstanceID is the first.
	Batch []string `json:"batch,omitempty"`
	// BatchGone keeps the batch's instances that stopped being listed.
	BatchGone map[string]*Instance `json:"batchGone,omitempty"`
}

// tokenLifetime is how long EC2 honours a ClientToken after its instance
// is gone, at least.
const tokenLifetime = 24 * time.Hour

// New creates a world, loading cfg.StatePath when it exists.
func New(cfg Config) (*World, error) {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Catalog == nil {
		cfg.Catalog = catalog.Default()
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = 64
	}
	if cfg.Quota == 0 {
		cfg.Quota = Unlimited
	}
	if cfg.PreemptedVisibleFor == 0 {
		cfg.PreemptedVisibleFor = 10 * time.Minute
	}
	pcg := rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	w := &World{
		cfg:        cfg,
		clock:      cfg.Clock,
		cat:        cfg.Catalog,
		uni:        newUniverse(cfg.Catalog),
		pcg:        pcg,
		rng:        rand.New(pcg),
		instances:  map[string]*Instance{},
		tokens:     map[string]tokenEntry{},
		operations: map[string]*Operation{},
		capacity:   map[capacityKey]int{},
		quota:      map[quotaKey]int{},
		quotaNames: map[quotaKey]int{},
		unoffered:  map[offeringKey]bool{},
		calls:      map[string]int{},
		buckets:    map[bucketKey]time.Time{},
		throttled:  map[string]int{},
		resources:  map[resourceKey]*Resource{},
		// Latency the caller chose wins over the one a state file keeps.
		latencySet: cfg.PendingFor != 0 || cfg.OperationTime != 0,
	}
	if cfg.StatePath != "" {
		if err := w.load(cfg.StatePath); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Now is the world's current time.
func (w *World) Now() time.Time { return w.clock.Now() }

// Catalog is the catalog the world was built from.
func (w *World) Catalog() *catalog.Catalog { return w.cat }

// Region reports a region of a cloud.
func (w *World) Region(cloud, name string) (catalog.Region, bool) { return w.cat.Region(cloud, name) }

// SetCapacity sets how many instances of a type and market a zone can hold
// in all; zero makes it a stock-out.
func (w *World) SetCapacity(cloud, zone, instanceType string, market catalog.Market, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.capacity[capacityKey{cloud, zone, instanceType, market}] = n
	w.changed()
}

// SetQuota sets the limit of a quota in a cloud's region, or of a global
// one for region "", in the quota's unit.
func (w *World) SetQuota(cloud, region, name string, limit int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.quota[quotaKey{cloud, region, name}] = limit
	w.changed()
}

// QuotaUsage is a quota as the world counts it: its limit, and what the
// cloud's pending and running instances use of it.
type QuotaUsage struct {
	catalog.Quota
	// Region is where it applies; "" for a global quota.
	Region      string
	Limit, Used int
}

// Quotas returns every quota the catalog names for a cloud in a region,
// with the cloud's global ones, sorted by name.
func (w *World) Quotas(cloud, region string) []QuotaUsage {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expire(w.clock.Now())
	var out []QuotaUsage
	for _, q := range w.cat.Quotas {
		if q.Cloud != cloud {
			continue
		}
		k := quotaKey{cloud, region, q.Name}
		if q.Scope == catalog.GlobalScope {
			k.Region = ""
		}
		out = append(out, QuotaUsage{Quota: q, Region: k.Region, Limit: w.quotaOf(k), Used: w.quotaUsed(k)})
	}
	slices.SortFunc(out, func(a, b QuotaUsage) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// QuotaFor is the first quota a create of a type in a region counts
// against, as it stands: what a front names when a fault, which carries
// none, says a quota ran out.
func (w *World) QuotaFor(cloud, region, instanceType string, market catalog.Market) (QuotaUsage, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.usesOf(cloud, instanceType, market) {
		if q, k, ok := w.quotaKeyOf(u, region); ok {
			return QuotaUsage{Quota: q, Region: k.Region, Limit: w.quotaOf(k), Used: w.quotaUsed(k)}, true
		}
	}
	return QuotaUsage{}, false
}

func (w *World) quotaKeyOf(u catalog.QuotaUse, region string) (catalog.Quota, quotaKey, bool) {
	q, ok := w.cat.QuotaNamed(u.Cloud, u.Quota)
	if !ok {
		return catalog.Quota{}, quotaKey{}, false
	}
	k := quotaKey{u.Cloud, region, u.Quota}
	if q.Scope == catalog.GlobalScope {
		k.Region = ""
	}
	return q, k, true
}

// overQuota returns the error a create of typ in region meets if one of
// its quotas has too little left, or nil.
func (w *World) overQuota(cloud, region string, typ InstanceType, market catalog.Market) *Error {
	for _, u := range w.usesOf(cloud, typ.Name, market) {
		q, k, ok := w.quotaKeyOf(u, region)
		if !ok {
			continue
		}
		used, limit := w.quotaUsed(k), w.quotaOf(k)
		if used+u.Per <= limit {
			continue
		}
		where := "in " + region
		if k.Region == "" {
			where = "globally"
		}
		return &Error{Kind: KindQuota, Message: fmt.Sprintf("%s (%s) %s: limit %d %s, in use %d, requested %d", q.Name, q.Description, where, limit, q.Unit, used, u.Per),
			Limit: limit, Used: used, Requested: u.Per, Region: k.Region, Quota: q.Name, QuotaDescription: q.Description, Unit: string(q.Unit)}
	}
	return nil
}

// LaunchSpec is what a front asks the world to create.
type LaunchSpec struct {
	Cloud        string
	Zone         string
	InstanceType string
	Market       catalog.Market
	// Name is the resource name for clouds that name instances (GCE,
	// Azure); EC2 leaves it empty and gets an id.
	Name string
	// Scope qualifies Name: the GCE project, the Azure resource group id.
	Scope string
	Tags  map[string]string
	// Params is a canonical form of every request parameter, compared when
	// a token is reused.
	Params string
	// Token is an idempotency key scoped by the front (EC2 ClientToken with
	// region); empty for none.
	Token string
	// Properties carries what a front must echo back (image, network,
	// disk), opaque to the world.
	Properties map[string]string
	// Operation, when set, makes the create a long-running operation of
	// that kind.
	Operation OperationKind
	// AsyncCapacity and AsyncQuota say the cloud reports a stock-out or an
	// exceeded quota on the operation rather than on the request: GCE does
	// both, ARM stock-outs only.
	AsyncCapacity, AsyncQuota bool
	// FailLater, when set, is the error the operation ends with, as a fault
	// that strikes after the request was accepted.
	FailLater *Error
}

// LaunchResult is what Launch did.
type LaunchResult struct {
	Instance *Instance
	// Operation tracks the creation for clouds whose creates are
	// long-running operations; nil otherwise.
	Operation *Operation
	// Created is false when the token matched an earlier launch, whose
	// instance and operation are returned instead.
	Created bool
}

// errMismatch is the answer to a token reused with other parameters.
func errMismatch() *Error {
	return &Error{Kind: KindIdempotencyMismatch, Message: "Arguments on this idempotent request are inconsistent with arguments used in previous request(s)."}
}

// placement checks that a launch's zone exists and offers its type on its
// market, and returns the zone's region and the type.
func (w *World) placement(spec LaunchSpec) (string, InstanceType, error) {
	region, ok := w.ZoneRegion(spec.Cloud, spec.Zone)
	if !ok {
		return "", InstanceType{}, &Error{Kind: KindUnknownZone, Message: fmt.Sprintf("zone %q does not exist", spec.Zone)}
	}
	typ, ok := w.typeIn(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market)
	if !ok {
		if !w.TypeExists(spec.Cloud, spec.InstanceType) {
			return "", InstanceType{}, &Error{Kind: KindUnknownType, Message: fmt.Sprintf("instance type %q does not exist", spec.InstanceType)}
		}
		return "", InstanceType{}, &Error{Kind: KindUnsupported, Message: fmt.Sprintf("instance type %q is not offered as %s in %s", spec.InstanceType, spec.Market, spec.Zone)}
	}
	return region, typ, nil
}

// Launch creates an instance, or returns what an earlier Launch with the
// same Token created.
func (w *World) Launch(spec LaunchSpec) (LaunchResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)

	if spec.Token != "" {
		if t, ok := w.tokens[spec.Token]; ok {
			if spec.Params != "" && t.Params != spec.Params {
				return LaunchResult{}, errMismatch()
			}
			res := LaunchResult{}
			if inst, ok := w.instances[t.InstanceID]; ok {
				res.Instance = w.snapshot(inst, now)
			} else if t.Gone != nil {
				res.Instance = w.snapshot(t.Gone, now)
			}
			if op, ok := w.operations[t.OperationID]; ok {
				res.Operation = op.snapshot(now)
			}
			if res.Instance != nil || res.Operation != nil {
				return res, nil
			}
		}
	}
	region, typ, err := w.placement(spec)
	if err != nil {
		return LaunchResult{}, err
	}
	if spec.Name != "" {
		for _, other := range w.named(spec.Cloud, spec.Scope, spec.Name) {
			if w.visible(other, now) {
				return LaunchResult{Instance: w.snapshot(other, now)}, &Error{Kind: KindAlreadyExists, Message: fmt.Sprintf("%s already exists", spec.Name)}
			}
		}
	}
	fail := spec.FailLater
	if fail == nil {
		if used, limit := w.used(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market), w.capacityOf(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market); used >= limit {
			fail = &Error{Kind: KindCapacity, Message: fmt.Sprintf("no %s %s capacity left in %s", spec.Market, spec.InstanceType, spec.Zone)}
		} else if over := w.overQuota(spec.Cloud, region, typ, spec.Market); over != nil {
			fail = over
		}
		// Clouds without operations refuse at once; the others accept and
		// fail the operation, as GCE does for stock-outs.
		async := spec.Operation != "" && (fail != nil && fail.Kind == KindCapacity && spec.AsyncCapacity || fail != nil && fail.Kind == KindQuota && spec.AsyncQuota)
		if fail != nil && !async {
			return LaunchResult{}, fail
		}
	}

	inst := w.newInstance(spec, region, typ, now)
	w.put(inst)
	res := LaunchResult{Created: true}
	entry := tokenEntry{InstanceID: inst.ID, Params: spec.Params, Expires: now.Add(tokenLifetime)}
	if spec.Operation != "" {
		op := w.startOperation(spec.Cloud, spec.Operation, inst, now, fail)
		inst.CreateOp = op.ID
		entry.OperationID = op.ID
		res.Operation = op.snapshot(now)
	}
	if spec.Token != "" {
		w.tokens[spec.Token] = entry
		w.expireSoon(entry.Expires)
	}
	w.changed()
	res.Instance = w.snapshot(inst, now)
	return res, nil
}

// newInstance is a pending instance of spec, not yet in the world.
func (w *World) newInstance(spec LaunchSpec, region string, typ InstanceType, now time.Time) *Instance {
	inst := &Instance{
		ID:           w.newID(spec.Cloud, region),
		Cloud:        spec.Cloud,
		Region:       region,
		Zone:         spec.Zone,
		Scope:        spec.Scope,
		Name:         spec.Name,
		InstanceType: spec.InstanceType,
		Market:       spec.Market,
		GPUModel:     typ.GPUModel,
		GPUs:         typ.GPUs,
		Tags:         maps.Clone(spec.Tags),
		Properties:   maps.Clone(spec.Properties),
		Token:        spec.Token,
		LaunchedAt:   now,
		State:        StatePending,
		Seq:          w.seq,
	}
	if inst.Tags == nil {
		inst.Tags = map[string]string{}
	}
	return inst
}

// Get returns an instance by id, if it is still visible.
func (w *World) Get(id string) (*Instance, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	inst, ok := w.instances[id]
	if !ok || !w.visible(inst, now) {
		return nil, false
	}
	return w.snapshot(inst, now), true
}

// ByName returns the visible instance of a cloud with a name in a scope.
func (w *World) ByName(cloud, scope, name string) (*Instance, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	for _, inst := range w.named(cloud, scope, name) {
		if w.visible(inst, now) {
			return w.snapshot(inst, now), true
		}
	}
	return nil, false
}

// List returns a cloud's visible instances that pass keep, in a stable
// order (launch order), which fronts page through.
func (w *World) List(cloud string, keep func(*Instance) bool) []*Instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	var out []*Instance
	for _, inst := range w.instances {
		if inst.Cloud != cloud || !w.visible(inst, now) {
			continue
		}
		c := w.snapshot(inst, now)
		if keep == nil || keep(c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *Instance) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// Instances returns every visible instance of every cloud the catalog
// has, for inspection.
func (w *World) Instances() []*Instance {
	var out []*Instance
	for _, c := range w.uni.clouds {
		out = append(out, w.List(c, nil)...)
	}
	return out
}

// Room is how many more instances of a type and market a zone can hold
// now: its capacity less those pending or running there, never below 0.
// Quotas are not counted: a cloud that reports where it has room (Lambda
// Cloud's instance types) reports its stock, not the caller's limits.
func (w *World) Room(cloud, zone, instanceType string, market catalog.Market) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expire(w.clock.Now())
	if _, ok := w.typeIn(cloud, zone, instanceType, market); !ok {
		return 0
	}
	return max(0, w.capacityOf(cloud, zone, instanceType, market)-w.used(cloud, zone, instanceType, market))
}

// Terminate starts the end of an instance. For EC2 it becomes
// shutting-down and then terminated, visible for an hour; for clouds whose
// deletes are operations, the instance stays until Finish is called.
// Terminating a gone or terminating instance is a no-op.
func (w *World) Terminate(id string) (*Instance, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	inst, err := w.visibleInstance(id, now)
	if err != nil {
		return nil, err
	}
	if inst.State != StateTerminated && inst.State != StateShuttingDown {
		inst.EndedAt = now
		w.setState(inst, StateShuttingDown)
		w.changed()
	}
	return w.snapshot(inst, now), nil
}

// visibleInstance is the instance of an id as of now, or the not-found
// error the fronts answer for one that is gone. The caller holds w.mu.
func (w *World) visibleInstance(id string, now time.Time) (*Instance, error) {
	inst, ok := w.instances[id]
	if !ok || !w.visible(inst, now) {
		return nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("instance %s not found", id)}
	}
	return inst, nil
}

// Remove deletes an instance outright, as a completed GCE or ARM delete
// does.
func (w *World) Remove(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.instances[id]; ok {
		w.drop(id)
		w.changed()
	}
}

// SetTags adds or replaces tags on an instance.
func (w *World) SetTags(id string, tags map[string]string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	inst, err := w.visibleInstance(id, w.clock.Now())
	if err != nil {
		return err
	}
	maps.Copy(inst.Tags, tags)
	w.changed()
	return nil
}

// Preempt reclaims a running spot instance the way its cloud does: it ends
// with the cloud's preemption signal and stays visible for a while.
func (w *World) Preempt(id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	inst, err := w.visibleInstance(id, now)
	if err != nil {
		return err
	}
	if inst.Market != catalog.Spot {
		return &Error{Kind: KindInvalid, Message: fmt.Sprintf("instance %s is not a spot instance", id)}
	}
	w.reclaim(inst, now)
	return nil
}

// reclaim ends a spot instance as its cloud does when it takes it back,
// with the signal the cloud gives of it: EC2's state reason, Azure's
// eviction, and on GCE a compute.instances.preempted operation on the
// instance, done at once, which is how GCE tells a preemption from a stop
// or a delete.
func (w *World) reclaim(inst *Instance, now time.Time) {
	inst.Preempted = true
	inst.EndedAt = now
	w.setState(inst, StateTerminated)
	if inst.Cloud == catalog.GCP {
		// Named as GCE names its system events, and from no random
		// draw, so that a preemption leaves the world's ids as they were.
		op := &Operation{
			ID: fmt.Sprintf("systemevent-%d-%s", now.UnixMilli(), inst.ID), Cloud: inst.Cloud, Kind: OperationPreempted,
			InstanceID: inst.ID, Name: inst.Name, Scope: inst.Scope, Zone: inst.Zone,
			StartedAt: now, DoneAt: now, Applied: true,
		}
		w.operations[op.ID] = op
		w.settleSoon(now.Add(operationLifetime + time.Nanosecond))
	}
	w.changed()
}

// preemptRandom preempts one running spot instance of a cloud, chosen by
// the world's random source.
func (w *World) preemptRandom(cloud string) {
	now := w.clock.Now()
	var spot []*Instance
	for _, inst := range w.instances {
		if inst.Cloud == cloud && inst.Market == catalog.Spot && w.stateAt(inst, now) == StateRunning {
			spot = append(spot, inst)
		}
	}
	if len(spot) == 0 {
		return
	}
	slices.SortFunc(spot, func(a, b *Instance) int { return cmp.Compare(a.Seq, b.Seq) })
	w.reclaim(spot[w.rng.IntN(len(spot))], now)
}

// Rand returns a number in [0, n) from the world's seeded source, for
// fronts that need randomness (ids, jitter).
func (w *World) Rand(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

func (w *World) capacityOf(cloud, zone, instanceType string, market catalog.Market) int {
	if n, ok := w.capacity[capacityKey{cloud, zone, instanceType, market}]; ok {
		return n
	}
	return w.cfg.Capacity
}

// expire applies the passage of time: EC2's terminated instances vanish
// after an hour, preempted instances elsewhere after their cloud's window,
// and tokens run out.
func (w *World) expire(now time.Time) {
	w.settle(now)
	if !w.idx.scanDue && (w.idx.nextEnd.IsZero() || now.Before(w.idx.nextEnd)) {
		return
	}
	w.idx.scanDue, w.idx.nextEnd = false, time.Time{}
	for id, inst := range w.instances {
		if !w.visible(inst, now) {
			if inst.Token != "" {
				if t, ok := w.tokens[inst.Token]; ok && slices.Contains(t.Batch, id) {
					if t.BatchGone == nil {
						t.BatchGone = map[string]*Instance{}
					}
					t.BatchGone[id] = w.snapshot(inst, now)
					w.tokens[inst.Token] = t
				} else if ok && t.InstanceID == id {
					t.Gone = w.snapshot(inst, now)
					w.tokens[inst.Token] = t
				}
			}
			w.drop(id)
			w.dirty = true
			continue
		}
		if end, ok := w.visibleUntil(inst, now); ok {
			w.expireSoon(end)
		}
	}
	w.idx.scanDue = false
	for k, t := range w.tokens {
		live := false
		for _, id := range append([]string{t.InstanceID}, t.Batch...) {
			if _, ok := w.instances[id]; ok {
				live = true
			}
		}
		switch {
		case live:
		case now.After(t.Expires):
			delete(w.tokens, k)
			w.dirty = true
		default:
			w.expireSoon(t.Expires.Add(time.Nanosecond))
		}
	}
}

// visibleUntil is when a visible instance stops being listed if nothing
// else happens to it; ok is false for one that stays.
func (w *World) visibleUntil(i *Instance, now time.Time) (time.Time, bool) {
	if w.stateAt(i, now) != StateTerminated {
		return time.Time{}, false
	}
	switch {
	case i.Cloud == catalog.AWS:
		return i.EndedAt.Add(ec2TerminatedVisible), true
	case i.Preempted:
		return i.EndedAt.Add(w.cfg.PreemptedVisibleFor), true
	}
	return now, true
}

// newID names a new instance as its cloud does. The region is for the
// clouds whose ids carry it (OCI's).
func (w *World) newID(cloud, region string) string {
	w.seq++
	switch cloud {
	case catalog.AWS:
		// "i-0" and 16 random hex digits, as EC2 has named instances since
		// its ids grew to 17 characters.
		return fmt.Sprintf("i-0%016x", w.rng.Uint64())
	case catalog.GCP:
		// GCE ids are unsigned 64-bit decimals.
		return fmt.Sprintf("%d", w.rng.Uint64()>>1|1<<61)
	case catalog.Lambda:
		// Lambda Cloud's ids are 32 hex digits.
		return fmt.Sprintf("%016x%016x", w.rng.Uint64(), w.rng.Uint64())
	case catalog.OCI:
		// An OCID: the resource type, the realm, the region and a unique
		// part of 60 lower-case base32 characters.
		b := make([]byte, 0, 40)
		for range 5 {
			b = binary.BigEndian.AppendUint64(b, w.rng.Uint64())
		}
		unique := strings.ToLower(base32.StdEncoding.EncodeToString(b))[:60]
		return fmt.Sprintf("ocid1.instance.oc1.%s.%s", region, unique)
	default:
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(w.rng.UintN(256))
		}
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
}

// Token helpers for fronts: a key that scopes a token to a cloud and region.
func TokenKey(cloud, region, token string) string {
	return strings.Join([]string{cloud, region, token}, "\x00")
}
