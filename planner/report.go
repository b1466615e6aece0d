package planner

import "time"

// Report is a plan with the changes it asks for, as the plan command and
// pull-request comments show it.
type Report struct {
	Plan    *Plan   `json:"plan"`
	Changes Changes `json:"changes"`
	// CurrentMicros is what the owned instances cost now, per hour: the
	// plan's NowMicros.
	CurrentMicros int64 `json:"currentMicros"`
	// Suspended names the fleets the specs suspend: planned, but nothing
	// of theirs is applied, so what they lack is not news.
	Suspended []string `json:"suspended,omitempty"`
	// Blocklist is, by fleet, the blocklist entries in force on offers its
	// workloads could use, so that a shortfall can say when they come
	// back. The planner has no clock: whoever read the blocklist fills it
	// in.
	Blocklist map[string][]BlockedOffer `json:"blocklist,omitempty"`
}

// BlockedOffer is a blocklist entry as a report gives it: an offer that
// takes no new node, or none beyond what it held, until a time.
type BlockedOffer struct {
	Offer OfferKey  `json:"offer"`
	Until time.Time `json:"until"`
}

// NewReport is a plan with its changes.
func NewReport(plan *Plan, changes Changes) *Report {
	return &Report{Plan: plan, Changes: changes, CurrentMicros: plan.NowMicros}
}
