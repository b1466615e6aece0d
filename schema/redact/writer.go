// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"io"
	"sync"
)

// Writer masks a set's values in what goes through it to another writer.
// A value split over two writes is masked too: the end of a write that
// could be the start of one is held back until the next write shows
// whether it is, or until Flush.
type Writer struct {
	set  *Set
	next io.Writer
	mu   sync.Mutex
	held []byte
}

// Writer is a writer that masks the set's values on their way to next.
func (s *Set) Writer(next io.Writer) *Writer { return &Writer{set: s, next: next} }

// Unwrap is the writer masked output goes to, for callers that ask what
// it is (a terminal, say).
func (w *Writer) Unwrap() io.Writer { return w.next }

// Write masks p and writes what is certain not to start a secret; it
// reports p as written whole unless the next writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := append(w.held, p...)
	w.held = nil
	if w.set.Empty() {
		_, err := w.next.Write(buf)
		return len(p), err
	}
	masked := []byte(w.set.String(string(buf)))
	keep := w.set.partialSuffix(masked)
	out := masked[:len(masked)-keep]
	w.held = append([]byte(nil), masked[len(masked)-keep:]...)
	if len(out) == 0 {
		return len(p), nil
	}
	_, err := w.next.Write(out)
	return len(p), err
}

// Flush writes what was held back.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	_, err := w.next.Write(w.held)
	w.held = nil
	return err
}
