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
	"github.com/gpufleet/gpufleet/schema/atomicfile"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A saved plan is what `gpufleet plan -out FILE` writes and `gpufleet apply
// FILE` carries out: the actions a person reviewed, with what they were
// planned from — the specs, what ran, the prices — so that apply can
// refuse a plan the world has moved away from, as Terraform refuses a
// stale plan file, instead of doing something nobody reviewed.
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
// and their digest (the Git trees of gpufleet.cue, fleets/ and policy/).
// Apply compares digests, so status commits made since do not make a plan
// stale, and a spec change does.
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

// ObservedEntry is an instance as a saved plan keeps it. State is "live"
// for pending and running alike: an instance that came up since the plan
// changes nothing the plan does.
type ObservedEntry struct {
	Cloud     string `json:"cloud"`
	ID        string `json:"id"`
	Offer     string `json:"offer"`
	Fleet     string `json:"fleet"`
	Workload  string `json:"workload"`
	Token     string `json:"token,omitempty"`
	Bootstrap string `json:"bootstrap,omitempty"`
	State     string `json:"state"`
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

// SpecsOf names the specs of the checkout at dir: its head commit and the
// digest of their trees. The checkout must be clean where specs are read,
// or the plan would be of specs no commit holds.
func SpecsOf(dir string) (SavedSpecs, error) {
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
	key, err := specKey(commit)
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
	// What moved: "specs", "observed" or "prices".
	What   string
	Detail string
}

func (e *StalePlanError) Error() string {
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
	now := observedEntries(observed)
	if digestOf(now) == p.Observed.Digest {
		return nil
	}
	key := func(e ObservedEntry) string { return e.Cloud + "/" + e.ID }
	then := map[string]ObservedEntry{}
	for _, e := range p.Observed.Instances {
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
		state := string(inst.State)
		if inst.State == planner.StatePending || inst.State == planner.StateRunning {
			state = "live"
		}
		out = append(out, ObservedEntry{Cloud: inst.Cloud, ID: inst.ID, Offer: inst.OfferKey.String(), Fleet: inst.Fleet, Workload: inst.Workload,
			Token: inst.Token, Bootstrap: inst.Bootstrap, State: state})
	}
	slices.SortFunc(out, func(a, b ObservedEntry) int { return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.ID, b.ID)) })
	return out
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
