package sim

import (
	"cmp"
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
	// GPUQuota is the number of GPUs of one model each region allows per
	// cloud. Zero means 1024.
	GPUQuota int
	// PendingFor is how long a new instance stays pending before running.
	PendingFor time.Duration
	// OperationTime is how long a long-running operation (GCE, ARM) takes.
	OperationTime time.Duration
	// PreemptedVisibleFor is how long a preempted GCE or Azure instance is
	// still listed before it is gone. Zero means 10 minutes. (EC2 lists
	// every terminated instance for an hour.)
	PreemptedVisibleFor time.Duration
}

// World is the simulated state of the three clouds behind the emulator's
// fronts. All methods are safe for concurrent use.
type World struct {
	mu    sync.Mutex
	cfg   Config
	clock Clock
	cat   *catalog.Catalog
	rng   *rand.Rand
	pcg   *rand.PCG

	instances map[string]*Instance // by id
	// tokens maps a cloud's idempotency key to what it created.
	tokens     map[string]tokenEntry
	operations map[string]*Operation
	capacity   map[capacityKey]int
	quota      map[quotaKey]int
	faults     []*Fault
	calls      map[string]int
	seq        uint64

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
}

type capacityKey struct {
	Cloud, Zone, InstanceType string
	Market                    catalog.Market
}

type quotaKey struct {
	Cloud, Region, GPUModel string
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
	if cfg.GPUQuota == 0 {
		cfg.GPUQuota = 1024
	}
	if cfg.PreemptedVisibleFor == 0 {
		cfg.PreemptedVisibleFor = 10 * time.Minute
	}
	pcg := rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	w := &World{
		cfg:        cfg,
		clock:      cfg.Clock,
		cat:        cfg.Catalog,
		pcg:        pcg,
		rng:        rand.New(pcg),
		instances:  map[string]*Instance{},
		tokens:     map[string]tokenEntry{},
		operations: map[string]*Operation{},
		capacity:   map[capacityKey]int{},
		quota:      map[quotaKey]int{},
		calls:      map[string]int{},
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

// ZoneRegion returns the region a zone belongs to.
func (w *World) ZoneRegion(cloud, zone string) (string, bool) {
	for _, r := range w.cat.RegionsOf(cloud) {
		if slices.Contains(r.Zones, zone) {
			return r.Name, true
		}
	}
	return "", false
}

// InstanceType describes an instance type as the catalog knows it.
type InstanceType struct {
	Name      string
	GPUModel  string
	GPUs      int
	VCPUs     int
	MemoryGiB float64
}

// Type looks an instance type up in a zone for a market. It reports false
// when the zone does not offer it.
func (w *World) Type(cloud, zone, name string, market catalog.Market) (InstanceType, bool) {
	region, ok := w.ZoneRegion(cloud, zone)
	if !ok {
		return InstanceType{}, false
	}
	for _, o := range w.cat.Offers {
		if o.Cloud == cloud && o.Region == region && o.InstanceType == name && o.Market == market && (o.Zone == "" || o.Zone == zone) {
			return InstanceType{Name: name, GPUModel: o.GPUModel, GPUs: o.GPUs, VCPUs: o.VCPUs, MemoryGiB: o.MemoryGiB}, true
		}
	}
	return InstanceType{}, false
}

// TypeExists reports whether a cloud has an instance type anywhere.
func (w *World) TypeExists(cloud, name string) bool {
	return slices.ContainsFunc(w.cat.Offers, func(o catalog.Offer) bool { return o.Cloud == cloud && o.InstanceType == name })
}

// SetCapacity sets how many instances of a type and market a zone can hold
// in all; zero makes it a stock-out.
func (w *World) SetCapacity(cloud, zone, instanceType string, market catalog.Market, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.capacity[capacityKey{cloud, zone, instanceType, market}] = n
	w.changed()
}

// SetGPUQuota sets how many GPUs of a model a cloud's region allows.
func (w *World) SetGPUQuota(cloud, region, gpuModel string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.quota[quotaKey{cloud, region, gpuModel}] = n
	w.changed()
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
				return LaunchResult{}, &Error{Kind: KindIdempotencyMismatch, Message: "Arguments on this idempotent request are inconsistent with arguments used in previous request(s)."}
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
	region, ok := w.ZoneRegion(spec.Cloud, spec.Zone)
	if !ok {
		return LaunchResult{}, &Error{Kind: KindUnknownZone, Message: fmt.Sprintf("zone %q does not exist", spec.Zone)}
	}
	typ, ok := w.Type(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market)
	if !ok {
		if !w.TypeExists(spec.Cloud, spec.InstanceType) {
			return LaunchResult{}, &Error{Kind: KindUnknownType, Message: fmt.Sprintf("instance type %q does not exist", spec.InstanceType)}
		}
		return LaunchResult{}, &Error{Kind: KindUnsupported, Message: fmt.Sprintf("instance type %q is not offered as %s in %s", spec.InstanceType, spec.Market, spec.Zone)}
	}
	if spec.Name != "" {
		for _, other := range w.instances {
			if other.Cloud == spec.Cloud && other.Scope == spec.Scope && other.Name == spec.Name && w.visible(other, now) {
				return LaunchResult{Instance: w.snapshot(other, now)}, &Error{Kind: KindAlreadyExists, Message: fmt.Sprintf("%s already exists", spec.Name)}
			}
		}
	}
	fail := spec.FailLater
	if fail == nil {
		if used, limit := w.used(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market), w.capacityOf(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market); used >= limit {
			fail = &Error{Kind: KindCapacity, Message: fmt.Sprintf("no %s %s capacity left in %s", spec.Market, spec.InstanceType, spec.Zone)}
		} else if used, limit := w.gpusUsed(spec.Cloud, region, typ.GPUModel), w.quotaOf(spec.Cloud, region, typ.GPUModel); used+typ.GPUs > limit {
			fail = &Error{Kind: KindQuota, Message: fmt.Sprintf("%s GPUs in %s: limit %d, in use %d, requested %d", typ.GPUModel, region, limit, used, typ.GPUs),
				Limit: limit, Used: used, Requested: typ.GPUs, Region: region, GPUModel: typ.GPUModel}
		}
		// Clouds without operations refuse at once; the others accept and
		// fail the operation, as GCE does for stock-outs.
		async := spec.Operation != "" && (fail != nil && fail.Kind == KindCapacity && spec.AsyncCapacity || fail != nil && fail.Kind == KindQuota && spec.AsyncQuota)
		if fail != nil && !async {
			return LaunchResult{}, fail
		}
	}

	inst := &Instance{
		ID:           w.newID(spec.Cloud),
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
	w.instances[inst.ID] = inst
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
	}
	w.changed()
	res.Instance = w.snapshot(inst, now)
	return res, nil
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
	for _, inst := range w.instances {
		if inst.Cloud == cloud && inst.Scope == scope && inst.Name == name && w.visible(inst, now) {
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

// Instances returns every visible instance of every cloud, for inspection.
func (w *World) Instances() []*Instance {
	var out []*Instance
	for _, c := range catalog.Clouds {
		out = append(out, w.List(c, nil)...)
	}
	return out
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
	inst, ok := w.instances[id]
	if !ok || !w.visible(inst, now) {
		return nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("instance %s not found", id)}
	}
	if inst.State != StateTerminated && inst.State != StateShuttingDown {
		inst.State = StateShuttingDown
		inst.EndedAt = now
		w.changed()
	}
	return w.snapshot(inst, now), nil
}

// Remove deletes an instance outright, as a completed GCE or ARM delete
// does.
func (w *World) Remove(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.instances[id]; ok {
		delete(w.instances, id)
		w.changed()
	}
}

// SetTags adds or replaces tags on an instance.
func (w *World) SetTags(id string, tags map[string]string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	inst, ok := w.instances[id]
	if !ok || !w.visible(inst, w.clock.Now()) {
		return &Error{Kind: KindNotFound, Message: fmt.Sprintf("instance %s not found", id)}
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
	inst, ok := w.instances[id]
	if !ok || !w.visible(inst, now) {
		return &Error{Kind: KindNotFound, Message: fmt.Sprintf("instance %s not found", id)}
	}
	if inst.Market != catalog.Spot {
		return &Error{Kind: KindInvalid, Message: fmt.Sprintf("instance %s is not a spot instance", id)}
	}
	inst.Preempted = true
	inst.State = StateTerminated
	inst.EndedAt = now
	w.changed()
	return nil
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
	inst := spot[w.rng.IntN(len(spot))]
	inst.Preempted = true
	inst.State = StateTerminated
	inst.EndedAt = now
	w.changed()
}

// Rand returns a number in [0, n) from the world's seeded source, for
// fronts that need randomness (ids, jitter).
func (w *World) Rand(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

func (w *World) used(cloud, zone, instanceType string, market catalog.Market) int {
	n := 0
	now := w.clock.Now()
	for _, inst := range w.instances {
		if inst.Cloud == cloud && inst.Zone == zone && inst.InstanceType == instanceType && inst.Market == market && w.holdsCapacity(inst, now) {
			n++
		}
	}
	return n
}

func (w *World) gpusUsed(cloud, region, model string) int {
	n := 0
	now := w.clock.Now()
	for _, inst := range w.instances {
		if inst.Cloud == cloud && inst.Region == region && inst.GPUModel == model && w.holdsCapacity(inst, now) {
			n += inst.GPUs
		}
	}
	return n
}

func (w *World) capacityOf(cloud, zone, instanceType string, market catalog.Market) int {
	if n, ok := w.capacity[capacityKey{cloud, zone, instanceType, market}]; ok {
		return n
	}
	return w.cfg.Capacity
}

func (w *World) quotaOf(cloud, region, model string) int {
	if n, ok := w.quota[quotaKey{cloud, region, model}]; ok {
		return n
	}
	return w.cfg.GPUQuota
}

// expire applies the passage of time: EC2's terminated instances vanish
// after an hour, preempted instances elsewhere after their cloud's window,
// and tokens run out.
func (w *World) expire(now time.Time) {
	w.settle(now)
	for id, inst := range w.instances {
		if !w.visible(inst, now) {
			if inst.Token != "" {
				if t, ok := w.tokens[inst.Token]; ok && t.InstanceID == id {
					gone := w.snapshot(inst, now)
					t.Gone = gone
					w.tokens[inst.Token] = t
				}
			}
			delete(w.instances, id)
			w.dirty = true
		}
	}
	for k, t := range w.tokens {
		if _, live := w.instances[t.InstanceID]; !live && now.After(t.Expires) {
			delete(w.tokens, k)
			w.dirty = true
		}
	}
}

func (w *World) newID(cloud string) string {
	w.seq++
	switch cloud {
	case catalog.AWS:
		return fmt.Sprintf("i-%017x", w.rng.Uint64()&0xfffffffffffffff)
	case catalog.GCP:
		// GCE ids are unsigned 64-bit decimals.
		return fmt.Sprintf("%d", w.rng.Uint64()>>1|1<<61)
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
