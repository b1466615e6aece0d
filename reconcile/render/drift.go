// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpufleet/gpufleet/reconcile/status"
)

// driftTime is how drift reports write a time: to the minute, in UTC, as
// a person compares it with a commit's.
const driftTime = "2006-01-02 15:04 UTC"

// DriftHeadline is the line a drift report opens with.
func DriftHeadline(d *status.Drift) string {
	if d.Count() == 0 {
		return fmt.Sprintf("No drift: the clouds match the committed status (listed %s)", d.ObservedAt.UTC().Format(driftTime))
	}
	differ := fmt.Sprintf("%d instances differ", d.Count())
	if d.Count() == 1 {
		differ = "1 instance differs"
	}
	return fmt.Sprintf("Drift: %s from the committed status — %s (listed %s)", differ, kindCounts(d), d.ObservedAt.UTC().Format(driftTime))
}

// DriftText writes a drift report as `gpufleet drift` prints it.
func DriftText(w io.Writer, d *status.Drift) error {
	var b strings.Builder
	fmt.Fprintln(&b, DriftHeadline(d))
	for _, f := range d.Fleets {
		fmt.Fprintf(&b, "\nfleet %s — %s, against its status of %s\n", f.Fleet, f.Summary(), statusTime(f.StatusObservedAt))
		rows := driftRows(d, f.Fleet)
		if len(rows) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.kind, r.id, r.workload, r.offer, r.what)
		}
		tw.Flush()
	}
	if rows := driftRows(d, ""); len(rows) > 0 {
		fmt.Fprintln(&b, "\nin gpufleet's name space, of no fleet")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.kind, r.id, r.offer, r.what)
		}
		tw.Flush()
	}
	writeDriftNotes(&b, d, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// DriftMarkdown writes a drift report for a pull request or an issue.
func DriftMarkdown(w io.Writer, d *status.Drift) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### gpufleet drift\n\n**%s**\n", DriftHeadline(d))
	if len(d.Fleets) > 0 {
		fmt.Fprintln(&b, "\n| Fleet | Missing | Extra | Changed | Foreign | Status of |\n|---|---:|---:|---:|---:|---|")
		for _, f := range d.Fleets {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s |\n", cell(f.Fleet), f.Missing, f.Extra, f.Changed, f.Foreign, statusTime(f.StatusObservedAt))
		}
	}
	if d.Count() > 0 {
		fmt.Fprintln(&b, "\n| | Instance | Fleet/workload | Offer | What differs |\n|---|---|---|---|---|")
		for _, f := range append(d.Fleets, status.FleetDrift{}) {
			for _, r := range driftRows(d, f.Fleet) {
				fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", r.kind, r.id, cell(f.Fleet+"/"+r.workload), cell(r.offer), cell(r.what))
			}
		}
	}
	writeDriftNotes(&b, d, "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cell keeps a value from breaking a Markdown table.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func writeDriftNotes(b *strings.Builder, d *status.Drift, pre string) {
	if d.ForeignTruncated {
		fmt.Fprintf(b, "%sMore foreign instances run than are listed here.\n", pre)
	}
	if len(d.ForeignUnchecked) > 0 {
		fmt.Fprintf(b, "%sForeign instances were not looked for in %s: gpufleet cannot list what it does not own there.\n", pre, strings.Join(d.ForeignUnchecked, ", "))
	}
}

type driftRow struct{ kind, id, workload, offer, what string }

// driftRows are the drifted instances of a fleet, "" for those of none.
func driftRows(d *status.Drift, fleet string) []driftRow {
	var out []driftRow
	for _, i := range d.Instances {
		if i.Fleet != fleet {
			continue
		}
		r := driftRow{kind: string(i.Kind), id: i.Cloud + "/" + i.ID, workload: i.Workload}
		switch {
		case i.Foreign != nil:
			r.offer = i.Foreign.Offer.String()
			r.what = fmt.Sprintf("%s, not owned by gpufleet", i.Foreign.State)
			if i.Foreign.Account != "" {
				r.what += " (account " + i.Foreign.Account + ")"
			}
		case i.Kind == status.DriftMissing && i.Observed != nil:
			r.offer = i.Recorded.OfferKey.String()
			r.what = fmt.Sprintf("was %s, now %s", i.Recorded.State, i.Observed.State)
		case i.Kind == status.DriftMissing:
			r.offer = i.Recorded.OfferKey.String()
			r.what = fmt.Sprintf("was %s, no longer listed", i.Recorded.State)
		case i.Kind == status.DriftExtra:
			r.offer = i.Observed.OfferKey.String()
			r.what = fmt.Sprintf("%s, not in the status", i.Observed.State)
		default:
			r.offer = i.Observed.OfferKey.String()
			var parts []string
			for _, c := range i.Changes {
				parts = append(parts, fmt.Sprintf("%s %s → %s", c.Field, orNone(c.Recorded), orNone(c.Observed)))
			}
			r.what = strings.Join(parts, "; ")
		}
		if r.workload == "" {
			r.workload = "-"
		}
		out = append(out, r)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func statusTime(t time.Time) string {
	if t.IsZero() {
		return "none committed"
	}
	return t.UTC().Format(driftTime)
}

// kindCounts counts a drift's instances by kind, fleets or none.
func kindCounts(d *status.Drift) string {
	var total status.FleetDrift
	for _, i := range d.Instances {
		switch i.Kind {
		case status.DriftMissing:
			total.Missing++
		case status.DriftExtra:
			total.Extra++
		case status.DriftChanged:
			total.Changed++
		case status.DriftForeign:
			total.Foreign++
		}
	}
	return total.Summary()
}
