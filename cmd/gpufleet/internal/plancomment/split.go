// SPDX-License-Identifier: Apache-2.0

package plancomment

import (
	"strings"
	"unicode/utf8"
)

// partHeadroom leaves room in each part for the part header and for
// closing and reopening what a split cuts through.
const partHeadroom = 2048

// Split cuts a Markdown body into parts of at most limit characters, at
// line ends. A part that ends inside a fenced code block or a <details>
// section closes them, and the next part reopens them, so every part
// renders on its own. A line longer than a part is cut where it must be.
func Split(body string, limit int) []string {
	if utf8.RuneCountInString(body) <= limit {
		return []string{body}
	}
	budget := limit - partHeadroom
	if budget < 256 {
		budget = limit / 2
	}
	var (
		parts   []string
		current strings.Builder
		size    int
		fence   string   // the opening line of the code block we are in
		details []string // the opening lines of the sections we are in
		fresh   bool     // the part holds only what it reopened
	)
	flush := func() {
		var tail strings.Builder
		if fence != "" {
			tail.WriteString("```\n")
		}
		for range details {
			tail.WriteString("</details>\n")
		}
		parts = append(parts, current.String()+tail.String())
		current.Reset()
		size = 0
		fresh = true
		// Only the outermost sections reopen: deeper nesting would leave
		// no room in a part for anything else.
		if len(details) > maxReopenDepth {
			details = details[:maxReopenDepth]
		}
		for _, d := range details {
			current.WriteString(continued(d))
			size += utf8.RuneCountInString(continued(d))
		}
		if fence != "" {
			current.WriteString(reopenFence(fence) + "\n")
			size += utf8.RuneCountInString(reopenFence(fence)) + 1
		}
	}
	for _, line := range strings.SplitAfter(body, "\n") {
		// What a line opens counts from its start, what it closes from its
		// end, so a part cut before or inside the line closes and reopens
		// the right things.
		trimmed := strings.TrimSpace(line)
		isFence := strings.HasPrefix(trimmed, "```")
		opensFence, closesFence := isFence && fence == "", isFence && fence != ""
		opensDetails := fence == "" && !isFence && strings.HasPrefix(trimmed, "<details")
		closesDetails := fence == "" && !isFence && strings.HasPrefix(trimmed, "</details>") && len(details) > 0
		open := func() {
			if opensFence {
				fence = trimmed
			}
			if opensDetails {
				details = append(details, trimmed)
			}
		}
		n := utf8.RuneCountInString(line)
		if n <= budget {
			if size+n > budget && !fresh && size > 0 {
				flush()
			}
			open()
			current.WriteString(line)
			size += n
			fresh = false
		} else {
			// A line longer than a part starts here and is cut across
			// parts. After a flush a part holds only what it reopens, so
			// there is always room to cut.
			open()
			for utf8.RuneCountInString(line) > budget-size {
				head := truncateRunes(line, budget-size)
				if head == "" {
					if !fresh {
						flush()
						continue
					}
					// What a fresh part reopens already fills it: cut
					// anyway, so the split always moves on.
					head = truncateRunes(line, max(1, budget/4))
				}
				current.WriteString(head + "\n")
				line = line[len(head):]
				flush()
			}
			current.WriteString(line)
			size += utf8.RuneCountInString(line)
			fresh = false
		}
		if closesFence {
			fence = ""
		}
		if closesDetails {
			details = details[:len(details)-1]
		}
	}
	if current.Len() > 0 {
		parts = append(parts, current.String())
	}
	return parts
}

// continued reopens a <details> section in the next part. A long opening
// line is not repeated whole: what reopens must stay small next to a part.
func continued(open string) string {
	if i := strings.Index(open, "</summary>"); i >= 0 && i < maxReopen {
		return open[:i] + " (continued)" + open[i:] + "\n"
	}
	return "<details open><summary>(continued)</summary>\n"
}

// reopenFence reopens a code block with its info string, kept short.
func reopenFence(open string) string {
	if utf8.RuneCountInString(open) > 32 {
		return "```"
	}
	return open
}

// maxReopen bounds the opening line of a section repeated in the next part,
// and maxReopenDepth how many nested sections are.
const (
	maxReopen      = 160
	maxReopenDepth = 2
)

func truncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
