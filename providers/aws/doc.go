// SPDX-License-Identifier: Apache-2.0

// Package aws is gpufleet's provider for Amazon EC2, on aws-sdk-go-v2 with
// one client per configured region. Creates are idempotent through
// RunInstances' ClientToken, lists filter on gpufleet's ownership tags, and
// offers take the catalog's prices with the live spot prices EC2 reports.
package aws
