// Package atomicfile replaces files in one step, for every file gpufleet
// writes that someone else reads: status files, the emulator's state,
// vendored schemas and price catalogs. A reader, or a crash, sees the old
// file or the new one, never half of either.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to a temporary file in name's directory, syncs it and
// renames it over name, creating the directory if needed.
func Write(name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
