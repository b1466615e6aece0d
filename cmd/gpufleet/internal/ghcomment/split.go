// SPDX-License-Identifier: Apache-2.0

package ghcomment

import "github.com/gpufleet/gpufleet/cmd/gpufleet/internal/plancomment"

// MaxLength is GitHub's limit on a comment body, in characters.
const MaxLength = 65536

// Split cuts a Markdown body into parts of at most limit characters that
// each render on their own; see plancomment.Split.
func Split(body string, limit int) []string {
	return plancomment.Split(body, limit)
}
