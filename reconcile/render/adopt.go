// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Adoption is an adoption's plan and, once applied, what it tagged.
type Adoption struct {
	Revision string `json:"revision"`
	Fleet    string `json:"fleet"`
	Workload string `json:"workload"`
	// Where is the workload's place in the specs, file:line.
	Where string `json:"where,omitempty"`
	// Selector says how the instances were picked.
	Selector string `json:"selector"`
	// Nodes is how many nodes the workload asks for, Running how many
	// live ones it has now.
	Nodes   int `json:"nodes"`
	Running int `json:"running"`
	// Adopt are the instances to tag, in the order Unowned lists them.
	Adopt []AdoptCandidate `json:"adopt"`
	// Already are the instances asked for that the workload owns already:
	// adopting them again changes nothing.
	Already []AdoptCandidate `json:"already,omitempty"`
	// Refused are the instances that cannot join the workload, each with
	// why. One refused instance holds back them all.
	Refused []AdoptRefusal `json:"refused,omitempty"`
	// Refusal, when set, is why nothing is tagged.
	Refusal string `json:"refusal,omitempty"`
	// Note says what a plan with nothing to do found.
	Note string `json:"note,omitempty"`
	// Applied says the instances of Adopt were tagged; Declined that the
	// confirmation said no.
	Applied  bool `json:"applied"`
	Declined bool `json:"declined,omitempty"`
	// Adopted are the instances tagged, as List returns them from then on.
	Adopted []planner.Instance `json:"adopted,omitempty"`
}

// AdoptCandidate is an instance an adoption takes, or took already.
type AdoptCandidate struct {
	ID      string           `json:"id"`
	Offer   planner.OfferKey `json:"offer"`
	State   planner.State    `json:"state"`
	Account string           `json:"account,omitempty"`
	// Token is the ownership token it is tagged with
	// (see providers.AdoptedToken).
	Token       string `json:"token"`
	PriceMicros int64  `json:"priceMicros,omitempty"`
}

// AdoptRefusal is an instance that cannot join the workload.
type AdoptRefusal struct {
	ID     string            `json:"id"`
	Offer  *planner.OfferKey `json:"offer,omitempty"`
	Reason string            `json:"reason"`
}

// Blocked reports whether the adoption holds a refusal: nothing is tagged.
func (a *Adoption) Blocked() bool { return a.Refusal != "" }

// AdoptionHeadline is the line an adoption's output ends with: what it
// does, did, or why it does nothing.
func AdoptionHeadline(a *Adoption) string {
	target := a.Fleet + "/" + a.Workload
	switch {
	case a.Blocked():
		return "Refused: " + a.Refusal + "."
	case a.Note != "":
		return "Nothing to adopt: " + a.Note + "."
	case a.Declined:
		return fmt.Sprintf("Not adopted: %d instances left as they were.", len(a.Adopt))
	case a.Applied:
		return fmt.Sprintf("Adopted %d instances into %s: tagged as its nodes, %d of %d; the next run counts them and launches none in their place.",
			len(a.Adopted), target, a.Running+len(a.Adopted), a.Nodes)
	case len(a.Adopted) > 0:
		return fmt.Sprintf("Adopted %d of %d instances into %s; run the same adoption again for the rest.", len(a.Adopted), len(a.Adopt), target)
	}
	return fmt.Sprintf("Plan: %d to adopt into %s (%s/h), which would run %d of its %d nodes.",
		len(a.Adopt), target, catalog.Money(a.cost()), a.Running+len(a.Adopt), a.Nodes)
}

func (a *Adoption) cost() int64 {
	var sum int64
	for _, c := range a.Adopt {
		sum += c.PriceMicros
	}
	return sum
}

// AdoptionText writes an adoption as gpufleet adopt prints it: the
// workload, a line for each instance (+ to adopt, = adopted already, !
// refused, with why), and the headline.
func AdoptionText(w io.Writer, a *Adoption) error {
	var b strings.Builder
	where := ""
	if a.Where != "" {
		where = " (" + a.Where + ")"
	}
	fmt.Fprintf(&b, "Adoption into %s/%s%s by %s: the workload asks for %d nodes and runs %d.\n", a.Fleet, a.Workload, where, a.Selector, a.Nodes, a.Running)
	for _, c := range a.Adopt {
		fmt.Fprintf(&b, "  + %s on %s, %s, at %s/h (token %s)\n", c.ID, c.Offer, c.State, catalog.Money(c.PriceMicros), c.Token)
	}
	for _, c := range a.Already {
		fmt.Fprintf(&b, "  = %s on %s: already adopted\n", c.ID, c.Offer)
	}
	for _, r := range a.Refused {
		fmt.Fprintf(&b, "  ! %s%s: %s\n", r.ID, offerOf(r.Offer), r.Reason)
	}
	b.WriteString(AdoptionHeadline(a) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// AdoptionMarkdown writes an adoption as a table, for a pull request or
// a ticket.
func AdoptionMarkdown(w io.Writer, a *Adoption) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### Adoption into `%s/%s`\n\n", a.Fleet, a.Workload)
	fmt.Fprintf(&b, "Selected by `%s`; the workload asks for %d nodes and runs %d.\n\n", a.Selector, a.Nodes, a.Running)
	if len(a.Adopt)+len(a.Already)+len(a.Refused) > 0 {
		b.WriteString("| | Instance | Offer | |\n|---|---|---|---|\n")
		for _, c := range a.Adopt {
			fmt.Fprintf(&b, "| + | `%s` | %s | %s/h |\n", c.ID, c.Offer, catalog.Money(c.PriceMicros))
		}
		for _, c := range a.Already {
			fmt.Fprintf(&b, "| = | `%s` | %s | already adopted |\n", c.ID, c.Offer)
		}
		for _, r := range a.Refused {
			fmt.Fprintf(&b, "| ! | `%s` | %s | %s |\n", r.ID, strings.TrimPrefix(offerOf(r.Offer), " on "), markdownCell(r.Reason))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "**%s**\n", AdoptionHeadline(a))
	_, err := io.WriteString(w, b.String())
	return err
}

func offerOf(o *planner.OfferKey) string {
	if o == nil {
		return ""
	}
	return " on " + o.String()
}

func markdownCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
