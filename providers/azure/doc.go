// Package azure is gpufleet's provider for Azure virtual machines, on the
// official armcompute client. It names each VM after its create token and
// creates it with If-None-Match: *, so a repeated create finds the VM the
// first one made instead of launching a second. Quotas come from Compute's
// usages and zone offerings from Resource SKUs.
package azure
