// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// progress shows a run's creates and deletes as they finish, by cloud: on
// a terminal one line redrawn in place, elsewhere (CI logs, files) a plain
// line every few seconds and when a round ends, so a long apply is
// watchable without a line per node.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	every    time.Duration
	now      func() time.Time
	round    int
	clouds   map[string]*cloudCount
	last     time.Time
	drawn    bool
}

type cloudCount struct {
	planned, created, deleted, failed int
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, terminal: isTerminal(w), every: 5 * time.Second, now: time.Now}
}

// applying starts a round.
func (p *progress) applying(round int, _ *planner.Report, actions []planner.Action) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
	p.round, p.clouds = round, map[string]*cloudCount{}
	creates, deletes := 0, 0
	for _, a := range actions {
		p.count(a.Offer.Cloud).planned++
		if a.Kind == planner.Create {
			creates++
		} else {
			deletes++
		}
	}
	what := "Applying"
	if round > 1 {
		what = fmt.Sprintf("Round %d, after capacity errors, applying", round)
	}
	fmt.Fprintf(p.w, "%s %d to create, %d to delete\n", what, creates, deletes)
	p.last = p.now()
	p.draw(false)
}

// applied counts a finished action.
func (p *progress) applied(res status.ActionResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cloud, _, _ := strings.Cut(res.Offer, "/")
	c := p.count(cloud)
	switch {
	case res.Error != "":
		c.failed++
	case res.Kind == planner.Create:
		c.created++
	default:
		c.deleted++
	}
	p.draw(p.finished())
}

// done ends the display before the run's summary.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
}

func (p *progress) count(cloud string) *cloudCount {
	c := p.clouds[cloud]
	if c == nil {
		c = &cloudCount{}
		p.clouds[cloud] = c
	}
	return c
}

func (p *progress) finished() bool {
	for _, c := range p.clouds {
		if c.created+c.deleted+c.failed < c.planned {
			return false
		}
	}
	return true
}

// draw shows the counts: always on a terminal, elsewhere when forced or
// every few seconds.
func (p *progress) draw(force bool) {
	line := p.line()
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
		return
	}
	if now := p.now(); force || now.Sub(p.last) >= p.every {
		fmt.Fprintln(p.w, line)
		p.last = now
	}
}

func (p *progress) endLine() {
	if p.terminal && p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

func (p *progress) line() string {
	var parts []string
	for _, cloud := range catalog.Clouds {
		c := p.clouds[cloud]
		if c == nil {
			continue
		}
		pending := max(0, c.planned-c.created-c.deleted-c.failed)
		// A try that failed is not yet a failed node: a later round may
		// place it elsewhere, and the run's summary counts the nodes.
		parts = append(parts, fmt.Sprintf("%s: %d created, %d deleted, %d tries failed, %d pending", cloud, c.created, c.deleted, c.failed, pending))
	}
	return "  " + strings.Join(parts, " · ")
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	// A masking writer is a terminal when what it writes to is.
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// colourful reports whether output to w may be coloured: a terminal, and
// neither NO_COLOR (no-color.org: set and not empty) nor TERM=dumb says
// otherwise.
func colourful(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

// Colours of the lines of plans and runs that say what changes.
const (
	green  = "\033[32m"
	red    = "\033[31m"
	yellow = "\033[33m"
	reset  = "\033[0m"
)

// colourLines colours, in text meant for a terminal, the lines that add
// (+), remove (-) or refuse (!) something.
func colourLines(text []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		colour := ""
		switch {
		case strings.HasPrefix(trimmed, "+ "):
			colour = green
		case strings.HasPrefix(trimmed, "- "):
			colour = red
		case strings.HasPrefix(trimmed, "! "):
			colour = yellow
		}
		if colour != "" {
			out.WriteString(colour + line + reset + "\n")
		} else {
			out.WriteString(line + "\n")
		}
	}
	return out.Bytes()
}

// textOut is where a command writes text for people: a.stdout, coloured
// once the text is complete when that is a terminal that takes colour.
func (a *app) textOut(write func(io.Writer) error) error {
	if !colourful(a.stdout) {
		return write(a.stdout)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	_, err := a.stdout.Write(colourLines(b.Bytes()))
	return err
}
