// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// AcceleratorKind is how a cloud's type API files an accelerator: EC2
// describes GPUs, AWS's own Neuron chips and FPGAs in separate parts of
// an instance type.
type AcceleratorKind string

const (
	KindGPU    AcceleratorKind = "gpu"
	KindNeuron AcceleratorKind = "neuron"
	KindFPGA   AcceleratorKind = "fpga"
)

// GPU is what the clouds' type APIs tell of an accelerator beyond the
// catalog's model and count.
type GPU struct {
	// Model is the catalog's name of it.
	Model string
	// Chip is the device's name as EC2 gives it, without the catalog's
	// memory suffix: both A100s are "A100", told apart by their memory.
	Chip         string
	Manufacturer string
	// MemoryMiB is one device's memory as EC2 reports it (a little under
	// the marketed size for some); 0 where it is not known.
	MemoryMiB int
	Kind      AcceleratorKind
}

// gpuFacts are the accelerators of the clouds' GPU types, keyed by the
// catalog's model. Prices and shapes come from the catalog; these are the
// facts no price API gives. Memory is what EC2's GpuInfo reports, or,
// for models only GCP and Azure sell, the device's published size.
var gpuFacts = []GPU{
	{Model: "H100", Chip: "H100", Manufacturer: "NVIDIA", MemoryMiB: 81920},
	{Model: "H100-MEGA", Chip: "H100", Manufacturer: "NVIDIA", MemoryMiB: 81920},
	{Model: "H200", Chip: "H200", Manufacturer: "NVIDIA", MemoryMiB: 144384},
	{Model: "B200", Chip: "B200", Manufacturer: "NVIDIA", MemoryMiB: 184320},
	{Model: "A100-40GB", Chip: "A100", Manufacturer: "NVIDIA", MemoryMiB: 40960},
	{Model: "A100-80GB", Chip: "A100", Manufacturer: "NVIDIA", MemoryMiB: 81920},
	{Model: "GH200", Chip: "GH200", Manufacturer: "NVIDIA", MemoryMiB: 98304},
	{Model: "L40S", Chip: "L40S", Manufacturer: "NVIDIA", MemoryMiB: 45776},
	{Model: "A6000", Chip: "RTX A6000", Manufacturer: "NVIDIA", MemoryMiB: 49152},
	{Model: "RTX6000", Chip: "Quadro RTX 6000", Manufacturer: "NVIDIA", MemoryMiB: 24576},
	{Model: "L4", Chip: "L4", Manufacturer: "NVIDIA", MemoryMiB: 22888},
	{Model: "A10G", Chip: "A10G", Manufacturer: "NVIDIA", MemoryMiB: 22888},
	{Model: "T4", Chip: "T4", Manufacturer: "NVIDIA", MemoryMiB: 16384},
	{Model: "T4g", Chip: "T4g", Manufacturer: "NVIDIA", MemoryMiB: 16384},
	{Model: "V100", Chip: "V100", Manufacturer: "NVIDIA", MemoryMiB: 16384},
	{Model: "V100-32GB", Chip: "V100", Manufacturer: "NVIDIA", MemoryMiB: 32768},
	{Model: "P100", Chip: "P100", Manufacturer: "NVIDIA", MemoryMiB: 16384},
	{Model: "P4", Chip: "P4", Manufacturer: "NVIDIA", MemoryMiB: 8192},
	{Model: "K80", Chip: "K80", Manufacturer: "NVIDIA", MemoryMiB: 12288},
	{Model: "M60", Chip: "M60", Manufacturer: "NVIDIA", MemoryMiB: 8192},
	{Model: "V520", Chip: "Radeon Pro V520", Manufacturer: "AMD", MemoryMiB: 8192},
	{Model: "MI25", Chip: "Radeon MI25", Manufacturer: "AMD", MemoryMiB: 16384},
	{Model: "Gaudi", Chip: "Gaudi HL-205", Manufacturer: "Habana", MemoryMiB: 32768},
	{Model: "AI100", Chip: "Qualcomm AI100", Manufacturer: "Qualcomm"},
	{Model: "Inferentia", Chip: "Inferentia", Manufacturer: "AWS", MemoryMiB: 8192, Kind: KindNeuron},
	{Model: "Inferentia2", Chip: "Inferentia2", Manufacturer: "AWS", MemoryMiB: 32768, Kind: KindNeuron},
	{Model: "Trainium", Chip: "Trainium", Manufacturer: "AWS", MemoryMiB: 32768, Kind: KindNeuron},
	{Model: "Trainium2", Chip: "Trainium2", Manufacturer: "AWS", MemoryMiB: 98304, Kind: KindNeuron},
	{Model: "VU9P", Chip: "Virtex UltraScale (VU9P)", Manufacturer: "Xilinx", Kind: KindFPGA},
	{Model: "VU47P", Chip: "Virtex UltraScale+ (VU47P)", Manufacturer: "Xilinx", Kind: KindFPGA},
}

// gpuFactsByKey finds a model's facts by its compacted spelling, so that
// "Gaudi HL-205", "gaudi-hl205" and "GAUDI_HL205" are one.
var gpuFactsByKey = func() map[string]GPU {
	out := make(map[string]GPU, len(gpuFacts))
	for _, g := range gpuFacts {
		if g.Kind == "" {
			g.Kind = KindGPU
		}
		out[compactModel(g.Model)] = g
	}
	return out
}()

// GPUFacts is what the clouds' type APIs tell of a catalog GPU model. A
// model the table lacks, however the catalog spells it, is still an
// accelerator the world sells: a GPU of its catalog name whose memory is
// not known, made by NVIDIA as nearly every GPU the clouds rent is.
func GPUFacts(model string) GPU {
	if g, ok := LookupGPU(model); ok {
		return g
	}
	return GPU{Model: model, Chip: model, Manufacturer: "NVIDIA", Kind: KindGPU}
}

// LookupGPU is the table's facts of a catalog GPU model, by its own
// spelling or, through catalog.NormalizeGPU, by the canonical model it
// names; false when the table lacks it.
func LookupGPU(model string) (GPU, bool) {
	keys := []string{compactModel(model)}
	if canonical, ok := catalog.NormalizeGPU(model); ok {
		keys = append(keys, compactModel(canonical))
	}
	for _, k := range keys {
		if g, ok := gpuFactsByKey[k]; ok {
			g.Model = model
			return g, true
		}
	}
	return GPU{}, false
}

// compactModel folds case and word separators, which never carry meaning
// in a model's name.
func compactModel(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		switch r {
		case ' ', '-', '_', '\t':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
