// SPDX-License-Identifier: Apache-2.0

package catalog

import "testing"

// The current GPU series support Accelerated Networking (each series' page
// in the Azure documentation says so); other sizes are created without it,
// and every size of the catalog is in one list or the other.
func TestAcceleratedNetworking(t *testing.T) {
	for _, size := range []string{"Standard_NC4as_T4_v3", "Standard_NC64as_T4_v3", "standard_nc24ads_a100_v4", "Standard_NC40ads_H100_v5", "Standard_NC80adis_H100_v5",
		"Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5",
		"Standard_NV36ads_A10_v5", "Standard_NV36adms_A10_v5"} {
		if !AcceleratedNetworking(size) {
			t.Errorf("%s: no accelerated networking", size)
		}
	}
	for _, size := range []string{"Standard_NV6", "Standard_NC6s_v3", "Standard_NCas_T4_v3", "Standard_NC4as_T4_v3x", "Standard_B2s", "Standard_D4s_v5", ""} {
		if AcceleratedNetworking(size) {
			t.Errorf("%s: accelerated networking", size)
		}
	}
	for _, o := range Default().Offers {
		if o.Cloud == Azure && !knownSeries(o.InstanceType) {
			t.Errorf("catalog size %s is in neither acceleratedSeries nor plainSeries: check its series' Accelerated Networking support in the Azure documentation", o.InstanceType)
		}
	}
}
