// SPDX-License-Identifier: Apache-2.0

// Package pricesim is the emulator's price front: http.Handlers for the
// AWS Price List API (GetProducts, JSON 1.1), the Azure Retail Prices API
// and the GCP Cloud Billing Catalog, each paged as the real one is and
// generated from the simulated world's catalog, so that gpufleet's price
// loaders refresh against the emulator unchanged. (EC2's spot price
// history is served by the EC2 front.) Calls go through the world's
// faults, so throttling and server errors can be injected.
package pricesim
