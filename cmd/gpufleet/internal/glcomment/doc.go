// SPDX-License-Identifier: Apache-2.0

// Package glcomment keeps one sticky plan note on a GitLab merge request:
// found again by a hidden marker and updated in place, split into parts
// below GitLab's note limit as ghcomment splits a GitHub comment, through
// GitLab's Go client with its retries tuned for CI.
package glcomment
