// SPDX-License-Identifier: Apache-2.0

// Package examples carries the example fleet repository inside the gpufleet
// binary, so `gpufleet demo` works from any directory and in the container
// image.
package examples
