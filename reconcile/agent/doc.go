// SPDX-License-Identifier: Apache-2.0

// Package agent runs gpufleet unattended: it reconciles each configured
// fleet repository on a jittered schedule and at once when a signed webhook
// says the repository changed, never two runs of one repository at a time;
// refreshes the price catalog the runs plan with on a schedule of its own,
// keeping the last good one when a refresh fails; and serves the health,
// readiness and Prometheus endpoints operators need.
package agent
