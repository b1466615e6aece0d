// SPDX-License-Identifier: Apache-2.0

// Package ec2sim is the emulator's EC2 front: an http.Handler that speaks
// the EC2 Query API (form-encoded POST, XML answers, EC2's error envelope)
// over the simulated world, so that clients nobody here wrote — the Go
// SDK, the AWS CLI — run against it unchanged.
//
// It serves launches and their read-backs (RunInstances, DescribeInstances,
// DescribeInstanceStatus, TerminateInstances, CreateTags, DescribeTags,
// DescribeSpotInstanceRequests, DescribeInstanceAttribute, DescribeImages,
// DescribeVolumes), discovery
// from the world's catalog (DescribeInstanceTypes, DescribeRegions,
// DescribeAvailabilityZones, DescribeInstanceTypeOfferings,
// DescribeSpotPriceHistory, with Options.SpotHistory over a seeded past),
// placement groups, and a minimal network model (VPCs, subnets, security
// groups: every account's defaults computed, what clients make kept in
// the world's resource store) against which each launch's references are
// checked with EC2's errors. On the same endpoint,
// told apart by the X-Amz-Target header of the JSON protocol, it serves
// Service Quotas' GetServiceQuota and ListServiceQuotas for EC2's quotas.
// The world's rate limits meter each region's mutating and non-mutating
// EC2 actions; an empty bucket answers RequestLimitExceeded. A dry run
// (DryRun=true) is checked as the call would be and answered with the
// error it would meet, or DryRunOperation, changing nothing.
package ec2sim
