// SPDX-License-Identifier: Apache-2.0

// Package oci is gpufleet's Oracle Cloud Infrastructure provider. It
// launches, lists and terminates GPU instances through OCI's official Go
// SDK, one compute and one identity client per configured region, in the
// one compartment configured, and reads which shapes each availability
// domain offers. OCI's errors are classified into providers.Error; calls
// are retried on 429, 5xx and lost connections with a bounded backoff that
// honours Retry-After, never on a stock-out ("Out of host capacity").
//
// What it guarantees:
//
//   - Ownership: a node carries gpufleet's ownership tags as freeform tags
//     (providers.OwnershipTags), beside the workload's labels. List returns
//     only instances that carry them, and Delete reads an instance first
//     and refuses one without them, of another fleet or token, or in
//     another compartment.
//   - Idempotency: a launch carries an opc-retry-token derived from the
//     create's token, which OCI honours for 24 hours, answering a repeat
//     with the first instance. Before launching, Create also lists the
//     availability domain's instances of the node's display name
//     (providers.InstanceName of the token) and returns the one whose
//     token tag is the create's, so a repeat later than 24 hours, or from
//     another process after a crash, still returns the first instance and
//     launches no second one. A list that fails launches nothing. Beyond
//     the retry token's day this holds for the one writer the
//     repository's lock admits per account. A token whose instance has
//     ended is spent (providers.KindTokenSpent): only a new one launches.
//   - Credentials: the SDK's own, from its standard chain (~/.oci/config's
//     DEFAULT profile or the file OCI_CONFIG_FILE names, else the TF_VAR_*
//     variables), never from the repository. They are never logged or put
//     in an error; a refusal says where they are read from. The emulator
//     gets throwaway ones (EmulatorConfigProvider).
//
// Zones are the availability domains' tenancy-independent part, as the
// catalog names them (PHX-AD-1 for the AD Uocm:PHX-AD-1); the provider
// maps one to the other through ListAvailabilityDomains, once per region.
// gpufleet launches GPU shapes on demand only. A node boots the region's
// configured image in the region's configured subnet, with its bootstrap
// as user_data and the configured SSH key in ssh_authorized_keys. Service
// limits are not read: a launch over one is refused with LimitExceeded,
// which is a quota error. OCI has no dry run, so Preflight checks what it
// can without launching: the region's configuration, the zone, and that
// its availability domain lists the shape.
package oci
