// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// ReportVersion is the format version of a Report in JSON.
const ReportVersion = 1

// Names of the runs every backtest makes besides the variants asked for.
const (
	// Repository is the repository as it is.
	Repository = "repository"
	// NoMigrations is the repository with running nodes never moved for
	// price: a keep bonus worth their whole price.
	NoMigrations = "no-migrations"
)

// Options say what to replay and how.
type Options struct {
	// From and To bound the replay: steps start at From, and the last one
	// before To.
	From, To time.Time
	// Step is how often the loop runs; an hour when zero.
	Step time.Duration
	// Seed drives the preemptions: the same seed, the same preemptions.
	Seed uint64
	// PreemptRate is, by market, the chance per hour that a running node
	// of it is preempted.
	PreemptRate map[catalog.Market]float64
	// Catalog is what is sold where; History says what it cost when. An
	// offer the history does not know keeps the catalog's price.
	Catalog *catalog.Catalog
	History *history.History
}

// Variant is a run with some of the repository's defaults changed.
type Variant struct {
	Name     string
	Settings []Setting
}

// Report is what each run would have cost.
type Report struct {
	Version int       `json:"version"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Step    string    `json:"step"`
	Steps   int       `json:"steps"`
	Seed    uint64    `json:"seed"`
	// PreemptRate is by market, per hour.
	PreemptRate map[catalog.Market]float64 `json:"preemptRate,omitempty"`
	// Runs are the repository, then no-migrations, then the variants in
	// the order asked.
	Runs []Run `json:"runs"`
}

// Run is one policy's replay.
type Run struct {
	Name     string    `json:"name"`
	Settings []Setting `json:"settings,omitempty"`
	// CostMicros is what the nodes that ran cost over the whole period,
	// at the prices of each step; nodes on reserved capacity cost nothing.
	CostMicros int64 `json:"costMicros"`
	// BaselineMicros is what the cheapest on-demand placement on one hyperscaler
	// of the same nodes would have cost over the period (the plans'
	// baseline); zero when no single cloud could serve every workload.
	BaselineMicros int64 `json:"baselineMicros"`
	// Migrations counts nodes moved to another offer for price.
	Migrations int `json:"migrations"`
	// MoveSteps counts the steps at which any node moved.
	MoveSteps   int `json:"moveSteps"`
	Preemptions int `json:"preemptions"`
	Creates     int `json:"creates"`
	Deletes     int `json:"deletes"`
	// Refusals counts steps whose deletions the circuit breaker
	// (defaults.disruption.refuseOver) refused; Deferrals, steps whose
	// deletions the disruption budget held for later steps.
	Refusals  int `json:"refusals"`
	Deferrals int `json:"deferrals"`
	// Solves counts the plans made; steps where neither prices nor nodes
	// changed reuse the last one.
	Solves int `json:"solves"`
	// Hourly is, per step, what the running nodes cost per hour then.
	Hourly []int64 `json:"hourlyMicros"`
	// Unplaced is, per step, how many nodes the plan could not place;
	// omitted when every step placed every node.
	Unplaced []int `json:"unplaced,omitempty"`
}

// Times returns the start of each step.
func (r *Report) Times() []time.Time {
	step, _ := time.ParseDuration(r.Step)
	out := make([]time.Time, r.Steps)
	for i := range out {
		out[i] = r.From.Add(time.Duration(i) * step)
	}
	return out
}

// Backtest replays the repository, the no-migrations policy and each
// variant over the period.
func Backtest(repo *schema.Repo, opts Options, variants []Variant) (*Report, error) {
	if opts.Step == 0 {
		opts.Step = time.Hour
	}
	switch {
	case opts.Step < time.Minute:
		return nil, fmt.Errorf("step %s is shorter than a minute", opts.Step)
	case !opts.To.After(opts.From):
		return nil, fmt.Errorf("the period is empty: %s is not after %s", opts.To.Format(time.RFC3339), opts.From.Format(time.RFC3339))
	case opts.Catalog == nil:
		return nil, errors.New("no catalog to replay")
	}
	if opts.History == nil {
		opts.History = &history.History{}
	}
	for m, r := range opts.PreemptRate {
		if r < 0 || r > 1 {
			return nil, fmt.Errorf("preemption rate %g for %s: want 0 to 1 per hour", r, m)
		}
	}
	runs := append([]Variant{
		{Name: Repository},
		{Name: NoMigrations, Settings: []Setting{{Key: "defaults.migrationThreshold", Value: "1"}}},
	}, variants...)
	report := &Report{Version: ReportVersion, From: opts.From.UTC(), To: opts.To.UTC(), Step: opts.Step.String(), Seed: opts.Seed, PreemptRate: opts.PreemptRate}
	report.Steps = int((opts.To.Sub(opts.From) + opts.Step - 1) / opts.Step)
	epochs := opts.History.Changes(opts.From.Add(time.Nanosecond), opts.To)
	prices := &priceCache{opts: opts, epochs: epochs}
	for _, v := range runs {
		r, err := patched(repo, v.Settings)
		if err != nil {
			return nil, err
		}
		run, err := replay(r, opts, prices)
		if err != nil {
			return nil, fmt.Errorf("replaying %s, %w", v.Name, err)
		}
		run.Name, run.Settings = v.Name, v.Settings
		report.Runs = append(report.Runs, *run)
	}
	return report, nil
}

// priceCache holds each epoch's catalog — a span of the period in which no
// price changes — shared by every run.
type priceCache struct {
	opts   Options
	epochs []time.Time
	cats   map[int]*catalog.Catalog
}

// epoch is the index of the span a time falls in: how many price changes
// after From happened by then.
func (p *priceCache) epoch(t time.Time) int {
	return sort.Search(len(p.epochs), func(i int) bool { return p.epochs[i].After(t) })
}

func (p *priceCache) catalog(epoch int, t time.Time) *catalog.Catalog {
	if c, ok := p.cats[epoch]; ok {
		return c
	}
	if p.cats == nil {
		p.cats = map[int]*catalog.Catalog{}
	}
	c := p.opts.History.At(p.opts.Catalog, t)
	p.cats[epoch] = c
	return c
}

// replayer is one run's state between steps.
type replayer struct {
	repo     *schema.Repo
	opts     Options
	revision map[string]string
	nodes    []planner.Instance
	nextID   int
	// blocked are offers that preempted a node, until when.
	blocked   map[planner.OfferKey]time.Time
	reserved  map[[3]string]int
	preempted int
}

func replay(repo *schema.Repo, opts Options, prices *priceCache) (*Run, error) {
	rp := &replayer{repo: repo, opts: opts, revision: planner.SpecRevisions(repo.Fleets), blocked: map[planner.OfferKey]time.Time{}, reserved: map[[3]string]int{}}
	for _, r := range repo.Config.Reservations {
		rp.reserved[[3]string{r.Cloud, r.Region, r.InstanceType}] += r.Count
	}
	run := &Run{}
	diffOpts := planner.DiffOptions{Revision: rp.revision, Prune: repo.Config.Defaults.Prune}
	secs := int64(opts.Step / time.Second)
	var (
		costSecs, baselineSecs int64 // micro-dollar-seconds: divided by 3600 once, at the end
		input                  planner.Input
		inputEpoch             = -1
		priceOf                map[planner.OfferKey]int64
		lastKey                string
		plan                   *planner.Plan
		changes                planner.Changes
		anyUnplaced            bool
	)
	for step := range prices.stepsIn() {
		t := opts.From.Add(time.Duration(step) * opts.Step)
		if epoch := prices.epoch(t); epoch != inputEpoch {
			cat := prices.catalog(epoch, t)
			input = planner.NewInput(repo, cat)
			inputEpoch = epoch
			priceOf = make(map[planner.OfferKey]int64, len(input.Offers))
			for _, o := range input.Offers {
				priceOf[o.OfferKey] = o.PriceMicros
			}
		}
		blocked := rp.activeBlocks(t)
		// Same prices, same nodes, same blocklist: the same plan and diff.
		if key := rp.key(inputEpoch, blocked); key != lastKey || plan == nil {
			in := input
			in.Observed = slices.Clone(rp.nodes)
			in.Blocked = blocked
			var err error
			if plan, err = planner.Solve(in); err != nil {
				return nil, fmt.Errorf("planning at %s, %w", t.Format(time.RFC3339), err)
			}
			// Each step is a run: its budget is of the nodes it finds.
			diffOpts.Budgets = planner.Budgets(repo.Fleets, repo.Config.Defaults, rp.nodes)
			changes = planner.Diff(plan, rp.nodes, diffOpts)
			run.Solves++
			lastKey = key
		}
		if rp.apply(changes, input, t, run) {
			// What runs changed: the next step plans again.
			lastKey = ""
		}
		if len(changes.Refused) > 0 {
			run.Refusals++
		}
		if len(changes.Deferred) > 0 {
			run.Deferrals++
		}
		rate := rp.hourlyCost(priceOf)
		run.Hourly = append(run.Hourly, rate)
		costSecs += rate * secs
		baselineSecs += plan.BaselineMicros * secs
		unplaced := 0
		for _, f := range plan.Fleets {
			for _, w := range f.Workloads {
				unplaced += w.Desired - w.Placed
			}
		}
		run.Unplaced = append(run.Unplaced, unplaced)
		anyUnplaced = anyUnplaced || unplaced > 0
		if rp.preempt(step, t) > 0 {
			lastKey = ""
		}
	}
	run.CostMicros = costSecs / 3600
	run.BaselineMicros = baselineSecs / 3600
	run.Preemptions = rp.preempted
	if !anyUnplaced {
		run.Unplaced = nil
	}
	return run, nil
}

func (p *priceCache) stepsIn() func(yield func(int) bool) {
	n := int((p.opts.To.Sub(p.opts.From) + p.opts.Step - 1) / p.opts.Step)
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// key fingerprints what a plan depends on that changes between steps.
func (rp *replayer) key(epoch int, blocked []planner.OfferKey) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(epoch))
	for _, n := range rp.nodes {
		b.WriteString("|" + n.ID + ":" + string(n.State))
	}
	for _, k := range blocked {
		b.WriteString("#" + k.String())
	}
	return b.String()
}

func (rp *replayer) activeBlocks(t time.Time) []planner.OfferKey {
	var out []planner.OfferKey
	for k, until := range rp.blocked {
		if t.Before(until) {
			out = append(out, k)
		} else {
			delete(rp.blocked, k)
		}
	}
	slices.SortFunc(out, planner.OfferKey.Compare)
	return out
}

// apply makes the changes: a create is a running node at once, a delete
// removes one. It reports whether anything changed.
func (rp *replayer) apply(changes planner.Changes, in planner.Input, t time.Time, run *Run) bool {
	if len(changes.Actions) == 0 {
		return false
	}
	gone := map[string]bool{}
	moved := 0
	for _, a := range changes.Actions {
		switch a.Kind {
		case planner.Create:
			rp.nextID++
			rp.nodes = append(rp.nodes, planner.Instance{
				ID:         fmt.Sprintf("node-%06d", rp.nextID),
				OfferKey:   a.Offer,
				Fleet:      a.Fleet,
				Workload:   a.Workload,
				Token:      a.Token,
				Bootstrap:  bootstrapTag(in.Bootstraps[a.Fleet+"/"+a.Workload], a.Offer.Cloud),
				State:      planner.StateRunning,
				LaunchedAt: t,
			})
			run.Creates++
		case planner.Delete:
			gone[a.Instance] = true
			run.Deletes++
			if a.Cause == planner.CauseMoved {
				moved++
			}
		}
	}
	rp.nodes = slices.DeleteFunc(rp.nodes, func(n planner.Instance) bool { return gone[n.ID] })
	slices.SortFunc(rp.nodes, planner.CompareInstances)
	run.Migrations += moved
	if moved > 0 {
		run.MoveSteps++
	}
	return true
}

func bootstrapTag(boots []planner.Bootstrap, cloud string) string {
	for _, b := range boots {
		if b.Cloud == cloud {
			return b.Tag()
		}
	}
	return ""
}

// hourlyCost is what the running nodes cost per hour at these prices:
// those on reserved capacity (on-demand, up to the reservation's count)
// cost nothing more, and a node whose price is unknown costs nothing
// known.
func (rp *replayer) hourlyCost(priceOf map[planner.OfferKey]int64) int64 {
	var total int64
	reserved := maps.Clone(rp.reserved)
	for _, n := range rp.nodes {
		if n.State != planner.StateRunning {
			continue
		}
		if n.Market == catalog.OnDemand {
			k := [3]string{n.Cloud, n.Region, n.InstanceType}
			if reserved[k] > 0 {
				reserved[k]--
				continue
			}
		}
		if p := priceOf[n.OfferKey]; p > 0 {
			total += p
		}
	}
	return total
}

// preempt ends, at the end of a step, each running node its market's rate
// draws. The draw hashes the seed, the node and the step, so it does not
// depend on what else runs. The offer is blocklisted as reconcile does.
func (rp *replayer) preempt(step int, t time.Time) int {
	hours := rp.opts.Step.Hours()
	n := 0
	for i := range rp.nodes {
		node := &rp.nodes[i]
		rate := rp.opts.PreemptRate[node.Market]
		if node.State != planner.StateRunning || rate <= 0 {
			continue
		}
		if draw(rp.opts.Seed, node.ID, step) < rate*hours {
			node.State = planner.StatePreempted
			n++
			if d := rp.repo.Config.Defaults.BlocklistFor; d > 0 {
				rp.blocked[node.OfferKey] = t.Add(rp.opts.Step + d)
			}
		}
	}
	rp.preempted += n
	return n
}

// draw is a uniform number in [0, 1) from the seed, a node and a step.
func draw(seed uint64, id string, step int) float64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	x := seed ^ h.Sum64() ^ uint64(step)*0x9e3779b97f4a7c15
	// splitmix64's finaliser spreads nearby inputs over the range.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}
