// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// chart colours, one per run, distinguishable by most colour-blind readers
// (Okabe and Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

// WriteSVG draws each run's hourly cost over the period: time across, US$
// per hour up, one line a run, with axes, ticks and a legend. It is plain
// SVG that a browser or a pull request shows as it is.
func (r *Report) WriteSVG(w io.Writer) error {
	const (
		width, height          = 960, 480
		left, right, top, bott = 80, 24, 40, 110
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bott)
	var most int64
	for _, run := range r.Runs {
		for _, v := range run.Hourly {
			most = max(most, v)
		}
	}
	yMax, yStep := niceScale(float64(most) / 1e6)
	steps := max(r.Steps, 1)
	x := func(i int) float64 { return float64(left) + plotW*float64(i)/float64(steps) }
	y := func(micros int64) float64 { return float64(top) + plotH*(1-float64(micros)/1e6/yMax) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">Hourly cost per policy, %s to %s</text>`+"\n", left, r.From.Format("2006-01-02 15:04"), r.To.Format("2006-01-02 15:04 MST"))
	// Horizontal grid and the y axis's labels.
	for v := 0.0; v <= yMax+1e-9; v += yStep {
		py := float64(top) + plotH*(1-v/yMax)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", left, py, width-right, py)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">$%s</text>`+"\n", left-6, py, trimFloat(v))
	}
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">US$ per hour</text>`+"\n", float64(top)+plotH/2)
	// Time ticks: days, or hours for a short period.
	step, _ := time.ParseDuration(r.Step)
	if step <= 0 {
		step = time.Hour
	}
	tick := 24 * time.Hour
	span := r.To.Sub(r.From)
	switch {
	case span <= 2*24*time.Hour:
		tick = 6 * time.Hour
	case span > 21*24*time.Hour:
		tick = 7 * 24 * time.Hour
	}
	for t := r.From.Truncate(tick); !t.After(r.To); t = t.Add(tick) {
		if t.Before(r.From) {
			continue
		}
		px := float64(left) + plotW*float64(t.Sub(r.From))/float64(time.Duration(steps)*step)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#888888"/>`+"\n", px, top+int(plotH), px, float64(top)+plotH+5)
		label := t.Format("Jan 2")
		if tick < 24*time.Hour {
			label = t.Format("Jan 2 15:04")
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px, float64(top)+plotH+18, label)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">time (UTC), one point every %s</text>`+"\n", float64(left)+plotW/2, float64(top)+plotH+36, r.Step)
	// Axes.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333333"/>`+"\n", left, top, left, float64(top)+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333333"/>`+"\n", left, float64(top)+plotH, width-right, float64(top)+plotH)
	// One stepped line a run: the cost holds for the whole step.
	for i, run := range r.Runs {
		colour := palette[i%len(palette)]
		// A corner only where the cost changes keeps a month small.
		var pts []string
		for s, v := range run.Hourly {
			if s == 0 || v != run.Hourly[s-1] {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s), y(v)))
			}
			if s+1 == len(run.Hourly) || v != run.Hourly[s+1] {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s+1), y(v)))
			}
		}
		dash := ""
		if i > 0 {
			dash = fmt.Sprintf(` stroke-dasharray="%d 3"`, 4+2*i)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s</title></polyline>`+"\n", colour, dash, strings.Join(pts, " "), html.EscapeString(run.label()))
	}
	// Legend, under the axis: each run's name and total.
	ly := float64(top) + plotH + 58
	for i, run := range r.Runs {
		lx := float64(left) + float64(i%3)*plotW/3
		row := ly + float64(i/3)*18
		dash := ""
		if i > 0 {
			dash = fmt.Sprintf(` stroke-dasharray="%d 3"`, 4+2*i)
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, row, lx+24, row, palette[i%len(palette)], dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">%s: %s</text>`+"\n", lx+30, row, html.EscapeString(run.label()), dollars(run.CostMicros))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceScale picks an axis top and tick step of 1, 2 or 5 × a power of
// ten above the largest value.
func niceScale(most float64) (top, step float64) {
	if most <= 0 {
		return 1, 0.25
	}
	raw := most / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return math.Ceil(most/step) * step, step
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
