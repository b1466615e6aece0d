// SPDX-License-Identifier: Apache-2.0

// Package sim is an emulator of the clouds gpufleet drives: one simulated
// world of regions, zones, capacity, quotas and instances, with scripted
// and random faults and each cloud's request rate limits as token buckets.
// Its fronts (ec2sim, armsim, gcesim, lambdasim, ocisim) speak each
// cloud's own wire protocol over loopback, so the providers run the
// official SDK clients (for Lambda Cloud, which has none, its REST API)
// unchanged against it, in tests and in the demo.
package sim
