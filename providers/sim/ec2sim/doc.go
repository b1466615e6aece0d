// Package ec2sim is the emulator's EC2 front: an http.Handler that speaks the
// EC2 Query API (form-encoded POST, XML answers, EC2's error envelope) over
// the simulated world, so that aws-sdk-go-v2's ec2 client runs against it
// unchanged. It serves the few actions gpufleet uses, and those that read
// back what a launch gave its nodes: RunInstances (with user data, an IAM
// instance profile, metadata options and block-device mappings over the
// image's root volume), DescribeInstances, DescribeInstanceAttribute,
// DescribeImages, DescribeVolumes, TerminateInstances, CreateTags,
// DescribeSpotPriceHistory and DescribeInstanceTypeOfferings; placement
// groups (CreatePlacementGroup, DescribePlacementGroups,
// DeletePlacementGroup, and RunInstances into one), which the front keeps
// in memory, as the world holds instances only; and, on the
// same endpoint, told apart by the X-Amz-Target header of the JSON
// protocol, Service Quotas' GetServiceQuota and ListServiceQuotas for EC2's
// quotas. The world's rate limits meter each region's mutating and
// non-mutating EC2 actions; an empty bucket answers RequestLimitExceeded.
package ec2sim
