// SPDX-License-Identifier: Apache-2.0

package status

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodFleet = `{"schemaVersion": 1, "fleet": "solo", "conditions": [], "workloads": [
  {"name": "w", "desired": 1, "running": 1, "placements": [],
   "instances": [{"id": "i-1", "offer": "aws/us-east-1/us-east-1a/g4dn.xlarge/on-demand", "state": "running"}]}]}
`

// A status file that is not a fleet's status as gpufleet writes it is
// named with what is wrong and where, never read as a fleet that runs
// nothing; the statuses of the other fleets still come back.
func TestACorruptFleetStatusIsNamed(t *testing.T) {
	tests := []struct {
		name, file, content, want string
	}{
		{"not JSON", "solo.json", "{\"schemaVersion\": 1,\n  \"fleet\": \"solo\",\n  <<<<<<< HEAD\n", "status/solo.json: line 3: does not parse as JSON: "},
		{"cut short", "solo.json", "{\"schemaVersion\": 1,\n  \"fleet\": \"so", "status/solo.json: line 2: does not parse as JSON: unexpected end of JSON input"},
		{"a field of the wrong type", "solo.json", "{\"schemaVersion\": 1,\n \"fleet\": \"solo\",\n \"workloads\": {}}", "status/solo.json: line 3: workloads is a JSON object, not a []status.WorkloadStatus"},
		{"no fleet", "solo.json", `{"schemaVersion": 1}`, "status/solo.json: names no fleet"},
		{"another fleet", "other.json", goodFleet, `status/other.json: holds the status of fleet "solo", not of "other"`},
		{"a newer schema", "solo.json", strings.Replace(goodFleet, `"schemaVersion": 1`, `"schemaVersion": 2`, 1), "status/solo.json: schema version 2; this gpufleet knows 1: upgrade it"},
		{"an offer that is none", "solo.json", strings.Replace(goodFleet, "aws/us-east-1/us-east-1a/g4dn.xlarge/on-demand", "aws/us-east-1", 1), "status/solo.json: instance i-1 of workload w: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "status/"+tt.file, tt.content)
			write(t, dir, "status/other-fleet.json", strings.ReplaceAll(goodFleet, `"solo"`, `"other-fleet"`))
			root, err := OpenRoot(dir, "status")
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			got, err := ReadFleets(root, "status")
			var corrupt *CorruptError
			if !errors.As(err, &corrupt) || len(corrupt.Files) != 1 || !strings.HasPrefix(corrupt.Files[0].String(), tt.want) {
				t.Fatalf("error %v, want one corrupt file: %q", err, tt.want)
			}
			if got["other-fleet"] == nil || len(got) != 1 {
				t.Errorf("read %v, want the other fleet's status alone", got)
			}
			if _, err := ReadObserved(dir, "status", time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadObserved: %v, want the corrupt file named", err)
			}
		})
	}
}

// The repository state cannot be taken for empty when it does not read:
// it is refused, with how to restore it.
func TestACorruptRepositoryStateIsRefused(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"not JSON", "{\"schemaVersion\": 1,\n\"blocklist\": [}", "status/gpufleet.json: line 2: does not parse as JSON: "},
		{"a blocklisted offer that is none", `{"schemaVersion": 1, "blocklist": [{"offer": "aws", "until": "2030-01-01T00:00:00Z"}]}`, "status/gpufleet.json: blocklist[0].offer: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "status/gpufleet.json", tt.content)
			root, err := OpenRoot(dir, "status")
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			_, err = ReadState(root, "status")
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), "git log -- status/gpufleet.json") {
				t.Errorf("error %v, want %q and how to restore the file", err, tt.want)
			}
		})
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
