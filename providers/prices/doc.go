// SPDX-License-Identifier: Apache-2.0

// Package prices refreshes the catalog from each cloud's own price source:
// the AWS Price List and EC2 spot price history, the Azure Retail Prices
// API and the GCP Cloud Billing Catalog. Each loader returns a catalog of
// one cloud in the format the planner reads; Merge puts it over an
// existing catalog and Freshest picks the catalog a plan should use.
//
// Real price lists have rows the planner must not trust. A loader drops
// them, each with a named reason (the Reason constants) reported through
// Options.OnDrop: empty prices, placeholders (zero, under a cent) and
// implausible ones (over $100 per GPU-hour), duplicates (the higher price
// stays, whatever the row order), zones the catalog does not list. A spot
// price above the on-demand one is kept: the planner compares markets
// itself, and a workload that asks for spot wants spot. AWS prices spot
// per zone; where every zone of a region has the same price the loader
// writes one regional offer, as the snapshot does.
package prices
