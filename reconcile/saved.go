// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/atomicfile"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A saved plan is what `gpufleet plan -out FILE` writes and `gpufleet apply
// FILE` carries out: the actions a person reviewed, with what they were
// planned from — the specs, what ran, the prices — so that apply can
// refuse a plan the world has moved away from, as Terraform refuses a
// stale plan file, instead of doing something nobody reviewed.
//
// A plan file is not trusted for what it says to do: anyone who can hand
// apply a file could write one. Apply plans again, as plan did, from what
// it trusts — the committed specs (every file the plan read, bootstrap
// files too), the status files, the catalog, and what runs as the file
// says and the clouds confirm — and carries out the file's actions only
// when they are exactly the ones that plan gives, refusing any other and
// naming it.
const (
	SavedPlanKind    = "saved-plan"
	SavedPlanVersion = 1
)

// SavedPlan is a saved plan file: the envelope every gpufleet JSON file
// has, then the plan.
type SavedPlan struct {
	FormatVersion int    `json:"formatVersion"`
	Kind          string `json:"kind"`
	SavedPlanBody
}

// SavedPlanBody is what a saved plan holds.
type SavedPlanBody struct {
	CreatedAt time.Time       `json:"createdAt"`
	Specs     SavedSpecs      `json:"specs"`
	Observed  SavedObserved   `json:"observed"`
	Prices    SavedPrices     `json:"prices"`
	Report    *planner.Report `json:"report"`
	// Fleets are the fleets the plan was narrowed to (plan --fleet);
	// empty for all. Apply applies no other fleet's actions.
	Fleets []string `json:"fleets,omitempty"`
}

// SavedSpecs are the specs a plan was made of: the commit that made them
// and their digest (the Git entries of gpufleet.cue, fleets/, policy/ and
// every file a load of them read, bootstrap files included). Apply compares
// digests, so status commits made since do not make a plan stale, and a
// change to anything the plan read does.
type SavedSpecs struct {
	Commit string `json:"commit"`
	Digest string `json:"digest"`
}

// SavedObserved is what ran as the plan saw it, each instance reduced to
// what its actions depend on.
type SavedObserved struct {
	// Source is where it was read: "status" (the status files) or the
	// --observed file's name.
	Source    string          `json:"source"`
	Digest    string          `json:"digest"`
	Instances []ObservedEntry `json:"instances"`
}

// ObservedEntry is an instance as a saved plan keeps it: all the plan
// read of it, so that apply can plan from it again. Files written before
// entries kept their state as it was say "live" for pending and running
// alike, which is read as running.
type ObservedEntry struct {
	Cloud      string    `json:"cloud"`
	ID         string    `json:"id"`
	Offer      string    `json:"offer"`
	Fleet      string    `json:"fleet"`
	Workload   string    `json:"workload"`
	Token      string    `json:"token,omitempty"`
	Bootstrap  string    `json:"bootstrap,omitempty"`
	State      string    `json:"state"`
	LaunchedAt time.Time `json:"launchedAt,omitzero"`
}

// liveState is how an entry's state compares with what runs now:
// pending and running alike, as an instance that came up since the plan
// changes nothing the plan does.
const liveState = "live"

// compared is an entry as it is compared with what runs now: its state
// live for pending and running alike, and no launch time, which the status
// files do not keep.
func (e ObservedEntry) compared() ObservedEntry {
	if s := planner.State(e.State); s.Live() {
		e.State = liveState
	}
	e.LaunchedAt = time.Time{}
	return e
}

// SavedPrices are the prices a plan was made with.
type SavedPrices struct {
	Source    string    `json:"source"`
	FetchedAt time.Time `json:"fetchedAt"`
	Digest    string    `json:"digest"`
}

// NewSavedPlan records a plan made of specs, against what was observed
// (from source) and the catalog's prices.
func NewSavedPlan(specs SavedSpecs, observed []planner.Instance, source string, cat *catalog.Catalog, report *planner.Report, now time.Time) (*SavedPlan, error) {
	prices, err := pricesOf(cat)
	if err != nil {
		return nil, err
	}
	entries := observedEntries(observed)
	return &SavedPlan{FormatVersion: SavedPlanVersion, Kind: SavedPlanKind, SavedPlanBody: SavedPlanBody{
		CreatedAt: now.UTC(),
		Specs:     specs,
		Observed:  SavedObserved{Source: source, Digest: digestOf(entries), Instances: entries},
		Prices:    prices,
		Report:    report,
	}}, nil
}

// Write writes the plan to a file, replacing it whole.
func (p *SavedPlan) Write(path string) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'))
}

// ReadSavedPlan reads a plan file, refusing anything but a saved plan of
// the version this gpufleet writes.
func ReadSavedPlan(path string) (*SavedPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		FormatVersion int    `json:"formatVersion"`
		Kind          string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s is not a saved plan: %w", path, err)
	}
	switch {
	case head.Kind != SavedPlanKind:
		return nil, fmt.Errorf("%s is not a saved plan (kind %q; `gpufleet plan -out FILE` writes one)", path, head.Kind)
	case head.FormatVersion != SavedPlanVersion:
		return nil, fmt.Errorf("%s is a saved plan of format version %d; this gpufleet reads version %d", path, head.FormatVersion, SavedPlanVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p SavedPlan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("reading the saved plan %s, %w", path, err)
	}
	if p.Report == nil || p.Report.Plan == nil {
		return nil, fmt.Errorf("the saved plan %s holds no plan", path)
	}
	if digestOf(p.Observed.Instances) != p.Observed.Digest {
		return nil, fmt.Errorf("the saved plan %s was edited: its observed instances do not match their digest", path)
	}
	return &p, nil
}

// SpecsOf names the specs of the checkout at dir, as repo was loaded from
// it: its head commit and the digest of every file the load read. The
// checkout must be clean where specs are read, and hold nothing the commit
// does not, or the plan would be of specs no commit holds.
func SpecsOf(dir string, specs *schema.Repo) (SavedSpecs, error) {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return SavedSpecs{}, fmt.Errorf("a saved plan records the commit it was made of, and %s is not the top of a Git checkout, %w", dir, err)
	}
	c := &Checkout{Dir: dir, Repo: repo}
	if err := c.checkClean(); err != nil {
		return SavedSpecs{}, err
	}
	head, err := repo.Head()
	if err != nil {
		return SavedSpecs{}, err
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return SavedSpecs{}, err
	}
	if err := checkCommitted(commit, specs.Read); err != nil {
		return SavedSpecs{}, err
	}
	key, err := specKey(commit, specPaths(specs))
	if err != nil {
		return SavedSpecs{}, err
	}
	return SavedSpecs{Commit: head.Hash().String(), Digest: specDigest(key)}, nil
}

// ErrStalePlan is what applying a saved plan the world has moved away
// from returns, wrapped in a *StalePlanError saying what moved.
var ErrStalePlan = errors.New("the saved plan is stale")

// StalePlanError says why a saved plan can no longer be applied.
type StalePlanError struct {
	// What moved: "specs", "observed" or "prices"; "actions" when the
	// plan's own actions are not what planning again gives.
	What   string
	Detail string
}

func (e *StalePlanError) Error() string {
	if e.What == "actions" {
		return fmt.Sprintf("the saved plan is refused: %s; nothing was done; plan again (gpufleet plan -out FILE) and review the new plan", e.Detail)
	}
	return fmt.Sprintf("the saved plan is stale: %s; plan again (gpufleet plan -out FILE) and review the new plan", e.Detail)
}

func (e *StalePlanError) Unwrap() error { return ErrStalePlan }

// checkSpecs refuses a plan made of other specs than digest's.
func (p *SavedPlan) checkSpecs(digest, commit string) error {
	if digest == p.Specs.Digest {
		return nil
	}
	return &StalePlanError{What: "specs", Detail: fmt.Sprintf("the specs changed since it was made (planned from commit %s, now at %s)",
		shortHash(p.Specs.Commit), shortHash(commit))}
}

// checkObserved refuses a plan made against other instances than those
// that run now, naming what differs.
func (p *SavedPlan) checkObserved(observed []planner.Instance) error {
	now := compared(observedEntries(observed))
	if digestOf(now) == digestOf(compared(p.Observed.Instances)) {
		return nil
	}
	key := func(e ObservedEntry) string { return e.Cloud + "/" + e.ID }
	then := map[string]ObservedEntry{}
	for _, e := range compared(p.Observed.Instances) {
		then[key(e)] = e
	}
	var added, changed []string
	for _, e := range now {
		old, ok := then[key(e)]
		delete(then, key(e))
		switch {
		case !ok:
			added = append(added, fmt.Sprintf("%s (%s/%s, %s)", e.ID, e.Fleet, e.Workload, e.State))
		case old != e:
			changed = append(changed, fmt.Sprintf("%s (%s)", e.ID, entryChange(old, e)))
		}
	}
	var gone []string
	for _, e := range then {
		gone = append(gone, e.ID)
	}
	slices.Sort(gone)
	var parts []string
	for _, l := range []struct {
		what string
		ids  []string
	}{{"runs now but not in the plan's view", added}, {"is gone", gone}, {"changed", changed}} {
		if len(l.ids) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s: %s", len(l.ids), l.what, listSome(l.ids)))
		}
	}
	return &StalePlanError{What: "observed", Detail: fmt.Sprintf("what runs changed since it was made (from %s): %s", p.Observed.Source, strings.Join(parts, "; "))}
}

// checkPrices refuses a plan made with other prices than cat's.
func (p *SavedPlan) checkPrices(cat *catalog.Catalog) error {
	now, err := pricesOf(cat)
	if err != nil {
		return err
	}
	if now.Digest == p.Prices.Digest {
		return nil
	}
	return &StalePlanError{What: "prices", Detail: fmt.Sprintf("the prices changed since it was made (planned with the %s of %s, now the %s of %s)",
		p.Prices.Source, p.Prices.FetchedAt.Format(time.RFC3339), now.Source, now.FetchedAt.Format(time.RFC3339))}
}

func entryChange(old, now ObservedEntry) string {
	var d []string
	for _, f := range []struct{ name, a, b string }{
		{"state", old.State, now.State}, {"offer", old.Offer, now.Offer}, {"workload", old.Fleet + "/" + old.Workload, now.Fleet + "/" + now.Workload},
		{"token", old.Token, now.Token}, {"bootstrap", old.Bootstrap, now.Bootstrap},
	} {
		if f.a != f.b {
			d = append(d, fmt.Sprintf("%s %s → %s", f.name, cmp.Or(f.a, "none"), cmp.Or(f.b, "none")))
		}
	}
	return strings.Join(d, ", ")
}

func listSome(ids []string) string {
	if len(ids) <= 5 {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
}

func observedEntries(observed []planner.Instance) []ObservedEntry {
	out := make([]ObservedEntry, 0, len(observed))
	for _, inst := range observed {
		out = append(out, ObservedEntry{Cloud: inst.Cloud, ID: inst.ID, Offer: inst.OfferKey.String(), Fleet: inst.Fleet, Workload: inst.Workload,
			Token: inst.Token, Bootstrap: inst.Bootstrap, State: string(inst.State), LaunchedAt: inst.LaunchedAt})
	}
	slices.SortFunc(out, func(a, b ObservedEntry) int { return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.ID, b.ID)) })
	return out
}

func compared(entries []ObservedEntry) []ObservedEntry {
	out := make([]ObservedEntry, len(entries))
	for i, e := range entries {
		out[i] = e.compared()
	}
	return out
}

// instances are the entries as the plan read them.
func (o SavedObserved) instances() ([]planner.Instance, error) {
	out := make([]planner.Instance, 0, len(o.Instances))
	for _, e := range o.Instances {
		key, err := planner.ParseOfferKey(e.Offer)
		if err != nil {
			return nil, fmt.Errorf("the saved plan's instance %s, %w", e.ID, err)
		}
		state := planner.State(e.State)
		if e.State == liveState {
			state = planner.StateRunning
		}
		out = append(out, planner.Instance{ID: e.ID, OfferKey: key, Fleet: e.Fleet, Workload: e.Workload, Token: e.Token,
			Bootstrap: e.Bootstrap, State: state, LaunchedAt: e.LaunchedAt})
	}
	slices.SortFunc(out, planner.CompareInstances)
	return out, nil
}

func digestOf(entries []ObservedEntry) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, e := range entries {
		enc.Encode(e)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func pricesOf(cat *catalog.Catalog) (SavedPrices, error) {
	var b bytes.Buffer
	if err := cat.Write(&b); err != nil {
		return SavedPrices{}, fmt.Errorf("digesting the catalog, %w", err)
	}
	sum := sha256.Sum256(b.Bytes())
	return SavedPrices{Source: cat.Source, FetchedAt: cat.FetchedAt.UTC(), Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

func shortHash(h string) string { return h[:min(len(h), 12)] }

// replan plans again, as plan did, from what apply trusts: the specs as
// loaded, the catalog, the status files as the checkout has them, and what
// runs as the plan saw it — which checkObserved has found to be what runs
// now.
func (p *SavedPlan) replan(repo *schema.Repo, cat *catalog.Catalog, snapshot *status.Snapshot) (*planner.Report, error) {
	observed, err := p.Observed.instances()
	if err != nil {
		return nil, err
	}
	report, err := PlanOffline(OfflineInput{Repo: repo, Catalog: cat, Observed: observed, Status: snapshot})
	if err != nil {
		return nil, err
	}
	if len(p.Fleets) > 0 {
		report = report.Only(p.Fleets)
	}
	return report, nil
}

// checkActions refuses a plan whose actions are not exactly those planned
// now from what apply trusts, naming each that differs: one added to the
// file or edited there, or one the plan gives now that the file lacks.
func (p *SavedPlan) checkActions(now *planner.Report) error {
	type list struct {
		what       string
		file, plan []planner.Action
	}
	var parts []string
	for _, l := range []list{
		{"action", p.Report.Changes.Actions, now.Changes.Actions},
		{"refused deletion", p.Report.Changes.Refused, now.Changes.Refused},
		{"deferred action", p.Report.Changes.Deferred, now.Changes.Deferred},
	} {
		extra, missing := actionDiff(l.file, l.plan)
		if len(extra) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s(s) in the file that the specs do not give: %s", len(extra), l.what, listSome(extra)))
		}
		if len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s(s) the specs give that the file lacks: %s", len(missing), l.what, listSome(missing)))
		}
	}
	if p.Report.Changes.Refusal != now.Changes.Refusal {
		parts = append(parts, "its refusal differs")
	}
	if p.Report.Changes.Deferral != now.Changes.Deferral {
		parts = append(parts, "its disruption budget differs")
	}
	if !slices.EqualFunc(p.Report.Changes.Orphans, now.Changes.Orphans, func(a, b planner.Instance) bool { return a == b }) {
		parts = append(parts, "its orphaned instances differ")
	}
	if len(parts) == 0 {
		return nil
	}
	return &StalePlanError{What: "actions", Detail: "its actions are not the ones the specs, the status and what runs give now: " + strings.Join(parts, "; ")}
}

// actionDiff is what a file's actions hold that the plan's do not, and the
// other way round, each action whole (an edited price or reason counts),
// as many times as it differs.
func actionDiff(file, plan []planner.Action) (extra, missing []string) {
	return unmatched(file, plan), unmatched(plan, file)
}

// unmatched describes the actions of a that b does not hold.
func unmatched(a, b []planner.Action) []string {
	key := func(a planner.Action) string {
		data, _ := json.Marshal(a)
		return string(data)
	}
	held := map[string]int{}
	for _, x := range b {
		held[key(x)]++
	}
	var out []string
	for _, x := range a {
		if held[key(x)] > 0 {
			held[key(x)]--
			continue
		}
		out = append(out, describeAction(x))
	}
	return out
}

func describeAction(a planner.Action) string {
	target := a.Token
	if a.Kind == planner.Delete {
		target = a.Instance
	}
	return fmt.Sprintf("%s %s/%s on %s (%s) at %s", a.Kind, a.Fleet, a.Workload, a.Offer, target, planner.PriceText(a.PriceMicros, a.AccountTerms))
}
