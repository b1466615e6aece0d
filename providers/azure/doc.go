// SPDX-License-Identifier: Apache-2.0

// Package azure is gpufleet's provider for Azure virtual machines, on the
// official armcompute client. It names each VM after its create token and
// creates it with If-None-Match: *, so a repeated create finds the VM the
// first one made instead of launching a second. A VM boots with its
// bootstrap file as custom data (cloud-init reads it), signs in by SSH key
// only, runs as the configured user-assigned identity, and has a premium
// OS disk and an accelerated NIC in its region's subnet. Quotas come from
// Compute's usages and zone offerings from Resource SKUs.
package azure
