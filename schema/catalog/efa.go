// SPDX-License-Identifier: Apache-2.0

package catalog

// efaInterfaces is, per AWS instance type of the catalog that has them,
// the most Elastic Fabric Adapters it takes (EC2's
// NetworkInfo.EfaInfo.MaximumEfaInterfaces): one per network card that
// supports EFA.
var efaInterfaces = map[string]int{
	"p5.48xlarge":    32,
	"p5en.48xlarge":  16,
	"p5e.48xlarge":   32,
	"p3dn.24xlarge":  1,
	"trn1.32xlarge":  8,
	"trn1n.32xlarge": 16,
	"dl1.24xlarge":   4,
	"p4d.24xlarge":   4,
	"p4de.24xlarge":  4,
	"g6e.48xlarge":   4,
	"g5.8xlarge":     1, "g5.12xlarge": 1, "g5.16xlarge": 1, "g5.24xlarge": 1, "g5.48xlarge": 1,
	"g6.8xlarge": 1, "g6.16xlarge": 1, "g6.48xlarge": 1, "gr6.8xlarge": 1,
	"g6e.8xlarge": 1, "g6e.12xlarge": 1, "g6e.16xlarge": 1, "g6e.24xlarge": 2,
	"g4dn.8xlarge": 1, "g4dn.12xlarge": 1, "g4dn.16xlarge": 1, "g4dn.metal": 1,
	"inf2.48xlarge": 1,
	"g6.12xlarge":   1,
	"g6.24xlarge":   1,
}

// EFAInterfaces is how many Elastic Fabric Adapters an AWS instance type
// takes, 0 for a type without EFA.
func EFAInterfaces(instanceType string) int { return efaInterfaces[instanceType] }
