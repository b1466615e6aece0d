// SPDX-License-Identifier: Apache-2.0

package render

import (
	"encoding/json"
	"fmt"
	"io"
)

// JSON writes v as the indented JSON of gpufleet's -o json outputs, with
// no HTML escaping, so that "<" and "&" in messages stay as written.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON, %w", err)
	}
	return nil
}
