// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// gpuModels holds every normalised GPU model, in the order Models reports
// them, with the other names clouds and users give it. Aliases are matched
// after compactGPU, so "H100 80GB", "h100-80gb" and "H100_80GB" are one entry.
var gpuModels = []struct {
	name    string
	aliases []string
}{
	// Azure's NC H100 v5 carries the H100 NVL and GCP's a3-megagpu the
	// "mega" H100; both schedule like any H100.
	{"H100", []string{"H100 80GB", "H100 SXM", "H100 SXM5", "H100 NVL", "H100 PCIe", "H100 MEGA", "nvidia-h100-80gb", "nvidia-h100-mega-80gb"}},
	{"H200", []string{"H200 141GB", "H200 SXM", "nvidia-h200-141gb"}},
	// GCP's "nvidia-tesla-a100" is its 40GB part; a bare "A100" is not
	// (see ambiguousGPUs).
	{"A100-40GB", []string{"A100 40GB", "A100 SXM4 40GB", "A100 PCIe 40GB", "nvidia-tesla-a100"}},
	{"A100-80GB", []string{"A100 80GB", "A100 SXM4 80GB", "A100 PCIe 80GB", "nvidia-a100-80gb"}},
	// Grace Hopper: an H100 with a Grace CPU on one module, 96GB.
	{"GH200", []string{"GH200 96GB", "nvidia-gh200"}},
	{"L40S", []string{"L40S 48GB", "nvidia-l40s"}},
	// Workstation cards GPU clouds rent: the Ampere RTX A6000 (48GB) and
	// the Turing Quadro RTX 6000 (24GB).
	{"A6000", []string{"RTX A6000", "A6000 48GB", "RTX A6000 48GB"}},
	{"RTX6000", []string{"Quadro RTX 6000", "RTX 6000", "RTX6000 24GB"}},
	{"L4", []string{"L4 24GB", "nvidia-l4"}},
	// Azure sells the AWS A10G's sibling as "A10"; for placement they are
	// the same 24GB Ampere card.
	{"A10G", []string{"A10", "A10 24GB", "A10G 24GB", "nvidia-a10g"}},
	{"T4", []string{"T4 16GB", "nvidia-tesla-t4"}},
	// Older NVIDIA generations, still sold.
	{"V100-32GB", []string{"V100 32GB", "V100 SXM2 32GB"}},
	{"V100", []string{"V100 16GB", "V100 SXM2", "nvidia-tesla-v100"}},
	{"P100", []string{"P100 16GB", "nvidia-tesla-p100"}},
	{"P4", []string{"P4 8GB", "nvidia-tesla-p4"}},
	{"M60", []string{"Tesla M60"}},
	{"K80", []string{"Tesla K80", "nvidia-tesla-k80"}},
	// AWS's Graviton G5g carries the T4G, an Arm host's T4.
	{"T4g", []string{"T4G 16GB"}},
	// AMD GPUs.
	{"V520", []string{"Radeon Pro V520"}},
	{"MI25", []string{"Radeon MI25", "Radeon Instinct MI25"}},
	// Accelerators that are not GPUs: a workload names them as it names a
	// GPU model, and gets only the types that carry them.
	{"Trainium", []string{"Trainium1", "AWS Trainium"}},
	{"Inferentia2", []string{"AWS Inferentia2"}},
	{"Inferentia", []string{"Inferentia1", "AWS Inferentia"}},
	{"Gaudi", []string{"Gaudi HL-205", "HL-205", "Habana Gaudi"}},
	{"AI100", []string{"Qualcomm AI100", "Cloud AI100"}},
	// FPGAs, by their Xilinx part.
	{"VU47P", []string{"Virtex UltraScale+ (VU47P)"}},
	{"VU9P", []string{"Virtex UltraScale (VU9P)"}},
}

// ambiguousGPUs are spellings that name more than one model. Guessing would
// silently pick a price for the wrong memory size, so they are refused and
// the candidates offered instead.
var ambiguousGPUs = map[string][]string{
	"a100":     {"A100-40GB", "A100-80GB"},
	"a100sxm4": {"A100-40GB", "A100-80GB"},
	"a100pcie": {"A100-40GB", "A100-80GB"},
}

// gpuByKey maps every compacted spelling to its model.
var gpuByKey = func() map[string]string {
	byKey := make(map[string]string)
	for _, model := range gpuModels {
		for _, spelling := range append([]string{model.name}, model.aliases...) {
			key := compactGPU(spelling)
			if other, ok := byKey[key]; ok && other != model.name {
				panic(fmt.Sprintf("catalog: GPU spelling %q names both %s and %s", spelling, other, model.name))
			}
			if _, ok := ambiguousGPUs[key]; ok {
				panic(fmt.Sprintf("catalog: GPU spelling %q is listed as ambiguous", spelling))
			}
			byKey[key] = model.name
		}
	}
	return byKey
}()

// Models lists the normalised GPU model names, most capable first.
func Models() []string {
	names := make([]string, len(gpuModels))
	for i, model := range gpuModels {
		names[i] = model.name
	}
	return names
}

// NormalizeGPU returns the normalised model for a cloud's or a user's
// spelling of a GPU, ignoring case, spaces, dashes and underscores, and a
// leading "nvidia" or "tesla". It reports false for unknown and for
// ambiguous names; SuggestGPU says what might have been meant.
func NormalizeGPU(name string) (string, bool) {
	key := compactGPU(name)
	// The full key is tried first because a vendor prefix can carry meaning:
	// GCP's "nvidia-tesla-a100" is the 40GB part, a bare "a100" is not.
	for _, k := range []string{key, stripGPUVendor(key)} {
		if model, ok := gpuByKey[k]; ok {
			return model, true
		}
	}
	return "", false
}

// SuggestGPU returns up to three normalised models that name probably meant,
// closest first, ties in Models order. An ambiguous name yields exactly the
// models it could mean.
func SuggestGPU(name string) []string {
	key := compactGPU(name)
	bare := stripGPUVendor(key)
	if bare == "" {
		return nil
	}
	for _, k := range []string{key, bare} {
		if models, ok := ambiguousGPUs[k]; ok {
			return slices.Clone(models)
		}
	}

	// Half the typed length keeps "T5" from matching everything two edits
	// away while still forgiving a slip or two in longer names.
	limit := max(1, (len([]rune(bare))+1)/2)

	type candidate struct {
		model    string
		order    int
		distance int
	}
	var candidates []candidate
	for order, model := range gpuModels {
		best := limit + 1
		for _, spelling := range append([]string{model.name}, model.aliases...) {
			k := compactGPU(spelling)
			best = min(best, levenshtein(key, k), levenshtein(bare, k))
		}
		if best <= limit {
			candidates = append(candidates, candidate{model.name, order, best})
		}
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.distance, b.distance), cmp.Compare(a.order, b.order))
	})

	var models []string
	for _, c := range candidates[:min(3, len(candidates))] {
		models = append(models, c.model)
	}
	return models
}

// compactGPU folds the differences between clouds' spellings that never
// carry meaning: case and word separators.
func compactGPU(name string) string {
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

// stripGPUVendor drops the brand words clouds put in front of the model.
func stripGPUVendor(key string) string {
	key = strings.TrimPrefix(key, "nvidia")
	return strings.TrimPrefix(key, "tesla")
}

// levenshtein is the number of single-rune insertions, deletions and
// substitutions that turn a into b.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Two rows of the classic table suffice: each row needs only the one
	// above it.
	prev := make([]int, len(rb)+1)
	curr := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		curr[0] = i
		for j := 1; j <= len(rb); j++ {
			substitution := prev[j-1]
			if ra[i-1] != rb[j-1] {
				substitution++
			}
			curr[j] = min(prev[j]+1, curr[j-1]+1, substitution)
		}
		prev, curr = curr, prev
	}
	return prev[len(rb)]
}

// Closest returns up to n of candidates nearest to name by edit distance,
// for "did you mean" hints on region and other names. Candidates more than
// half of name's length away are not suggestions.
func Closest(name string, candidates []string, n int) []string {
	limit := max(1, (len([]rune(name))+1)/2)
	type candidate struct {
		name     string
		distance int
	}
	var found []candidate
	for _, c := range candidates {
		if d := levenshtein(strings.ToLower(name), strings.ToLower(c)); d <= limit {
			found = append(found, candidate{c, d})
		}
	}
	slices.SortFunc(found, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.distance, b.distance), cmp.Compare(a.name, b.name))
	})
	var out []string
	for _, c := range found[:min(n, len(found))] {
		out = append(out, c.name)
	}
	return out
}
