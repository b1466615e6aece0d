// SPDX-License-Identifier: Apache-2.0

package catalog

import "testing"

func TestFamilyIsWhatTheSizesShare(t *testing.T) {
	tests := []struct{ cloud, instanceType, want string }{
		{AWS, "p5.48xlarge", "p5"},
		{AWS, "g6e.2xlarge", "g6e"},
		{GCP, "a3-highgpu-8g", "a3"},
		{GCP, "g2-standard-4", "g2"},
		{Azure, "Standard_NC24ads_A100_v4", "NCads_A100_v4"},
		{Azure, "Standard_ND96isr_H100_v5", "NDisr_H100_v5"},
		{Azure, "Standard_NV36ads_A10_v5", "NVads_A10_v5"},
		{Azure, "Standard_odd", "odd"},
		{"oracle", "BM.GPU.H100.8", "BM.GPU.H100.8"},
	}
	for _, tt := range tests {
		if got := Family(tt.cloud, tt.instanceType); got != tt.want {
			t.Errorf("Family(%s, %s) = %q, want %q", tt.cloud, tt.instanceType, got, tt.want)
		}
	}
}
