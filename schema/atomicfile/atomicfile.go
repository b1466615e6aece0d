// SPDX-License-Identifier: Apache-2.0

package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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

// WriteIn is Write confined to root: no name, and no symlink on the way to
// it, can lead outside root's directory.
func WriteIn(root *os.Root, name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, f, err := createTemp(root, dir, "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return err
	}
	defer root.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}

// createTemp makes a new file in root's dir with a random suffix, as
// os.CreateTemp does outside a root.
func createTemp(root *os.Root, dir, prefix string) (string, *os.File, error) {
	for range 100 {
		b := make([]byte, 6)
		rand.Read(b)
		name := filepath.Join(dir, prefix+hex.EncodeToString(b))
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, fmt.Errorf("creating a temporary file in %s: too many names taken", dir)
}
