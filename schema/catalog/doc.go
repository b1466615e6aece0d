// SPDX-License-Identifier: Apache-2.0

// Package catalog holds the prices the planner places GPU nodes by: which
// instance types each cloud sells in which regions and zones, at what hourly
// price on each market, and what moving data between clouds costs. A
// snapshot is embedded so that planning works offline; live price loaders
// produce the same format to refresh it.
package catalog
