// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxRuleFile bounds the files that declare a world's rules.
const maxRuleFile = 1 << 20

// decodeFile reads the JSON file at path into v, refusing fields v does
// not have and anything after the first value, and naming the line a
// mistake is on.
func decodeFile(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRuleFile+1))
	if err != nil {
		return err
	}
	if len(data) > maxRuleFile {
		return fmt.Errorf("%s: larger than %d bytes", path, maxRuleFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s:%d: %w", path, lineAt(data, errorOffset(err, data, dec)), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s:%d: more than one JSON value", path, lineAt(data, dec.InputOffset()))
	}
	return nil
}

// errorOffset is where in its input a decode error is.
func errorOffset(err error, data []byte, dec *json.Decoder) int64 {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return syntax.Offset
	case errors.As(err, &typ):
		return typ.Offset
	}
	// An unknown field is reported once its object is read: the line is
	// that of the last time its name was written before.
	end := dec.InputOffset()
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if i := bytes.LastIndex(data[:min(end, int64(len(data)))], []byte(field)); i >= 0 {
			return int64(i)
		}
	}
	return end
}

// lineAt is the 1-based line of a byte offset.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}
