// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

type sizeMiBXML struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type processorInfoXML struct {
	SupportedArchitectures []string `xml:"supportedArchitectures>item"`
	SustainedClockSpeed    float64  `xml:"sustainedClockSpeedInGhz,omitempty"`
	Manufacturer           string   `xml:"manufacturer"`
}

type vcpuInfoXML struct {
	DefaultVCpus          int   `xml:"defaultVCpus"`
	DefaultCores          int   `xml:"defaultCores"`
	DefaultThreadsPerCore int   `xml:"defaultThreadsPerCore"`
	ValidThreadsPerCore   []int `xml:"validThreadsPerCore>item"`
}

type diskInfoXML struct {
	SizeInGB int    `xml:"sizeInGB"`
	Count    int    `xml:"count"`
	Type     string `xml:"type"`
}

type instanceStorageInfoXML struct {
	TotalSizeInGB     int           `xml:"totalSizeInGB"`
	Disks             []diskInfoXML `xml:"disks>item"`
	NvmeSupport       string        `xml:"nvmeSupport"`
	EncryptionSupport string        `xml:"encryptionSupport"`
}

type ebsOptimizedInfoXML struct {
	BaselineBandwidthInMbps  int     `xml:"baselineBandwidthInMbps"`
	BaselineThroughputInMBps float64 `xml:"baselineThroughputInMBps"`
	BaselineIops             int     `xml:"baselineIops"`
	MaximumBandwidthInMbps   int     `xml:"maximumBandwidthInMbps"`
	MaximumThroughputInMBps  float64 `xml:"maximumThroughputInMBps"`
	MaximumIops              int     `xml:"maximumIops"`
}

type ebsInfoXML struct {
	EbsOptimizedSupport string              `xml:"ebsOptimizedSupport"`
	EncryptionSupport   string              `xml:"encryptionSupport"`
	EbsOptimizedInfo    ebsOptimizedInfoXML `xml:"ebsOptimizedInfo"`
	NvmeSupport         string              `xml:"nvmeSupport"`
}

type networkCardInfoXML struct {
	NetworkCardIndex         int    `xml:"networkCardIndex"`
	NetworkPerformance       string `xml:"networkPerformance"`
	MaximumNetworkInterfaces int    `xml:"maximumNetworkInterfaces"`
}

type efaInfoXML struct {
	MaximumEfaInterfaces int `xml:"maximumEfaInterfaces"`
}

type networkInfoXML struct {
	NetworkPerformance           string               `xml:"networkPerformance"`
	MaximumNetworkInterfaces     int                  `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards          int                  `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex      int                  `xml:"defaultNetworkCardIndex"`
	NetworkCards                 []networkCardInfoXML `xml:"networkCards>item"`
	Ipv4AddressesPerInterface    int                  `xml:"ipv4AddressesPerInterface"`
	Ipv6AddressesPerInterface    int                  `xml:"ipv6AddressesPerInterface"`
	Ipv6Supported                bool                 `xml:"ipv6Supported"`
	EnaSupport                   string               `xml:"enaSupport"`
	EfaSupported                 bool                 `xml:"efaSupported"`
	EfaInfo                      *efaInfoXML          `xml:"efaInfo,omitempty"`
	EncryptionInTransitSupported bool                 `xml:"encryptionInTransitSupported"`
}

type gpuDeviceXML struct {
	Name         string     `xml:"name"`
	Manufacturer string     `xml:"manufacturer"`
	Count        int        `xml:"count"`
	MemoryInfo   sizeMiBXML `xml:"memoryInfo"`
}

type gpuInfoXML struct {
	Gpus                []gpuDeviceXML `xml:"gpus>item"`
	TotalGpuMemoryInMiB int64          `xml:"totalGpuMemoryInMiB"`
}

type neuronDeviceXML struct {
	Name       string      `xml:"name"`
	Count      int         `xml:"count"`
	MemoryInfo *sizeMiBXML `xml:"memoryInfo,omitempty"`
}

type neuronInfoXML struct {
	NeuronDevices                []neuronDeviceXML `xml:"neuronDevices>item"`
	TotalNeuronDeviceMemoryInMiB int64             `xml:"totalNeuronDeviceMemoryInMiB,omitempty"`
}

type fpgaInfoXML struct {
	Fpgas                []gpuDeviceXML `xml:"fpgas>item"`
	TotalFpgaMemoryInMiB int64          `xml:"totalFpgaMemoryInMiB,omitempty"`
}

type placementGroupInfoXML struct {
	SupportedStrategies []string `xml:"supportedStrategies>item"`
}

type instanceTypeXML struct {
	InstanceType                  string                  `xml:"instanceType"`
	CurrentGeneration             bool                    `xml:"currentGeneration"`
	FreeTierEligible              bool                    `xml:"freeTierEligible"`
	SupportedUsageClasses         []string                `xml:"supportedUsageClasses>item"`
	SupportedRootDeviceTypes      []string                `xml:"supportedRootDeviceTypes>item"`
	SupportedVirtualizationTypes  []string                `xml:"supportedVirtualizationTypes>item"`
	BareMetal                     bool                    `xml:"bareMetal"`
	Hypervisor                    string                  `xml:"hypervisor"`
	ProcessorInfo                 processorInfoXML        `xml:"processorInfo"`
	VCpuInfo                      vcpuInfoXML             `xml:"vCpuInfo"`
	MemoryInfo                    sizeMiBXML              `xml:"memoryInfo"`
	InstanceStorageSupported      bool                    `xml:"instanceStorageSupported"`
	InstanceStorageInfo           *instanceStorageInfoXML `xml:"instanceStorageInfo,omitempty"`
	EbsInfo                       ebsInfoXML              `xml:"ebsInfo"`
	NetworkInfo                   networkInfoXML          `xml:"networkInfo"`
	GpuInfo                       *gpuInfoXML             `xml:"gpuInfo,omitempty"`
	FpgaInfo                      *fpgaInfoXML            `xml:"fpgaInfo,omitempty"`
	NeuronInfo                    *neuronInfoXML          `xml:"neuronInfo,omitempty"`
	PlacementGroupInfo            placementGroupInfoXML   `xml:"placementGroupInfo"`
	HibernationSupported          bool                    `xml:"hibernationSupported"`
	BurstablePerformanceSupported bool                    `xml:"burstablePerformanceSupported"`
	DedicatedHostsSupported       bool                    `xml:"dedicatedHostsSupported"`
	AutoRecoverySupported         bool                    `xml:"autoRecoverySupported"`
	SupportedBootModes            []string                `xml:"supportedBootModes>item"`
	NitroEnclavesSupport          string                  `xml:"nitroEnclavesSupport"`
	NitroTpmSupport               string                  `xml:"nitroTpmSupport"`
	SupportedInRegion             bool                    `xml:"supportedInRegion"`
}

type describeInstanceTypesResponse struct {
	XMLName       xml.Name          `xml:"DescribeInstanceTypesResponse"`
	Xmlns         string            `xml:"xmlns,attr"`
	RequestID     string            `xml:"requestId"`
	InstanceTypes []instanceTypeXML `xml:"instanceTypeSet>item"`
	NextToken     string            `xml:"nextToken,omitempty"`
}

// maxTypeResults is the largest page DescribeInstanceTypes serves, and
// the page it serves when asked for none.
const maxTypeResults = 100

// describedType is a type with what the region sells it as.
type describedType struct {
	typ      sim.InstanceType
	markets  []catalog.Market
	inRegion bool
}

// regionTypes lists the types the region's zones offer, by name, with the
// markets each is sold on there; with others, also the types the cloud has
// only elsewhere, as unsupported in the region.
func (s *Server) regionTypes(region string, others bool) []describedType {
	byName := map[string]*describedType{}
	if r, ok := s.world.Region(cloud, region); ok {
		for _, zone := range r.Zones {
			for _, market := range []catalog.Market{catalog.OnDemand, catalog.Spot} {
				for _, t := range s.world.Offered(cloud, zone, market) {
					d := byName[t.Name]
					if d == nil {
						d = &describedType{typ: t, inRegion: true}
						byName[t.Name] = d
					}
					if !slices.Contains(d.markets, market) {
						d.markets = append(d.markets, market)
					}
				}
			}
		}
	}
	if others {
		for _, t := range s.world.Types(cloud) {
			if byName[t.Name] == nil {
				byName[t.Name] = &describedType{typ: t}
			}
		}
	}
	out := make([]describedType, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		d := *byName[name]
		// EC2 lists on-demand before spot.
		slices.SortFunc(d.markets, func(a, b catalog.Market) int { return strings.Compare(string(a), string(b)) })
		out = append(out, d)
	}
	return out
}

// renderType draws a type as DescribeInstanceTypes does: its size from the
// catalog, its hardware from the table of published specifications.
func renderType(d describedType) instanceTypeXML {
	t := d.typ
	h := hardwareFor(t.Name)
	x := instanceTypeXML{
		InstanceType:                 t.Name,
		CurrentGeneration:            true,
		SupportedRootDeviceTypes:     []string{"ebs"},
		SupportedVirtualizationTypes: []string{"hvm"},
		Hypervisor:                   "nitro",
		ProcessorInfo:                processorInfoXML{SupportedArchitectures: []string{"x86_64"}, SustainedClockSpeed: h.clockGHz, Manufacturer: h.cpu},
		VCpuInfo:                     vcpuInfoXML{DefaultVCpus: t.VCPUs, DefaultCores: max(t.VCPUs/2, 1), DefaultThreadsPerCore: 2, ValidThreadsPerCore: []int{1, 2}},
		MemoryInfo:                   sizeMiBXML{SizeInMiB: int64(t.MemoryGiB * 1024)},
		EbsInfo: ebsInfoXML{
			EbsOptimizedSupport: "default",
			EncryptionSupport:   "supported",
			NvmeSupport:         "required",
			EbsOptimizedInfo:    ebsOptimized(h),
		},
		NetworkInfo:          renderNetworkInfo(t.Name, h),
		PlacementGroupInfo:   placementGroupInfoXML{SupportedStrategies: []string{"cluster", "partition", "spread"}},
		SupportedBootModes:   []string{"legacy-bios", "uefi"},
		NitroEnclavesSupport: "supported",
		NitroTpmSupport:      "supported",
		SupportedInRegion:    d.inRegion,
	}
	if h.legacy {
		x.SupportedBootModes, x.NitroEnclavesSupport = []string{"legacy-bios"}, "unsupported"
	}
	if t.VCPUs < 2 || h.graviton {
		x.VCpuInfo.DefaultCores, x.VCpuInfo.DefaultThreadsPerCore, x.VCpuInfo.ValidThreadsPerCore = max(t.VCPUs, 1), 1, []int{1}
	}
	if h.graviton {
		x.ProcessorInfo.SupportedArchitectures, x.SupportedBootModes = []string{"arm64"}, []string{"uefi"}
	}
	if h.capacityBlocks && d.inRegion {
		x.SupportedUsageClasses = append(x.SupportedUsageClasses, "capacity-block")
	}
	for _, m := range d.markets {
		x.SupportedUsageClasses = append(x.SupportedUsageClasses, string(m))
	}
	if h.disks > 0 {
		x.InstanceStorageSupported = true
		x.InstanceStorageInfo = &instanceStorageInfoXML{
			TotalSizeInGB:     h.disks * h.diskGB,
			Disks:             []diskInfoXML{{SizeInGB: h.diskGB, Count: h.disks, Type: "ssd"}},
			NvmeSupport:       "required",
			EncryptionSupport: "required",
		}
	}
	if t.GPUs > 0 {
		renderAccelerators(&x, t)
	}
	return x
}

// renderAccelerators files a type's accelerators where EC2 does: GPUs
// under GpuInfo, AWS's Inferentia and Trainium under NeuronInfo, FPGAs
// under FpgaInfo, each with the memory of one device where it is known.
func renderAccelerators(x *instanceTypeXML, t sim.InstanceType) {
	g := t.GPU
	total := int64(g.MemoryMiB) * int64(t.GPUs)
	switch g.Kind {
	case sim.KindNeuron:
		dev := neuronDeviceXML{Name: g.Chip, Count: t.GPUs}
		if g.MemoryMiB > 0 {
			dev.MemoryInfo = &sizeMiBXML{SizeInMiB: int64(g.MemoryMiB)}
		}
		x.NeuronInfo = &neuronInfoXML{NeuronDevices: []neuronDeviceXML{dev}, TotalNeuronDeviceMemoryInMiB: total}
	case sim.KindFPGA:
		dev := gpuDeviceXML{Name: g.Chip, Manufacturer: g.Manufacturer, Count: t.GPUs, MemoryInfo: sizeMiBXML{SizeInMiB: int64(g.MemoryMiB)}}
		x.FpgaInfo = &fpgaInfoXML{Fpgas: []gpuDeviceXML{dev}, TotalFpgaMemoryInMiB: total}
	default:
		dev := gpuDeviceXML{Name: g.Chip, Manufacturer: g.Manufacturer, Count: t.GPUs, MemoryInfo: sizeMiBXML{SizeInMiB: int64(g.MemoryMiB)}}
		x.GpuInfo = &gpuInfoXML{Gpus: []gpuDeviceXML{dev}, TotalGpuMemoryInMiB: total}
	}
}

// ebsOptimized is a type's EBS performance; throughput is bandwidth in
// bytes.
func ebsOptimized(h hardware) ebsOptimizedInfoXML {
	return ebsOptimizedInfoXML{
		BaselineBandwidthInMbps:  h.ebsBaseline.mbps,
		BaselineThroughputInMBps: float64(h.ebsBaseline.mbps) / 8,
		BaselineIops:             h.ebsBaseline.iops,
		MaximumBandwidthInMbps:   h.ebs.mbps,
		MaximumThroughputInMBps:  float64(h.ebs.mbps) / 8,
		MaximumIops:              h.ebs.iops,
	}
}

// renderNetworkInfo spreads the type's interfaces evenly over its cards;
// EFA is what the catalog says the type takes, which is what the
// emulator's RunInstances accepts.
func renderNetworkInfo(instanceType string, h hardware) networkInfoXML {
	n := networkInfoXML{
		NetworkPerformance:           h.network,
		MaximumNetworkInterfaces:     h.interfaces,
		MaximumNetworkCards:          h.cards,
		Ipv4AddressesPerInterface:    h.ipv4PerInterface,
		Ipv6AddressesPerInterface:    h.ipv4PerInterface,
		Ipv6Supported:                true,
		EnaSupport:                   "required",
		EncryptionInTransitSupported: true,
	}
	perCard := max(h.interfaces/max(h.cards, 1), 1)
	for i := range h.cards {
		n.NetworkCards = append(n.NetworkCards, networkCardInfoXML{NetworkCardIndex: i, NetworkPerformance: cmp.Or(h.cardNetwork, h.network), MaximumNetworkInterfaces: perCard})
	}
	if efa := catalog.EFAInterfaces(instanceType); efa > 0 {
		n.EfaSupported = true
		n.EfaInfo = &efaInfoXML{MaximumEfaInterfaces: efa}
	}
	return n
}

// typeFilterValues gives a described type's values for each filter
// DescribeInstanceTypes understands here, read off what it renders so
// filters and answers always agree.
func typeFilterValues(x instanceTypeXML) map[string][]string {
	b := func(v bool) []string { return []string{strconv.FormatBool(v)} }
	i := func(v int) []string { return []string{strconv.Itoa(v)} }
	v := map[string][]string{
		"instance-type":                                          {x.InstanceType},
		"current-generation":                                     b(x.CurrentGeneration),
		"free-tier-eligible":                                     b(x.FreeTierEligible),
		"bare-metal":                                             b(x.BareMetal),
		"burstable-performance-supported":                        b(x.BurstablePerformanceSupported),
		"dedicated-hosts-supported":                              b(x.DedicatedHostsSupported),
		"auto-recovery-supported":                                b(x.AutoRecoverySupported),
		"hibernation-supported":                                  b(x.HibernationSupported),
		"hypervisor":                                             {x.Hypervisor},
		"instance-storage-supported":                             b(x.InstanceStorageSupported),
		"memory-info.size-in-mib":                                {strconv.FormatInt(x.MemoryInfo.SizeInMiB, 10)},
		"network-info.efa-supported":                             b(x.NetworkInfo.EfaSupported),
		"network-info.ena-support":                               {x.NetworkInfo.EnaSupport},
		"network-info.encryption-in-transit-supported":           b(x.NetworkInfo.EncryptionInTransitSupported),
		"network-info.ipv4-addresses-per-interface":              i(x.NetworkInfo.Ipv4AddressesPerInterface),
		"network-info.ipv6-addresses-per-interface":              i(x.NetworkInfo.Ipv6AddressesPerInterface),
		"network-info.ipv6-supported":                            b(x.NetworkInfo.Ipv6Supported),
		"network-info.maximum-network-cards":                     i(x.NetworkInfo.MaximumNetworkCards),
		"network-info.maximum-network-interfaces":                i(x.NetworkInfo.MaximumNetworkInterfaces),
		"network-info.network-performance":                       {x.NetworkInfo.NetworkPerformance},
		"nitro-enclaves-support":                                 {x.NitroEnclavesSupport},
		"nitro-tpm-support":                                      {x.NitroTpmSupport},
		"processor-info.supported-architecture":                  x.ProcessorInfo.SupportedArchitectures,
		"processor-info.sustained-clock-speed-in-ghz":            nonEmpty(strconv.FormatFloat(x.ProcessorInfo.SustainedClockSpeed, 'f', -1, 64)),
		"supported-boot-mode":                                    x.SupportedBootModes,
		"supported-root-device-type":                             x.SupportedRootDeviceTypes,
		"supported-usage-class":                                  x.SupportedUsageClasses,
		"supported-virtualization-type":                          x.SupportedVirtualizationTypes,
		"vcpu-info.default-cores":                                i(x.VCpuInfo.DefaultCores),
		"vcpu-info.default-threads-per-core":                     i(x.VCpuInfo.DefaultThreadsPerCore),
		"vcpu-info.default-vcpus":                                i(x.VCpuInfo.DefaultVCpus),
		"ebs-info.ebs-optimized-support":                         {x.EbsInfo.EbsOptimizedSupport},
		"ebs-info.encryption-support":                            {x.EbsInfo.EncryptionSupport},
		"ebs-info.nvme-support":                                  {x.EbsInfo.NvmeSupport},
		"ebs-info.ebs-optimized-info.maximum-bandwidth-in-mbps":  i(x.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps),
		"ebs-info.ebs-optimized-info.baseline-bandwidth-in-mbps": i(x.EbsInfo.EbsOptimizedInfo.BaselineBandwidthInMbps),
		"ebs-info.ebs-optimized-info.maximum-iops":               i(x.EbsInfo.EbsOptimizedInfo.MaximumIops),
		"ebs-info.ebs-optimized-info.baseline-iops":              i(x.EbsInfo.EbsOptimizedInfo.BaselineIops),
	}
	var threads []string
	for _, n := range x.VCpuInfo.ValidThreadsPerCore {
		threads = append(threads, strconv.Itoa(n))
	}
	v["vcpu-info.valid-threads-per-core"] = threads
	if x.NetworkInfo.EfaInfo != nil {
		v["network-info.efa-info.maximum-efa-interfaces"] = i(x.NetworkInfo.EfaInfo.MaximumEfaInterfaces)
	}
	if s := x.InstanceStorageInfo; s != nil {
		v["instance-storage-info.total-size-in-gb"] = i(s.TotalSizeInGB)
		v["instance-storage-info.nvme-support"] = []string{s.NvmeSupport}
		v["instance-storage-info.encryption-support"] = []string{s.EncryptionSupport}
		for _, d := range s.Disks {
			v["instance-storage-info.disk.count"] = append(v["instance-storage-info.disk.count"], strconv.Itoa(d.Count))
			v["instance-storage-info.disk.size-in-gb"] = append(v["instance-storage-info.disk.size-in-gb"], strconv.Itoa(d.SizeInGB))
			v["instance-storage-info.disk.type"] = append(v["instance-storage-info.disk.type"], d.Type)
		}
	}
	return v
}

// typeFilterNames are the filters typeFilterValues can answer, some only
// for types that have the part they ask about.
var typeFilterNames = func() map[string]bool {
	names := map[string]bool{
		"network-info.efa-info.maximum-efa-interfaces": true,
		"instance-storage-info.total-size-in-gb":       true,
		"instance-storage-info.nvme-support":           true,
		"instance-storage-info.encryption-support":     true,
		"instance-storage-info.disk.count":             true,
		"instance-storage-info.disk.size-in-gb":        true,
		"instance-storage-info.disk.type":              true,
	}
	for k := range typeFilterValues(instanceTypeXML{}) {
		names[k] = true
	}
	return names
}()

func (s *Server) describeInstanceTypes(req *request) (any, *apiError) {
	form := req.form
	names := unique(list(form, "InstanceType"))
	single := ""
	if len(names) == 1 {
		single = names[0]
	}
	outcome, apiErr := s.intercept(req, "", single)
	if apiErr != nil {
		return nil, apiErr
	}
	if outcome.Err != nil {
		return nil, s.worldError(outcome.Err, launchContext{region: req.region, instanceType: single})
	}
	fs, apiErr := knownFilters(form, typeFilterNames, false)
	if apiErr != nil {
		return nil, apiErr
	}
	maxResults, paged, apiErr := intParam(form, "MaxResults")
	if apiErr != nil {
		return nil, apiErr
	}
	switch {
	case !paged:
		maxResults = maxTypeResults
	case maxResults < 5 || maxResults > maxTypeResults:
		return nil, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and %d.", maxResults, maxTypeResults)
	}
	n, apiErr := nextToken(form, "types")
	if apiErr != nil {
		return nil, apiErr
	}
	offset := int(n)
	others, apiErr := boolParam(form, "IncludeUnsupportedInRegion", false)
	if apiErr != nil {
		return nil, apiErr
	}

	described := s.regionTypes(req.region, others)
	if len(names) > 0 {
		var missing []string
		var picked []describedType
		for _, name := range names {
			i := slices.IndexFunc(described, func(d describedType) bool { return d.typ.Name == name })
			if i < 0 {
				missing = append(missing, name)
				continue
			}
			picked = append(picked, described[i])
		}
		if len(missing) > 0 {
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidInstanceType", Message: fmt.Sprintf("The following supplied instance types do not exist: [%s]", strings.Join(missing, ", "))}
		}
		slices.SortFunc(picked, func(a, b describedType) int { return strings.Compare(a.typ.Name, b.typ.Name) })
		described = picked
	}
	var types []instanceTypeXML
	for _, d := range described {
		if x := renderType(d); matchesAll(fs, typeFilterValues(x)) {
			types = append(types, x)
		}
	}
	if offset > len(types) {
		return nil, invalidPaginationToken()
	}
	out := describeInstanceTypesResponse{Xmlns: xmlns, RequestID: req.id}
	page := types[offset:]
	if len(page) > maxResults {
		page = page[:maxResults]
		out.NextToken = encodeToken("types", uint64(offset+maxResults))
	}
	out.InstanceTypes = page
	return out, nil
}
