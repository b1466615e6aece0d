package schema

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
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
	src  []byte
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
		src, err := readFile(root, name)
		if err != nil {
			errs.add(Position{File: name}, "", "%v", err)
			continue
		}
		if !utf8.Valid(src) {
			line, col := firstInvalidUTF8(src)
			errs.add(Position{File: name, Line: line, Column: col}, "", "file is not valid UTF-8")
			continue
		}
		files = append(files, sourceFile{name: name, src: src})
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

func readFile(root *os.Root, name string) ([]byte, error) {
	// Stat before Open: opening a named pipe would block until a writer
	// came along.
	info, err := root.Stat(name)
	if err != nil {
		return nil, openError(err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, openError(err)
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, unwrapPathError(err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	if info.Size() > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, over the limit of %d bytes", info.Size(), MaxFileSize)
	}
	// The size can change between Stat and Read; the limit holds regardless.
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, unwrapPathError(err)
	}
	if len(src) > MaxFileSize {
		return nil, fmt.Errorf("file is over the limit of %d bytes", MaxFileSize)
	}
	return src, nil
}

func openError(err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return errors.New("refused: the file is a symlink that leads outside the repository")
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
