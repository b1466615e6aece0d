// SPDX-License-Identifier: Apache-2.0

package status

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
)

// StatusVersion is the schema version of the status files.
const StatusVersion = 1

// StateFile is the repository-wide state in the status directory: what a
// run must remember for the next one.
const StateFile = "gpufleet.json"

// SummaryFile is the human-readable status, beside the fleets' JSON.
const SummaryFile = "STATUS.md"

// Suspended is the condition a fleet carries while its spec says
// `suspended: true`. It is absent otherwise, so resuming leaves the status
// of a fleet as it was before it was ever suspended.
const Suspended = "Suspended"

// Condition types, as Kubernetes and Flux users know them.
const (
	Ready       = "Ready"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Stalled     = "Stalled"
)

// Drifted is the condition that says whether the clouds differed from the
// fleet's committed status when the last run began: nodes terminated,
// changed or launched outside gpufleet. It appears once a run has seen
// drift, and stays, false, once none is left.
const Drifted = "Drifted"

// Condition reasons. Each says in one word why a condition has its status.
const (
	ReasonConverged        = "Converged"
	ReasonNotConverged     = "NotConverged"
	ReasonShortfall        = "Shortfall"
	ReasonPending          = "Pending"
	ReasonIdle             = "Idle"
	ReasonApplying         = "Applying"
	ReasonHealthy          = "Healthy"
	ReasonCloudErrors      = "CloudErrors"
	ReasonNone             = "None"
	ReasonDeletionsRefused = "DeletionsRefused"
	// A disruption budget holds deletions, and the creates that replace
	// them, for later runs: the fleet is rolling towards its plan.
	ReasonDeletionsDeferred = "DeletionsDeferred"
	ReasonRolling           = "Rolling"
	ReasonObserveFailed     = "ObserveFailed"
	ReasonSpecInvalid       = "SpecInvalid"
	ReasonStatusCorrupt     = "StatusCorrupt"
	ReasonOrphaned          = "Orphaned"
	ReasonInstancesDrifted  = "InstancesDrifted"
	ReasonNoDrift           = "NoDrift"
)

// Condition is one aspect of a fleet's health.
type Condition struct {
	Type    string `json:"type"`
	Status  bool   `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Since is when Status last changed.
	Since time.Time `json:"since"`
}

// FleetStatus is status/<fleet>.json.
type FleetStatus struct {
	SchemaVersion int    `json:"schemaVersion"`
	Fleet         string `json:"fleet"`
	// SpecRevision is a digest of the specs reconciled (the Git trees of
	// gpufleet.cue, fleets/ and policy/); SpecCommit the commit that made
	// them what they are, which status commits after it do not move.
	SpecRevision string `json:"specRevision"`
	SpecCommit   string `json:"specCommit,omitempty"`
	// Orphaned is set for a fleet removed from the repository whose
	// instances still run because prune is off.
	Orphaned       bool             `json:"orphaned,omitempty"`
	Conditions     []Condition      `json:"conditions"`
	CostMicros     int64            `json:"costMicros"`
	BaselineMicros int64            `json:"baselineMicros"`
	SavingMicros   int64            `json:"savingMicros"`
	Workloads      []WorkloadStatus `json:"workloads"`
	LastActions    []ActionResult   `json:"lastActions,omitempty"`
	// LastRun counts what the last run that acted did to the fleet.
	LastRun   *RunCounts     `json:"lastRun,omitempty"`
	Errors    []string       `json:"errors,omitempty"`
	Blocklist []BlockedOffer `json:"blocklist,omitempty"`
	// StalePrices says, when the prices the fleet was planned with are
	// older than catalog.MaxPriceAge, so, as plans say it.
	StalePrices string    `json:"stalePrices,omitempty"`
	Observed    time.Time `json:"observedAt"`
}

// WorkloadStatus is what a workload asks for and what runs.
type WorkloadStatus struct {
	Name    string `json:"name"`
	Desired int    `json:"desired"`
	Running int    `json:"running"`
	Pending int    `json:"pending"`
	// Failed and Stopped count instances that do no work yet are still
	// there, holding quota or billing for disks; the next run deletes them.
	Failed    int                 `json:"failed,omitempty"`
	Stopped   int                 `json:"stopped,omitempty"`
	Placed    []planner.Placement `json:"placements"`
	Instances []InstanceStatus    `json:"instances"`
	Shortfall *planner.Shortfall  `json:"shortfall,omitempty"`
}

// InstanceStatus is one instance as last observed.
type InstanceStatus struct {
	ID    string        `json:"id"`
	Offer string        `json:"offer"`
	State planner.State `json:"state"`
	Token string        `json:"token,omitempty"`
	// Bootstrap is the digest of the first-boot file the node was
	// launched with.
	Bootstrap string `json:"bootstrap,omitempty"`
}

// ActionResult is an action of the last run that changed something, and how
// it went.
type ActionResult struct {
	Fleet    string             `json:"-"`
	Kind     planner.ActionKind `json:"kind"`
	Workload string             `json:"workload"`
	Offer    string             `json:"offer"`
	Instance string             `json:"instance,omitempty"`
	Error    string             `json:"error,omitempty"`
}

// BlockedOffer is an offer to avoid until a time: entirely, or, when
// Capacity is set, beyond that many nodes. A pool that ran out after some
// nodes launched holds what it held, learned capacity, rather than none.
type BlockedOffer struct {
	Offer    string    `json:"offer"`
	Reason   string    `json:"reason"`
	Until    time.Time `json:"until"`
	Capacity int       `json:"capacity,omitempty"`
}

// RepoState is status/gpufleet.json: what outlives a run.
type RepoState struct {
	SchemaVersion int            `json:"schemaVersion"`
	Blocklist     []BlockedOffer `json:"blocklist"`
	// Retired tokens must not be used again while a cloud may still answer
	// them with an ended instance.
	Retired []RetiredToken `json:"retiredTokens"`
	// Preempted lists preempted instances already acted on, so one
	// preemption blocklists its offer once.
	Preempted []string `json:"preemptedSeen"`
	// Deleted lists the instances gpufleet asked a cloud to delete that
	// may still be listed: a cloud that does not say who ends a VM shows
	// one on its way out by gpufleet's hand as it shows one it took back,
	// and a later run must not read it as preempted.
	Deleted []DeleteIssued `json:"deletesIssued,omitempty"`
	// Quotas are the clouds' quotas as the last run read them, with what
	// counted against them once it was done.
	Quotas []planner.Quota `json:"quotas,omitempty"`
}

// RetiredToken is a create token not to reuse before Until.
type RetiredToken struct {
	Token string    `json:"token"`
	Until time.Time `json:"until"`
}

// DeleteIssued is a delete gpufleet asked of a cloud, remembered until
// the instance is no longer listed, or Until.
type DeleteIssued struct {
	Cloud string    `json:"cloud"`
	ID    string    `json:"id"`
	Token string    `json:"token,omitempty"`
	Until time.Time `json:"until"`
}

// NoteDelete remembers that gpufleet asks for an instance's deletion.
func (s *RepoState) NoteDelete(cloud, id, token string, until time.Time) {
	for i, d := range s.Deleted {
		if d.Cloud == cloud && d.ID == id && d.Token == token {
			s.Deleted[i].Until = until
			return
		}
	}
	s.Deleted = append(s.Deleted, DeleteIssued{Cloud: cloud, ID: id, Token: token, Until: until})
}

// DeletedByUs reports whether gpufleet asked for the deletion of this
// instance: the same cloud, id and token, so that a later instance given
// the same name is not taken for it.
func (s *RepoState) DeletedByUs(cloud, id, token string) bool {
	return slices.ContainsFunc(s.Deleted, func(d DeleteIssued) bool { return d.Cloud == cloud && d.ID == id && d.Token == token })
}

// KeepDeletes forgets the deletes keep reports false for.
func (s *RepoState) KeepDeletes(keep func(DeleteIssued) bool) {
	s.Deleted = slices.DeleteFunc(s.Deleted, func(d DeleteIssued) bool { return !keep(d) })
}

// Active returns the offers blocked entirely, of the entries still in
// force.
func (s *RepoState) Active(now time.Time) []planner.OfferKey {
	var out []planner.OfferKey
	for _, b := range s.Blocklist {
		if now.Before(b.Until) && b.Capacity == 0 {
			if k, err := planner.ParseOfferKey(b.Offer); err == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// Learned returns the capacity learned of offers, of the entries still in
// force: the most nodes each held when it ran out.
func (s *RepoState) Learned(now time.Time) map[planner.OfferKey]int {
	out := map[planner.OfferKey]int{}
	for _, b := range s.Blocklist {
		if now.Before(b.Until) && b.Capacity > 0 {
			if k, err := planner.ParseOfferKey(b.Offer); err == nil {
				out[k] = b.Capacity
			}
		}
	}
	return out
}

// Cap records that an offer ran out holding nodes: until then it is planned
// with room for that many and no more. It replaces what the blocklist said
// of the offer, which the run that saw it fill knows better.
func (s *RepoState) Cap(offer planner.OfferKey, nodes int, reason string, until time.Time) {
	for i := range s.Blocklist {
		if s.Blocklist[i].Offer == offer.String() {
			s.Blocklist[i] = BlockedOffer{Offer: offer.String(), Reason: reason, Until: until, Capacity: nodes}
			return
		}
	}
	s.Blocklist = append(s.Blocklist, BlockedOffer{Offer: offer.String(), Reason: reason, Until: until, Capacity: nodes})
}

// Block adds or extends a blocklist entry: no new node on the offer.
func (s *RepoState) Block(offer planner.OfferKey, reason string, until time.Time) {
	for i := range s.Blocklist {
		if s.Blocklist[i].Offer == offer.String() {
			if until.After(s.Blocklist[i].Until) {
				s.Blocklist[i].Until, s.Blocklist[i].Reason = until, reason
			}
			s.Blocklist[i].Capacity = 0
			return
		}
	}
	s.Blocklist = append(s.Blocklist, BlockedOffer{Offer: offer.String(), Reason: reason, Until: until})
}

func (s *RepoState) Retire(token string, until time.Time) {
	if token == "" || slices.ContainsFunc(s.Retired, func(r RetiredToken) bool { return r.Token == token }) {
		return
	}
	s.Retired = append(s.Retired, RetiredToken{Token: token, Until: until})
}

func (s *RepoState) RetiredTokens(now time.Time) []string {
	var out []string
	for _, r := range s.Retired {
		if now.Before(r.Until) {
			out = append(out, r.Token)
		}
	}
	return out
}

// prune drops expired entries and sorts what is left, so the file changes
// only when its content does.
func (s *RepoState) Prune(now time.Time) {
	s.SchemaVersion = StatusVersion
	s.Blocklist = slices.DeleteFunc(s.Blocklist, func(b BlockedOffer) bool { return !now.Before(b.Until) })
	slices.SortFunc(s.Blocklist, func(a, b BlockedOffer) int { return strings.Compare(a.Offer, b.Offer) })
	s.Retired = slices.DeleteFunc(s.Retired, func(r RetiredToken) bool { return !now.Before(r.Until) })
	slices.SortFunc(s.Retired, func(a, b RetiredToken) int { return strings.Compare(a.Token, b.Token) })
	slices.Sort(s.Preempted)
	s.Preempted = slices.Compact(s.Preempted)
	s.Deleted = slices.DeleteFunc(s.Deleted, func(d DeleteIssued) bool { return !now.Before(d.Until) })
	slices.SortFunc(s.Deleted, func(a, b DeleteIssued) int {
		return cmp.Or(strings.Compare(a.Cloud, b.Cloud), strings.Compare(a.ID, b.ID), strings.Compare(a.Token, b.Token))
	})
	if len(s.Deleted) == 0 {
		s.Deleted = nil
	}
	if s.Blocklist == nil {
		s.Blocklist = []BlockedOffer{}
	}
	if s.Retired == nil {
		s.Retired = []RetiredToken{}
	}
	if s.Preempted == nil {
		s.Preempted = []string{}
	}
}

// statusRoot opens the checkout as a root that no status read or write can
// leave, and checks that the status directory is a real directory of the
// checkout: a committed symlink in its place could lead anywhere on the
// machine.
func OpenRoot(checkout, dir string) (*os.Root, error) {
	root, err := os.OpenRoot(checkout)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		at := strings.Join(parts[:i+1], "/")
		info, err := root.Lstat(at)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return root, nil
		case err != nil:
			root.Close()
			return nil, fmt.Errorf("reading the status directory %s, %w", dir, err)
		case info.Mode()&fs.ModeSymlink != 0:
			root.Close()
			return nil, fmt.Errorf("the status directory %s: %s is a symlink in the repository; gpufleet writes status only into a real directory of the checkout", dir, at)
		case !info.IsDir():
			root.Close()
			return nil, fmt.Errorf("the status directory %s: %s is a file in the repository, not a directory", dir, at)
		}
	}
	return root, nil
}

// readState reads the repository state in dir; a missing file is an empty
// state.
func ReadState(root *os.Root, dir string) (*RepoState, error) {
	s := &RepoState{}
	name := path.Join(dir, StateFile)
	data, err := root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s, %w", name, err)
	}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, &CorruptError{Files: []CorruptFile{{Path: name, Problem: decodeProblem(data, err)}}}
	}
	if s.SchemaVersion > StatusVersion {
		return nil, fmt.Errorf("%s has schema version %d; this gpufleet knows %d: upgrade it", name, s.SchemaVersion, StatusVersion)
	}
	for i, b := range s.Blocklist {
		if _, err := planner.ParseOfferKey(b.Offer); err != nil {
			return nil, &CorruptError{Files: []CorruptFile{{Path: name, Problem: fmt.Sprintf("blocklist[%d].offer: %v", i, err)}}}
		}
	}
	return s, nil
}

// ReadFleets reads every <fleet>.json in dir. A file that is not a fleet's
// status as gpufleet writes it is never read as nothing: the statuses of
// the others come back with a *CorruptError naming it, for the caller to
// refuse or to write it again.
func ReadFleets(root *os.Root, dir string) (map[string]*FleetStatus, error) {
	out := map[string]*FleetStatus{}
	entries, err := fs.ReadDir(root.FS(), dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the status directory %s, %w", dir, err)
	}
	var corrupt []CorruptFile
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || name == StateFile {
			continue
		}
		file := path.Join(dir, name)
		if !e.Type().IsRegular() {
			corrupt = append(corrupt, CorruptFile{Path: file, Problem: "not a regular file"})
			continue
		}
		data, err := root.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading %s, %w", file, err)
		}
		st, problem := parseFleet(strings.TrimSuffix(name, ".json"), data)
		if problem != "" {
			corrupt = append(corrupt, CorruptFile{Path: file, Problem: problem})
			continue
		}
		out[st.Fleet] = st
	}
	if len(corrupt) > 0 {
		return out, &CorruptError{Files: corrupt}
	}
	return out, nil
}

// parseFleet reads the status of a fleet from its file, or says why the
// file is not one.
func parseFleet(fleet string, data []byte) (*FleetStatus, string) {
	var st FleetStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, decodeProblem(data, err)
	}
	switch {
	case st.SchemaVersion > StatusVersion:
		return nil, fmt.Sprintf("schema version %d; this gpufleet knows %d: upgrade it", st.SchemaVersion, StatusVersion)
	case st.Fleet == "":
		return nil, "names no fleet"
	case st.Fleet != fleet:
		return nil, fmt.Sprintf("holds the status of fleet %q, not of %q", st.Fleet, fleet)
	}
	for _, w := range st.Workloads {
		for _, inst := range w.Instances {
			if _, err := planner.ParseOfferKey(inst.Offer); err != nil {
				return nil, fmt.Sprintf("instance %s of workload %s: %v", inst.ID, w.Name, err)
			}
		}
	}
	return &st, ""
}

// encode renders a status document the way it is committed.
func Encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encoding status: %v", err))
	}
	return b.Bytes()
}

// sameBesidesTime compares two fleet statuses with their timestamps cleared,
// so a run that changed nothing commits nothing.
func SameBesidesTime(a, b *FleetStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	ca, cb := *a, *b
	ca.Observed, cb.Observed = time.Time{}, time.Time{}
	ca.Conditions = slices.Clone(a.Conditions)
	cb.Conditions = slices.Clone(b.Conditions)
	for i := range ca.Conditions {
		ca.Conditions[i].Since = time.Time{}
	}
	for i := range cb.Conditions {
		cb.Conditions[i].Since = time.Time{}
	}
	return bytes.Equal(Encode(&ca), Encode(&cb))
}

// carryConditions keeps a condition's Since when its status did not change.
func CarryConditions(next, prev []Condition, now time.Time) []Condition {
	for i := range next {
		next[i].Since = now
		for _, p := range prev {
			if p.Type == next[i].Type && p.Status == next[i].Status {
				next[i].Since = p.Since
			}
		}
	}
	return next
}

// ReadObserved reads what the last run saw from a repository's status
// files: the instances it listed and the offers blocklisted at now. A pull
// request's plan uses it in place of the clouds, which CI cannot reach.
// statusDir is relative to repoDir, and nothing outside repoDir is read.
func ReadObserved(repoDir, statusDir string, now time.Time) (*Snapshot, error) {
	root, err := OpenRoot(repoDir, statusDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	statuses, err := ReadFleets(root, statusDir)
	if err != nil {
		return nil, err
	}
	var observed []planner.Instance
	var observedAt time.Time
	blocklist := map[string][]planner.BlockedOffer{}
	for _, st := range statuses {
		if !st.Observed.IsZero() && (observedAt.IsZero() || st.Observed.Before(observedAt)) {
			observedAt = st.Observed
		}
		for _, b := range st.Blocklist {
			if k, err := planner.ParseOfferKey(b.Offer); err == nil && now.Before(b.Until) {
				blocklist[st.Fleet] = append(blocklist[st.Fleet], planner.BlockedOffer{Offer: k, Until: b.Until})
			}
		}
		for _, w := range st.Workloads {
			for _, inst := range w.Instances {
				// ReadFleets checked every offer.
				k, _ := planner.ParseOfferKey(inst.Offer)
				observed = append(observed, planner.Instance{ID: inst.ID, OfferKey: k, Fleet: st.Fleet, Workload: w.Name, Token: inst.Token, Bootstrap: inst.Bootstrap, State: inst.State})
			}
		}
	}
	slices.SortFunc(observed, planner.CompareInstances)
	state, err := ReadState(root, statusDir)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Observed: observed, ObservedAt: observedAt, Blocked: state.Active(now), Learned: state.Learned(now), Quotas: state.Quotas,
		Retired: state.RetiredTokens(now), Blocklist: blocklist, Start: Placements(statuses)}, nil
}

// Placements is where the statuses' last plans put each workload's nodes,
// keyed "fleet/workload", for the next plan to start from
// (planner.Input.Start).
func Placements(statuses map[string]*FleetStatus) map[string][]planner.Placement {
	start := map[string][]planner.Placement{}
	for _, st := range statuses {
		for _, w := range st.Workloads {
			if len(w.Placed) > 0 {
				start[st.Fleet+"/"+w.Name] = w.Placed
			}
		}
	}
	return start
}

// Snapshot is what the status in a repository says of the clouds: what
// ran, what was blocked or learned of offers, and the quotas, as the last
// run left them.
type Snapshot struct {
	Observed []planner.Instance
	Blocked  []planner.OfferKey
	Learned  map[planner.OfferKey]int
	Quotas   []planner.Quota
	// Retired are the create tokens in force that must not be asked for
	// again: their instances came and went.
	Retired []string
	// Blocklist is, by fleet, the entries in force that the last run
	// found bear on the fleet's offers, with when each ends.
	Blocklist map[string][]planner.BlockedOffer
	// Start is where the last plans put each workload's nodes
	// (Placements).
	Start map[string][]planner.Placement

	// ObservedAt is when the oldest of the fleets' statuses was observed;
	// zero when there is none.
	ObservedAt time.Time
}
