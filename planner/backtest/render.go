// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// dollars writes micro-dollars as dollars and cents, with thousands
// separated.
func dollars(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	cents := (micros + 5_000) / 10_000
	whole := fmt.Sprint(cents / 100)
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	return fmt.Sprintf("%s$%s.%02d", sign, whole, cents%100)
}

// days says how long the period is, as a person would.
func (r *Report) days() string {
	d := r.To.Sub(r.From)
	if d%(24*time.Hour) == 0 {
		if d == 24*time.Hour {
			return "1 day"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return fmt.Sprintf("%.1f days", d.Hours()/24)
}

// percent is part of whole as a share, "–" without a whole. A loss beyond
// the whole itself, against a baseline of a few micro-dollars, reads
// "< -100 %": millions of per cent would say nothing a reader can use.
func percent(part, whole int64) string {
	switch {
	case whole <= 0:
		return "–"
	case part < -whole:
		return "< -100 %"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(part)/float64(whole))
}

// versusBaseline is a run's cost against the baseline's, said so that a
// loss never reads as a negative saving: "19.0 % less", "4.2 % more",
// "same", "–" without a baseline. A loss beyond the baseline itself
// reads "> 100 % more".
func versusBaseline(cost, baseline int64) string {
	switch saved := baseline - cost; {
	case baseline <= 0:
		return "–"
	case saved > 0:
		return percent(saved, baseline) + " less"
	case saved == 0:
		return "same"
	case -saved > baseline:
		return "> 100 % more"
	default:
		return percent(-saved, baseline) + " more"
	}
}

// label is a run's name, with its settings when they say more.
func (run Run) label() string {
	if len(run.Settings) == 0 || run.Name == NoMigrations {
		return run.Name
	}
	parts := make([]string, len(run.Settings))
	for i, s := range run.Settings {
		parts[i] = s.String()
	}
	if joined := strings.Join(parts, " "); joined != run.Name {
		return run.Name + " (" + joined + ")"
	}
	return run.Name
}

// Summary is one sentence per run against the repository as it is.
func (r *Report) Summary() []string {
	base := r.Runs[0]
	var out []string
	line := fmt.Sprintf("The repository's policy would have cost %s over %s", dollars(base.CostMicros), r.days())
	if base.BaselineMicros > 0 {
		switch saved := base.BaselineMicros - base.CostMicros; {
		case saved > 0:
			line += fmt.Sprintf(", %s (%s) less than the cheapest single cloud on demand", dollars(saved), percent(saved, base.BaselineMicros))
		case saved < 0:
			line += fmt.Sprintf(", %s more than the cheapest single cloud on demand", dollars(-saved))
		default:
			line += ", the same as the cheapest single cloud on demand"
		}
	}
	out = append(out, line+".")
	for _, run := range r.Runs[1:] {
		delta := run.CostMicros - base.CostMicros
		switch {
		case delta > 0:
			out = append(out, fmt.Sprintf("%s would have cost %s more over %s.", run.label(), dollars(delta), r.days()))
		case delta < 0:
			out = append(out, fmt.Sprintf("%s would have cost %s less over %s.", run.label(), dollars(-delta), r.days()))
		default:
			out = append(out, fmt.Sprintf("%s would have cost the same over %s.", run.label(), r.days()))
		}
	}
	return out
}

// WriteText writes the report as a table a person reads on a terminal.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Backtest %s to %s, every %s (%d steps), seed %d\n\n", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Step, r.Steps, r.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tcost\tvs repository\tbaseline\tvs baseline\tmigrations\tpreemptions\tplans\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t\n", run.label(), dollars(run.CostMicros), signed(run.CostMicros-r.Runs[0].CostMicros),
			dollars(run.BaselineMicros), versusBaseline(run.CostMicros, run.BaselineMicros), run.Migrations, run.Preemptions, run.Solves)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, s := range r.Summary() {
		fmt.Fprintln(w, s)
	}
	return nil
}

func signed(micros int64) string {
	if micros > 0 {
		return "+" + dollars(micros)
	}
	return dollars(micros)
}

// WriteMarkdown writes the report for a pull request comment.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "### Backtest over %s\n\n", r.days())
	for _, s := range r.Summary() {
		fmt.Fprintf(w, "- %s\n", s)
	}
	fmt.Fprintf(w, "\n| run | cost | vs repository | hyperscaler baseline | vs baseline | migrations | preemptions |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %d |\n", strings.ReplaceAll(run.label(), "|", "\\|"), dollars(run.CostMicros), signed(run.CostMicros-r.Runs[0].CostMicros),
			dollars(run.BaselineMicros), versusBaseline(run.CostMicros, run.BaselineMicros), run.Migrations, run.Preemptions)
	}
	_, err := fmt.Fprintf(w, "\n<sub>%s to %s, every %s, seed %d.</sub>\n", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Step, r.Seed)
	return err
}
