// SPDX-License-Identifier: Apache-2.0

// Package ghcomment keeps one sticky plan comment on a GitHub pull request:
// found again by a hidden marker and updated in place, split into parts
// below GitHub's size limit with code blocks and collapsible sections closed
// and reopened across parts.
package ghcomment
