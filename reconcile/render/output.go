// SPDX-License-Identifier: Apache-2.0

package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// FormatVersion is the version of every -o json output's format. It goes
// up when a field changes meaning or goes away; new fields keep it.
const FormatVersion = 1

// Output writes v as a versioned -o json output: an object that opens with
// "formatVersion" and "kind", then v's own fields. v must encode as a JSON
// object.
func Output(w io.Writer, kind string, v any) error {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return fmt.Errorf("writing JSON, %w", err)
	}
	body := bytes.TrimSpace(enc.Bytes())
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("writing JSON: a %s output must be an object", kind)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"formatVersion":%d,"kind":%q`, FormatVersion, kind)
	if string(body) != "{}" {
		b.WriteByte(',')
	}
	b.Write(body[1:])
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return fmt.Errorf("writing JSON, %w", err)
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}
