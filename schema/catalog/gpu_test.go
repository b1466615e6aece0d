// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"slices"
	"testing"
)

func TestNormalizeGPU(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
		ok    bool
	}{
		{"normalised name", "H100", "H100", true},
		{"lower case", "h100", "H100", true},
		{"with memory", "H100 80GB", "H100", true},
		{"gcp accelerator", "nvidia-h100-80gb", "H100", true},
		{"gcp mega accelerator", "nvidia-h100-mega-80gb", "H100", true},
		{"azure nvl", "H100 NVL", "H100", true},
		{"surrounding space", "  H100  ", "H100", true},
		{"h200 gcp", "nvidia-h200-141gb", "H200", true},
		{"a100 40gb", "a100-40gb", "A100-40GB", true},
		{"gcp tesla a100 is 40GB", "nvidia-tesla-a100", "A100-40GB", true},
		{"a100 80gb lower", "a100-80gb", "A100-80GB", true},
		{"a100 80gb spaced", "A100 80GB", "A100-80GB", true},
		{"gcp a100 80gb", "nvidia-a100-80gb", "A100-80GB", true},
		{"a100 underscores", "A100_80GB", "A100-80GB", true},
		{"l40s", "L40S", "L40S", true},
		{"l40s lower", "l40s", "L40S", true},
		{"gcp l4", "nvidia-l4", "L4", true},
		{"azure a10", "A10", "A10G", true},
		{"aws a10g", "a10g", "A10G", true},
		{"vendor prefix", "NVIDIA A10G", "A10G", true},
		{"gcp t4", "nvidia-tesla-t4", "T4", true},
		{"tesla t4", "Tesla T4", "T4", true},
		{"bare a100 is ambiguous", "A100", "", false},
		{"vendor a100 is ambiguous", "NVIDIA A100", "", false},
		{"a100 sxm4 is ambiguous", "A100-SXM4", "", false},
		{"l40 is not l40s", "L40", "", false},
		{"gcp v100", "nvidia-tesla-v100", "V100", true},
		{"v100 32gb", "V100-32GB", "V100-32GB", true},
		{"amd by its full name", "Radeon Pro V520", "V520", true},
		{"an accelerator that is not a GPU", "Inferentia2", "Inferentia2", true},
		{"fpga by its family name", "Virtex UltraScale+ (VU47P)", "VU47P", true},
		{"gcp mega h100", "H100-MEGA", "H100", true},
		{"unknown", "V200", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NormalizeGPU(tt.input)
			if got != tt.want || ok != tt.ok {
				t.Errorf("NormalizeGPU(%q) = %q, %v; want %q, %v", tt.input, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNormalizeGPUAcceptsEveryModel(t *testing.T) {
	for _, model := range Models() {
		t.Run(model, func(t *testing.T) {
			if got, ok := NormalizeGPU(model); !ok || got != model {
				t.Errorf("NormalizeGPU(%q) = %q, %v; want itself", model, got, ok)
			}
		})
	}
}

func TestModels(t *testing.T) {
	want := []string{"H100", "H200", "A100-40GB", "A100-80GB", "GH200", "L40S", "A6000", "RTX6000", "L4", "A10G", "T4",
		"V100-32GB", "V100", "P100", "P4", "M60", "K80", "T4g", "V520", "MI25",
		"Trainium", "Inferentia2", "Inferentia", "Gaudi", "AI100", "VU47P", "VU9P"}
	got := Models()
	if !slices.Equal(got, want) {
		t.Fatalf("Models() = %v, want %v", got, want)
	}
	got[0] = "changed"
	if Models()[0] != "H100" {
		t.Error("Models() shares its slice with the package")
	}
}

func TestSuggestGPU(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"ambiguous a100 offers both", "A100", []string{"A100-40GB", "A100-80GB"}},
		{"ambiguous with vendor", "nvidia-a100", []string{"A100-40GB", "A100-80GB"}},
		{"h10", "H10", []string{"H100", "A10G", "H200"}},
		{"l40", "L40", []string{"L40S", "L4", "A10G"}},
		{"t5", "T5", []string{"T4"}},
		{"typo in gcp name", "nvidia-h200-141g", []string{"H200"}},
		{"exact name comes first", "L4", []string{"L4", "T4", "P4"}},
		{"nothing close", "quantum-annealer", nil},
		{"empty", "", nil},
		{"vendor only", "nvidia", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SuggestGPU(tt.input)
			if !slices.Equal(got, tt.want) {
				t.Errorf("SuggestGPU(%q) = %q, want %q", tt.input, got, tt.want)
			}
		})
	}
}

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{"equal", "h100", "h100", 0},
		{"empty left", "", "abc", 3},
		{"empty right", "abc", "", 3},
		{"insertion", "h10", "h100", 1},
		{"substitution", "t5", "t4", 1},
		{"classic", "kitten", "sitting", 3},
		{"runes not bytes", "ä100", "a100", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := levenshtein(tt.a, tt.b); got != tt.want {
				t.Errorf("levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := levenshtein(tt.b, tt.a); got != tt.want {
				t.Errorf("levenshtein(%q, %q) = %d, want %d (symmetry)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}
