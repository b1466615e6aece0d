package planner

// Report is a plan with the changes it asks for, as the plan command and
// pull-request comments show it.
type Report struct {
	Plan    *Plan   `json:"plan"`
	Changes Changes `json:"changes"`
	// CurrentMicros is what the owned instances cost now, per hour: the
	// plan's NowMicros.
	CurrentMicros int64 `json:"currentMicros"`
}

// NewReport is a plan with its changes.
func NewReport(plan *Plan, changes Changes) *Report {
	return &Report{Plan: plan, Changes: changes, CurrentMicros: plan.NowMicros}
}
