// SPDX-License-Identifier: Apache-2.0

// Package plancomment holds what the pull-request commenters share, whatever
// the forge: a plan too long for one comment is split into parts that each
// render on their own, and each part carries a hidden header that finds it
// again on the next run.
package plancomment
