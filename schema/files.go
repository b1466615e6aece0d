// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxFileSize bounds every file a load reads, so that a stray data file in
// fleets/ cannot exhaust memory.
const MaxFileSize = 1 << 20

// ConfigFile is the repository-wide settings file at the root.
const ConfigFile = "gpufleet.cue"

// The directories whose .cue files make up a repository, besides ConfigFile.
const (
	FleetsDir = "fleets"
	PolicyDir = "policy"
)

// sourceFile is one file read from a repository.
type sourceFile struct {
	name string // repository-relative, slash-separated
	// resolved is the file read, when name is a symlink to it.
	resolved string
	src      []byte
}

// readRepo reads ConfigFile and every .cue file under FleetsDir and
// PolicyDir through an os.Root, so no path or symlink can lead outside the
// repository. Unreadable files are reported and skipped; the rest are
// returned sorted by name.
func readRepo(dir string, errs *errorList) []sourceFile {
	root, err := os.OpenRoot(dir)
	if err != nil {
		errs.add(Position{File: dir}, "", "cannot open the repository: %v", unwrapPathError(err))
		return nil
	}
	defer root.Close()

	names := []string{}
	if _, err := root.Lstat(ConfigFile); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			errs.add(Position{File: ConfigFile}, "", "not found: a gpufleet repository has %s at its root", ConfigFile)
		} else {
			errs.add(Position{File: ConfigFile}, "", "%v", unwrapPathError(err))
		}
	} else {
		names = append(names, ConfigFile)
	}
	for _, sub := range []string{FleetsDir, PolicyDir} {
		names = append(names, listCUE(root, sub, errs)...)
	}
	slices.Sort(names)

	files := make([]sourceFile, 0, len(names))
	for _, name := range names {
		src, resolved, err := readFile(root, name)
		if err != nil {
			errs.add(Position{File: name}, "", "%v", err)
			continue
		}
		if !utf8.Valid(src) {
			line, col := firstInvalidUTF8(src)
			errs.add(Position{File: name, Line: line, Column: col}, "", "file is not valid UTF-8")
			continue
		}
		files = append(files, sourceFile{name: name, resolved: resolved, src: src})
	}
	return files
}

// listCUE walks a directory of the repository for .cue files, skipping
// hidden directories. A missing directory holds no files.
func listCUE(root *os.Root, dir string, errs *errorList) []string {
	var names []string
	err := fs.WalkDir(root.FS(), dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			errs.add(Position{File: name}, "", "%v", unwrapPathError(err))
			return nil
		}
		base := path.Base(name)
		if d.IsDir() {
			if name != dir && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(base, ".cue") && !strings.HasPrefix(base, ".") {
			names = append(names, name)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.SkipDir) {
		errs.add(Position{File: dir}, "", "%v", unwrapPathError(err))
	}
	return names
}

// readFile reads a repository file through root: a regular file of at
// most MaxFileSize bytes, found through symlinks that stay inside the
// repository and lead nowhere into .git, the clone's own data (its config
// may hold credentials). It returns the file's contents and the path of the
// file actually read, which differs from name when a symlink led there.
func readFile(root *os.Root, name string) (src []byte, resolved string, err error) {
	resolved, err = resolve(root, name)
	if err != nil {
		return nil, "", err
	}
	if inGitDir(resolved) {
		if resolved == name {
			return nil, "", errors.New("refused: the file is inside .git")
		}
		return nil, "", fmt.Errorf("refused: the file is a symlink to %s, inside .git", resolved)
	}
	// Stat before Open: opening a named pipe would block until a writer
	// came along.
	info, err := root.Lstat(resolved)
	if err != nil {
		return nil, "", openError(err)
	}
	if !info.Mode().IsRegular() {
		return nil, "", fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	f, err := root.Open(resolved)
	if err != nil {
		return nil, "", openError(err)
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, "", unwrapPathError(err)
	}
	if !info.Mode().IsRegular() {
		return nil, "", fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	if info.Size() > MaxFileSize {
		return nil, "", fmt.Errorf("file is %d bytes, over the limit of %d bytes", info.Size(), MaxFileSize)
	}
	// The size can change between Stat and Read; the limit holds regardless.
	src, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, "", unwrapPathError(err)
	}
	if len(src) > MaxFileSize {
		return nil, "", fmt.Errorf("file is over the limit of %d bytes", MaxFileSize)
	}
	return src, resolved, nil
}

// maxLinks bounds the symlinks one path may pass through, as the kernel's
// ELOOP does.
const maxLinks = 40

// resolve follows the symlinks of a repository-relative path, component by
// component, to the path of the file it names, refusing any that leads
// outside the repository.
func resolve(root *os.Root, name string) (string, error) {
	pending := strings.Split(path.Clean(name), "/")
	var done []string
	for links := 0; len(pending) > 0; {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case ".", "":
			continue
		case "..":
			if len(done) == 0 {
				return "", errOutside
			}
			done = done[:len(done)-1]
			continue
		}
		here := path.Join(append(done, part)...)
		info, err := root.Lstat(here)
		if err != nil {
			return "", openError(err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			done = append(done, part)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("refused: more than %d symlinks lead to the file", maxLinks)
		}
		target, err := root.Readlink(here)
		if err != nil {
			return "", unwrapPathError(err)
		}
		if path.IsAbs(target) || filepath.IsAbs(target) {
			return "", errOutside
		}
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	if len(done) == 0 {
		return "", errors.New("not a file")
	}
	return path.Join(done...), nil
}

var errOutside = errors.New("refused: the file is a symlink that leads outside the repository")

// inGitDir reports whether a repository-relative path lies in a .git
// directory (any letter case: macOS and Windows file systems fold it).
func inGitDir(name string) bool {
	for part := range strings.SplitSeq(name, "/") {
		if strings.EqualFold(part, ".git") {
			return true
		}
	}
	return false
}

func openError(err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return errOutside
	}
	return unwrapPathError(err)
}

// unwrapPathError drops the *fs.PathError wrapper, whose path is the
// absolute one; callers report the repository-relative name themselves.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func firstInvalidUTF8(src []byte) (line, col int) {
	line, col = 1, 1
	for len(src) > 0 {
		r, size := utf8.DecodeRune(src)
		if r == utf8.RuneError && size <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col += size
		}
		src = src[size:]
	}
	return line, col
}
