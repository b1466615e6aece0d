// SPDX-License-Identifier: Apache-2.0

// Package clouds builds the providers a repository's gpufleet.cue enables,
// on the real clouds through each SDK's standard credential chain, or on
// the emulator when its endpoints are given.
package clouds
