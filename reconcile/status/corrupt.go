// SPDX-License-Identifier: Apache-2.0

package status

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// CorruptFile is a status file that is not what gpufleet commits: it does
// not parse, names no fleet or another than its file name, or was written
// by a newer gpufleet. Read as nothing, it would say that nothing runs.
type CorruptFile struct {
	// Path is the file's path in the repository, with slashes.
	Path    string
	Problem string
}

func (f CorruptFile) String() string { return f.Path + ": " + f.Problem }

// CorruptError names the status files a read could not take for what the
// last reconcile committed. ReadFleets returns it along with the statuses
// it could read, for a caller that can do without the rest to go on.
type CorruptError struct {
	Files []CorruptFile
}

func (e *CorruptError) Error() string {
	lines := make([]string, len(e.Files))
	state := ""
	for i, f := range e.Files {
		lines[i] = f.String()
		if path.Base(f.Path) == StateFile {
			state = f.Path
		}
	}
	if state != "" {
		// The clouds cannot tell what it held again: it is not a file to
		// write afresh behind anyone's back.
		return fmt.Sprintf("%s; it holds the blocklist, the retired tokens and the preemptions already dealt with, which the clouds cannot tell again: restore it from the repository's history (git log -- %s), or delete it to start without them",
			strings.Join(lines, "; "), state)
	}
	what := "it is"
	if len(e.Files) > 1 {
		what = "they are"
	}
	return fmt.Sprintf("%s; %s not what gpufleet reconcile commits, so what runs cannot be read from it: restore it from the repository's history, or let the next reconcile write it again from what the clouds run",
		strings.Join(lines, "; "), what)
}

// decodeProblem says where a status file's JSON breaks: the line, and the
// field when a value has the wrong type.
func decodeProblem(data []byte, err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("line %d: does not parse as JSON: %v", lineAt(data, syntax.Offset), syntax)
	case errors.As(err, &typ):
		return fmt.Sprintf("line %d: %s is a JSON %s, not a %s", lineAt(data, typ.Offset), cmp.Or(typ.Field, "the document"), typ.Value, typ.Type)
	}
	return "does not parse as JSON: " + err.Error()
}

// lineAt is the line of a byte offset, counted from 1.
func lineAt(data []byte, offset int64) int {
	return 1 + bytes.Count(data[:min(max(offset, 0), int64(len(data)))], []byte("\n"))
}
