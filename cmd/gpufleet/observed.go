// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The --observed file says what runs now, for planning without asking the
// clouds. It is one versioned format, documented in README.md:
//
//	{"formatVersion": 1, "kind": "observed", "instances": [
//	  {"id": "i-0abc", "cloud": "aws", "region": "us-east-1", "zone": "us-east-1a",
//	   "instanceType": "g6.2xlarge", "market": "on-demand",
//	   "fleet": "inference", "workload": "chat", "state": "running"}]}
//
// Anything else is refused with what is wrong and where: planning against
// a file misread as empty would plan to create what already runs.
const (
	observedKind    = "observed"
	observedVersion = 1
)

var observedStates = []planner.State{planner.StatePending, planner.StateRunning, planner.StateStopping,
	planner.StatePreempted, planner.StateFailed, planner.StateTerminated}

// maxObservedSize bounds the --observed file: a listing of the most nodes
// a repository may hold (schema.MaxNodes), each with every optional field,
// takes about 20 MiB.
const maxObservedSize = 32 << 20

func readObserved(name string) ([]planner.Instance, error) {
	data, err := readObservedFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	instances, err := parseObserved(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", name, err)
	}
	return instances, nil
}

// readObservedFile reads a regular file of at most maxObservedSize bytes.
// A device such as /dev/zero would be read without end, and a named pipe
// would block until a writer came: both are refused by what Stat says
// before they are opened, and again by what the open file says.
func readObservedFile(name string) ([]byte, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): --observed reads a file", info.Mode().Type())
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, unwrapPath(err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): --observed reads a file", info.Mode().Type())
	}
	if info.Size() > maxObservedSize {
		return nil, fmt.Errorf("file is %d bytes, over the limit of %d bytes", info.Size(), maxObservedSize)
	}
	// The file may grow after Stat; the limit holds regardless.
	data, err := io.ReadAll(io.LimitReader(f, maxObservedSize+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(data) > maxObservedSize {
		return nil, fmt.Errorf("file is over the limit of %d bytes", maxObservedSize)
	}
	return data, nil
}

// unwrapPath drops an *fs.PathError's path, which the caller names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// observedError is a problem at a line of the file.
type observedError struct {
	line int
	msg  string
}

func (e *observedError) Error() string { return fmt.Sprintf("%d: %s", e.line, e.msg) }

func parseObserved(data []byte) ([]planner.Instance, error) {
	at := func(offset int64, format string, args ...any) error {
		// The decoder's offset is where the last token ended: the value
		// meant starts after the blanks and comma that follow it.
		i := min(int(offset), len(data))
		for i < len(data) && bytes.IndexByte([]byte(" \t\r\n,:"), data[i]) >= 0 {
			i++
		}
		return &observedError{line: 1 + bytes.Count(data[:i], []byte("\n")), msg: fmt.Sprintf(format, args...)}
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		hint := ""
		if bytes.Contains(data, []byte(`"tags"`)) {
			hint = " (this looks like `gpufleet sim inspect -o json`, the emulator's own view)"
		}
		return nil, at(0, "a bare list of instances is not gpufleet's observed format%s: want {\"formatVersion\": %d, \"kind\": %q, \"instances\": [...]}", hint, observedVersion, observedKind)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, at(dec.InputOffset(), "not a JSON object: want {\"formatVersion\": %d, \"kind\": %q, \"instances\": [...]}", observedVersion, observedKind)
	}
	var version int
	var kind string
	var instances []planner.Instance
	seen := map[string]bool{}
	for dec.More() {
		keyAt := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, at(keyAt, "%v", err)
		}
		key := tok.(string)
		if seen[key] {
			return nil, at(keyAt, "%s appears twice", key)
		}
		seen[key] = true
		switch key {
		case "formatVersion":
			if err := dec.Decode(&version); err != nil {
				return nil, at(keyAt, "formatVersion: %v", err)
			}
		case "kind":
			if err := dec.Decode(&kind); err != nil {
				return nil, at(keyAt, "kind: %v", err)
			}
			// Another kind's fields would read as unknown: say what it is.
			if err := checkObservedKind(kind); err != nil {
				return nil, at(keyAt, "%v", err)
			}
		case "instances":
			if instances, err = decodeObservedInstances(dec, at); err != nil {
				return nil, err
			}
		default:
			return nil, at(keyAt, "unknown field %q: the observed format has formatVersion, kind and instances", key)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, at(dec.InputOffset(), "%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, at(dec.InputOffset(), "more than one JSON value")
	}
	if err := checkObservedKind(kind); err != nil {
		return nil, at(0, "%v", err)
	}
	switch {
	case version != observedVersion:
		return nil, at(0, "formatVersion is %d; this gpufleet reads version %d", version, observedVersion)
	case !seen["instances"]:
		return nil, at(0, "instances is missing (an empty list says nothing runs)")
	}
	if instances == nil {
		instances = []planner.Instance{}
	}
	return instances, nil
}

func decodeObservedInstances(dec *json.Decoder, at func(int64, string, ...any) error) ([]planner.Instance, error) {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, at(dec.InputOffset(), "instances must be a list")
	}
	var out []planner.Instance
	ids := map[string]bool{}
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var inst planner.Instance
		if err := dec.Decode(&inst); err != nil {
			return nil, at(start, "instances[%d]: %v", i, err)
		}
		if msg := checkObserved(inst); msg != "" {
			return nil, at(start, "instances[%d]: %s", i, msg)
		}
		key := inst.Cloud + "/" + inst.ID
		if ids[key] {
			return nil, at(start, "instances[%d]: %s instance %s is listed twice", i, inst.Cloud, inst.ID)
		}
		ids[key] = true
		out = append(out, inst)
	}
	if _, err := dec.Token(); err != nil {
		return nil, at(dec.InputOffset(), "instances: %v", err)
	}
	return out, nil
}

// checkObserved says what a listed instance lacks, "" when nothing.
func checkObserved(inst planner.Instance) string {
	for _, f := range []struct{ name, value string }{
		{"id", inst.ID}, {"cloud", inst.Cloud}, {"region", inst.Region}, {"zone", inst.Zone},
		{"instanceType", inst.InstanceType}, {"fleet", inst.Fleet}, {"workload", inst.Workload},
	} {
		if f.value == "" {
			return f.name + " is missing"
		}
	}
	switch {
	case !slices.Contains(catalog.Clouds, inst.Cloud):
		return fmt.Sprintf("cloud %q is not one of %v", inst.Cloud, catalog.Clouds)
	case inst.Market != catalog.OnDemand && inst.Market != catalog.Spot:
		return fmt.Sprintf("market %q is not %q or %q", inst.Market, catalog.OnDemand, catalog.Spot)
	case !slices.Contains(observedStates, inst.State):
		return fmt.Sprintf("state %q is not one of %v", inst.State, observedStates)
	}
	return ""
}

func checkObservedKind(kind string) error {
	switch kind {
	case observedKind:
		return nil
	case "emulator":
		return fmt.Errorf("kind is %q: this is `gpufleet sim inspect -o json`, the emulator's own view, not gpufleet's observed format (kind %q)", kind, observedKind)
	}
	return fmt.Errorf("kind is %q, want %q", kind, observedKind)
}
