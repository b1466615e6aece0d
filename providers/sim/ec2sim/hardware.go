// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// hardware is what DescribeInstanceTypes tells of a type beyond the
// catalog's vCPUs, memory and GPUs: the published specifications of the
// type, as EC2's own DescribeInstanceTypes gives them (moto serves a copy
// of those answers; providers/aws's moto cross-check compares the two).
type hardware struct {
	// cpu is the processor's manufacturer as EC2 spells it (Intel, AMD),
	// clockGHz its sustained all-core speed.
	cpu      string
	clockGHz float64
	// network is EC2's networkPerformance wording for the instance, and
	// cardNetwork for each of its network cards when they have less;
	// interfaces the most network interfaces in all, cards the network
	// cards they spread over (EFA takes one interface a card).
	network, cardNetwork string
	interfaces, cards    int
	// ipv4PerInterface is the private addresses one interface may hold.
	ipv4PerInterface int
	// disks and diskGB are the local NVMe SSDs of the instance store.
	disks, diskGB int
	// ebs is the EBS performance at burst, ebsBaseline what is sustained;
	// equal on the larger sizes.
	ebs, ebsBaseline ebsPerformance
	// capacityBlocks says EC2 sells the type in Capacity Blocks for ML,
	// a usage class of its own.
	capacityBlocks bool
	// legacy marks the older Nitro types: legacy BIOS boot only, and no
	// Nitro Enclaves.
	legacy bool
	// graviton marks AWS's Arm processors: arm64, UEFI boot only, and
	// one thread a core.
	graviton bool
}

// ebsPerformance is EBS bandwidth in Mbps and IOPS.
type ebsPerformance struct{ mbps, iops int }

// hardwareOf holds the published specifications of the catalog's AWS
// types that EC2 still describes. A type it lacks (EC2 no longer
// describes f1 and p3) is described from its family, defaultHardware and
// the catalog.
var hardwareOf = map[string]hardware{
	"dl1.24xlarge": {cpu: "Intel", clockGHz: 3, network: "4x 100 Gigabit", cardNetwork: "100 Gigabit", interfaces: 60, cards: 4, ipv4PerInterface: 50, disks: 4, diskGB: 1000,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}, legacy: true},
	"dl2q.24xlarge": {cpu: "Intel", clockGHz: 2.5, network: "100 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}},
	"f2.12xlarge": {cpu: "AMD", clockGHz: 3.4, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 2, diskGB: 940,
		ebs: ebsPerformance{15000, 60000}, ebsBaseline: ebsPerformance{15000, 60000}},
	"f2.48xlarge": {cpu: "AMD", clockGHz: 3.4, network: "100 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 8, diskGB: 940,
		ebs: ebsPerformance{60000, 240000}, ebsBaseline: ebsPerformance{60000, 240000}},
	"f2.6xlarge": {cpu: "AMD", clockGHz: 3.4, network: "12.5 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 940,
		ebs: ebsPerformance{7500, 30000}, ebsBaseline: ebsPerformance{7500, 30000}},
	"g4ad.16xlarge": {cpu: "AMD", clockGHz: 3, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 2, diskGB: 1200,
		ebs: ebsPerformance{6300, 26667}, ebsBaseline: ebsPerformance{6300, 26667}, legacy: true},
	"g4ad.2xlarge": {cpu: "AMD", clockGHz: 3, network: "Up to 10 Gigabit", interfaces: 2, cards: 1, ipv4PerInterface: 4, disks: 1, diskGB: 300,
		ebs: ebsPerformance{3170, 13333}, ebsBaseline: ebsPerformance{800, 3400}, legacy: true},
	"g4ad.4xlarge": {cpu: "AMD", clockGHz: 3, network: "Up to 10 Gigabit", interfaces: 3, cards: 1, ipv4PerInterface: 10, disks: 1, diskGB: 600,
		ebs: ebsPerformance{3170, 13333}, ebsBaseline: ebsPerformance{1580, 6700}, legacy: true},
	"g4ad.8xlarge": {cpu: "AMD", clockGHz: 3, network: "15 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 1200,
		ebs: ebsPerformance{3170, 13333}, ebsBaseline: ebsPerformance{3170, 13333}, legacy: true},
	"g4ad.xlarge": {cpu: "AMD", clockGHz: 3, network: "Up to 10 Gigabit", interfaces: 2, cards: 1, ipv4PerInterface: 4, disks: 1, diskGB: 150,
		ebs: ebsPerformance{3170, 13333}, ebsBaseline: ebsPerformance{400, 1700}, legacy: true},
	"g4dn.12xlarge": {cpu: "Intel", clockGHz: 2.5, network: "50 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 900,
		ebs: ebsPerformance{9500, 40000}, ebsBaseline: ebsPerformance{9500, 40000}},
	"g4dn.16xlarge": {cpu: "Intel", clockGHz: 2.5, network: "50 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 900,
		ebs: ebsPerformance{9500, 40000}, ebsBaseline: ebsPerformance{9500, 40000}},
	"g4dn.2xlarge": {cpu: "Intel", clockGHz: 2.5, network: "Up to 25 Gigabit", interfaces: 3, cards: 1, ipv4PerInterface: 10, disks: 1, diskGB: 225,
		ebs: ebsPerformance{3500, 20000}, ebsBaseline: ebsPerformance{1150, 6000}},
	"g4dn.4xlarge": {cpu: "Intel", clockGHz: 2.5, network: "Up to 25 Gigabit", interfaces: 3, cards: 1, ipv4PerInterface: 10, disks: 1, diskGB: 225,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{4750, 20000}},
	"g4dn.8xlarge": {cpu: "Intel", clockGHz: 2.5, network: "50 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 900,
		ebs: ebsPerformance{9500, 40000}, ebsBaseline: ebsPerformance{9500, 40000}},
	"g4dn.metal": {cpu: "Intel", clockGHz: 2.5, network: "100 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 2, diskGB: 900,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}, legacy: true},
	"g4dn.xlarge": {cpu: "Intel", clockGHz: 2.5, network: "Up to 25 Gigabit", interfaces: 3, cards: 1, ipv4PerInterface: 10, disks: 1, diskGB: 125,
		ebs: ebsPerformance{3500, 20000}, ebsBaseline: ebsPerformance{950, 3000}},
	"g5.12xlarge": {cpu: "AMD", clockGHz: 3.3, network: "40 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 1, diskGB: 3800,
		ebs: ebsPerformance{16000, 65000}, ebsBaseline: ebsPerformance{16000, 65000}},
	"g5.16xlarge": {cpu: "AMD", clockGHz: 3.3, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 1900,
		ebs: ebsPerformance{16000, 65000}, ebsBaseline: ebsPerformance{16000, 65000}},
	"g5.24xlarge": {cpu: "AMD", clockGHz: 3.3, network: "50 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 1, diskGB: 3800,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}},
	"g5.2xlarge": {cpu: "AMD", clockGHz: 3.3, network: "Up to 10 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 450,
		ebs: ebsPerformance{3500, 15000}, ebsBaseline: ebsPerformance{850, 3500}},
	"g5.48xlarge": {cpu: "AMD", clockGHz: 3.3, network: "100 Gigabit", interfaces: 7, cards: 1, ipv4PerInterface: 50, disks: 2, diskGB: 3800,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}},
	"g5.4xlarge": {cpu: "AMD", clockGHz: 3.3, network: "Up to 25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 600,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{4750, 20000}},
	"g5.8xlarge": {cpu: "AMD", clockGHz: 3.3, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 900,
		ebs: ebsPerformance{16000, 65000}, ebsBaseline: ebsPerformance{16000, 65000}},
	"g5.xlarge": {cpu: "AMD", clockGHz: 3.3, network: "Up to 10 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 250,
		ebs: ebsPerformance{3500, 15000}, ebsBaseline: ebsPerformance{700, 3000}},
	"g5g.16xlarge": {cpu: "AWS", clockGHz: 2.5, network: "25 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}, graviton: true},
	"g5g.2xlarge": {cpu: "AWS", clockGHz: 2.5, network: "Up to 10 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{2375, 12000}, graviton: true},
	"g5g.4xlarge": {cpu: "AWS", clockGHz: 2.5, network: "Up to 10 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{4750, 20000}, graviton: true},
	"g5g.8xlarge": {cpu: "AWS", clockGHz: 2.5, network: "12 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30,
		ebs: ebsPerformance{9500, 40000}, ebsBaseline: ebsPerformance{9500, 40000}, graviton: true},
	"g5g.metal": {cpu: "AWS", clockGHz: 2.5, network: "25 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}, graviton: true},
	"g5g.xlarge": {cpu: "AWS", clockGHz: 2.5, network: "Up to 10 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{1188, 6000}, graviton: true},
	"g6.12xlarge": {cpu: "AMD", clockGHz: 3.4, network: "40 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 4, diskGB: 940,
		ebs: ebsPerformance{20000, 80000}, ebsBaseline: ebsPerformance{20000, 80000}},
	"g6.16xlarge": {cpu: "AMD", clockGHz: 3.4, network: "25 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 2, diskGB: 940,
		ebs: ebsPerformance{20000, 80000}, ebsBaseline: ebsPerformance{20000, 80000}},
	"g6.24xlarge": {cpu: "AMD", clockGHz: 3.4, network: "50 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 4, diskGB: 940,
		ebs: ebsPerformance{30000, 120000}, ebsBaseline: ebsPerformance{30000, 120000}},
	"g6.2xlarge": {cpu: "AMD", clockGHz: 3.4, network: "Up to 10 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 450,
		ebs: ebsPerformance{5000, 20000}, ebsBaseline: ebsPerformance{2000, 8000}},
	"g6.48xlarge": {cpu: "AMD", clockGHz: 3.4, network: "100 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 8, diskGB: 940,
		ebs: ebsPerformance{60000, 240000}, ebsBaseline: ebsPerformance{60000, 240000}},
	"g6.4xlarge": {cpu: "AMD", clockGHz: 3.4, network: "Up to 25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 600,
		ebs: ebsPerformance{8000, 32000}, ebsBaseline: ebsPerformance{8000, 32000}},
	"g6.8xlarge": {cpu: "AMD", clockGHz: 3.4, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 2, diskGB: 450,
		ebs: ebsPerformance{16000, 64000}, ebsBaseline: ebsPerformance{16000, 64000}},
	"g6.xlarge": {cpu: "AMD", clockGHz: 3.4, network: "Up to 10 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 250,
		ebs: ebsPerformance{5000, 20000}, ebsBaseline: ebsPerformance{1000, 4000}},
	"g6e.12xlarge": {cpu: "AMD", clockGHz: 3.4, network: "100 Gigabit", interfaces: 10, cards: 1, ipv4PerInterface: 30, disks: 2, diskGB: 1900,
		ebs: ebsPerformance{20000, 80000}, ebsBaseline: ebsPerformance{20000, 80000}},
	"g6e.16xlarge": {cpu: "AMD", clockGHz: 3.4, network: "35 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 2, diskGB: 950,
		ebs: ebsPerformance{20000, 80000}, ebsBaseline: ebsPerformance{20000, 80000}},
	"g6e.24xlarge": {cpu: "AMD", clockGHz: 3.4, network: "200 Gigabit", interfaces: 20, cards: 2, ipv4PerInterface: 50, disks: 2, diskGB: 1900,
		ebs: ebsPerformance{30000, 120000}, ebsBaseline: ebsPerformance{30000, 120000}},
	"g6e.2xlarge": {cpu: "AMD", clockGHz: 3.4, network: "Up to 20 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 450,
		ebs: ebsPerformance{5000, 20000}, ebsBaseline: ebsPerformance{2000, 8000}},
	"g6e.48xlarge": {cpu: "AMD", clockGHz: 3.4, network: "400 Gigabit", interfaces: 40, cards: 4, ipv4PerInterface: 50, disks: 4, diskGB: 1900,
		ebs: ebsPerformance{60000, 240000}, ebsBaseline: ebsPerformance{60000, 240000}},
	"g6e.4xlarge": {cpu: "AMD", clockGHz: 3.4, network: "20 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 600,
		ebs: ebsPerformance{8000, 32000}, ebsBaseline: ebsPerformance{8000, 32000}},
	"g6e.8xlarge": {cpu: "AMD", clockGHz: 3.4, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 2, diskGB: 450,
		ebs: ebsPerformance{16000, 64000}, ebsBaseline: ebsPerformance{16000, 64000}},
	"g6e.xlarge": {cpu: "AMD", clockGHz: 3.4, network: "Up to 20 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 250,
		ebs: ebsPerformance{5000, 20000}, ebsBaseline: ebsPerformance{1000, 4000}},
	"gr6.4xlarge": {cpu: "AMD", clockGHz: 3.4, network: "Up to 25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 1, diskGB: 600,
		ebs: ebsPerformance{8000, 32000}, ebsBaseline: ebsPerformance{8000, 32000}},
	"gr6.8xlarge": {cpu: "AMD", clockGHz: 3.4, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30, disks: 2, diskGB: 450,
		ebs: ebsPerformance{16000, 64000}, ebsBaseline: ebsPerformance{16000, 64000}},
	"inf1.24xlarge": {cpu: "Intel", clockGHz: 2.5, network: "100 Gigabit", interfaces: 11, cards: 1, ipv4PerInterface: 30,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}},
	"inf1.2xlarge": {cpu: "Intel", clockGHz: 2.5, network: "Up to 25 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 10,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{1190, 6000}},
	"inf1.6xlarge": {cpu: "Intel", clockGHz: 2.5, network: "25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{4750, 20000}},
	"inf1.xlarge": {cpu: "Intel", clockGHz: 2.5, network: "Up to 25 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 10,
		ebs: ebsPerformance{4750, 20000}, ebsBaseline: ebsPerformance{1190, 4000}},
	"inf2.24xlarge": {cpu: "AMD", clockGHz: 3.6, network: "50 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50,
		ebs: ebsPerformance{30000, 120000}, ebsBaseline: ebsPerformance{30000, 120000}},
	"inf2.48xlarge": {cpu: "AMD", clockGHz: 3.6, network: "100 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50,
		ebs: ebsPerformance{60000, 240000}, ebsBaseline: ebsPerformance{60000, 240000}},
	"inf2.8xlarge": {cpu: "AMD", clockGHz: 3.6, network: "Up to 25 Gigabit", interfaces: 8, cards: 1, ipv4PerInterface: 30,
		ebs: ebsPerformance{10000, 40000}, ebsBaseline: ebsPerformance{10000, 40000}},
	"inf2.xlarge": {cpu: "AMD", clockGHz: 3.6, network: "Up to 15 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15,
		ebs: ebsPerformance{10000, 40000}, ebsBaseline: ebsPerformance{1250, 6000}},
	"p3dn.24xlarge": {cpu: "Intel", clockGHz: 2.5, network: "100 Gigabit", interfaces: 15, cards: 1, ipv4PerInterface: 50, disks: 2, diskGB: 900,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}},
	"p4d.24xlarge": {cpu: "Intel", clockGHz: 3.0, network: "4x 100 Gigabit", cardNetwork: "100 Gigabit", interfaces: 60, cards: 4, ipv4PerInterface: 50, disks: 8, diskGB: 1000,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}, capacityBlocks: true, legacy: true},
	"p4de.24xlarge": {cpu: "Intel", clockGHz: 3.0, network: "4x 100 Gigabit", cardNetwork: "100 Gigabit", interfaces: 60, cards: 4, ipv4PerInterface: 50, disks: 8, diskGB: 1000,
		ebs: ebsPerformance{19000, 80000}, ebsBaseline: ebsPerformance{19000, 80000}, capacityBlocks: true, legacy: true},
	"p5.48xlarge": {cpu: "AMD", clockGHz: 3.6, network: "3200 Gigabit", cardNetwork: "100 Gigabit", interfaces: 64, cards: 32, ipv4PerInterface: 50, disks: 8, diskGB: 3800,
		ebs: ebsPerformance{80000, 260000}, ebsBaseline: ebsPerformance{80000, 260000}, capacityBlocks: true},
	"p5e.48xlarge": {cpu: "AMD", clockGHz: 3.6, network: "3200 Gigabit", cardNetwork: "100 Gigabit", interfaces: 64, cards: 32, ipv4PerInterface: 50, disks: 8, diskGB: 3800,
		ebs: ebsPerformance{80000, 260000}, ebsBaseline: ebsPerformance{80000, 260000}, capacityBlocks: true},
	"p5en.48xlarge": {cpu: "Intel", clockGHz: 2.4, network: "3200 Gigabit", cardNetwork: "200 Gigabit", interfaces: 64, cards: 16, ipv4PerInterface: 50, disks: 8, diskGB: 3800,
		ebs: ebsPerformance{100000, 400000}, ebsBaseline: ebsPerformance{100000, 400000}, capacityBlocks: true},
	"trn1.2xlarge": {cpu: "Intel", clockGHz: 3.5, network: "Up to 12.5 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15, disks: 1, diskGB: 474,
		ebs: ebsPerformance{20000, 65000}, ebsBaseline: ebsPerformance{5000, 16250}, legacy: true},
	"trn1.32xlarge": {cpu: "Intel", clockGHz: 3.5, network: "8x 100 Gigabit", cardNetwork: "100 Gigabit", interfaces: 40, cards: 8, ipv4PerInterface: 50, disks: 4, diskGB: 1900,
		ebs: ebsPerformance{80000, 260000}, ebsBaseline: ebsPerformance{80000, 260000}, capacityBlocks: true, legacy: true},
	"trn1n.32xlarge": {cpu: "Intel", clockGHz: 3.5, network: "16x 100 Gigabit", cardNetwork: "100 Gigabit", interfaces: 80, cards: 16, ipv4PerInterface: 50, disks: 4, diskGB: 1900,
		ebs: ebsPerformance{80000, 260000}, ebsBaseline: ebsPerformance{80000, 260000}, legacy: true},
}

// family is what every size of an instance family shares: its processor,
// whether it is an older Nitro type, whether Capacity Blocks sell it.
type family struct {
	cpu string
	// clockGHz is 0 where the published speed is not known; EC2 leaves
	// it out then.
	clockGHz       float64
	capacityBlocks bool
	legacy         bool
}

// families holds the GPU and accelerator families of the clouds' price
// data, so a size hardwareOf lacks is still described by its processor;
// its network, storage and EBS take defaultHardware's.
var families = map[string]family{
	"dl1":   {cpu: "Intel", clockGHz: 3.0, legacy: true},
	"dl2q":  {cpu: "Intel", clockGHz: 2.5},
	"f1":    {cpu: "Intel", clockGHz: 2.3, legacy: true},
	"f2":    {cpu: "AMD", clockGHz: 3.4},
	"g4ad":  {cpu: "AMD", clockGHz: 3.0, legacy: true},
	"g4dn":  {cpu: "Intel", clockGHz: 2.5},
	"g5":    {cpu: "AMD", clockGHz: 3.3},
	"g5g":   {cpu: "AWS", clockGHz: 2.5},
	"g6":    {cpu: "AMD", clockGHz: 3.4},
	"g6e":   {cpu: "AMD", clockGHz: 3.4},
	"gr6":   {cpu: "AMD", clockGHz: 3.4},
	"inf1":  {cpu: "Intel", clockGHz: 2.5},
	"inf2":  {cpu: "AMD", clockGHz: 3.6},
	"p3":    {cpu: "Intel", clockGHz: 2.3, legacy: true},
	"p3dn":  {cpu: "Intel", clockGHz: 2.5, legacy: true},
	"p4d":   {cpu: "Intel", clockGHz: 3.0, capacityBlocks: true, legacy: true},
	"p4de":  {cpu: "Intel", clockGHz: 3.0, capacityBlocks: true, legacy: true},
	"p5":    {cpu: "AMD", clockGHz: 3.6, capacityBlocks: true},
	"p5e":   {cpu: "AMD", clockGHz: 3.6, capacityBlocks: true},
	"p5en":  {cpu: "Intel", clockGHz: 2.4, capacityBlocks: true},
	"trn1":  {cpu: "Intel", clockGHz: 3.5, capacityBlocks: true},
	"trn1n": {cpu: "Intel", clockGHz: 3.5},
	"trn2":  {cpu: "Intel", clockGHz: 3.5, capacityBlocks: true},
}

// familyOf is the family of a type: the part of its name before the dot.
func familyOf(instanceType string) (family, bool) {
	name, _, _ := strings.Cut(instanceType, ".")
	f, ok := families[name]
	return f, ok
}

// defaultHardware describes a type the table lacks: a Nitro type of one
// network card with no instance store.
var defaultHardware = hardware{cpu: "Intel", network: "Up to 25 Gigabit", interfaces: 4, cards: 1, ipv4PerInterface: 15,
	ebs: ebsPerformance{10000, 40000}, ebsBaseline: ebsPerformance{10000, 40000}}

// hardwareFor is a type's hardware, never fewer network cards than the
// EFAs the catalog lets it take: the emulator accepts that many at launch.
func hardwareFor(instanceType string) hardware {
	h, ok := hardwareOf[instanceType]
	if !ok {
		h = defaultHardware
		if f, ok := familyOf(instanceType); ok {
			h.cpu, h.clockGHz, h.capacityBlocks, h.legacy = f.cpu, f.clockGHz, f.capacityBlocks, f.legacy
		}
	}
	if efa := catalog.EFAInterfaces(instanceType); h.cards < efa {
		h.cards = efa
		h.interfaces = max(h.interfaces, efa)
	}
	return h
}
