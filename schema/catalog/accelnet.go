// SPDX-License-Identifier: Apache-2.0

package catalog

import "strings"

// acceleratedSeries are the Azure size series whose documentation says
// Accelerated Networking is supported: every GPU series of the catalog. A
// size is named prefix, vCPU count, suffix ("Standard_NC" 4 "as_T4_v3").
var acceleratedSeries = []struct{ prefix, suffix string }{
	{"standard_nc", "as_t4_v3"},
	{"standard_nc", "ads_a100_v4"},
	{"standard_nc", "ads_h100_v5"},
	{"standard_nc", "adis_h100_v5"},
	{"standard_nd", "asr_v4"},
	{"standard_nd", "asr_a100_v4"},
	{"standard_nd", "amsr_a100_v4"},
	{"standard_nd", "isr_h100_v5"},
	{"standard_nd", "isr_h200_v5"},
	{"standard_nv", "ads_a10_v5"},
	{"standard_nv", "adms_a10_v5"},
}

// AcceleratedNetworking reports whether an Azure VM size supports
// Accelerated Networking. ARM refuses it on a size that does not: the
// provider asks for it only where it may, and the emulator refuses it
// elsewhere as ARM does.
func AcceleratedNetworking(size string) bool {
	return inSeries(strings.ToLower(size), acceleratedSeries)
}

// plainSeries are the Azure GPU size series of the catalog that gpufleet
// creates without Accelerated Networking: the retired K80 and M60 series
// (NC, NV and their Promo sizes), which lack it, and the V100, M60 v3 and
// MI25 series (NCv3, NDv2, NVv3, NVv4), whose documentation gives it for
// some sizes only. Asking for it where a size lacks it fails the create;
// leaving it out never does.
var plainSeries = []struct{ prefix, suffix string }{
	{"standard_nc", ""}, {"standard_nc", "r"}, {"standard_nc", "_promo"}, {"standard_nc", "r_promo"},
	{"standard_nv", ""}, {"standard_nv", "_promo"},
	{"standard_nc", "s_v3"}, {"standard_nc", "rs_v3"}, {"standard_nd", "rs_v2"},
	{"standard_nv", "s_v3"}, {"standard_nv", "as_v4"},
}

// knownSeries reports whether a size belongs to a series whose Accelerated
// Networking support has been looked up, either way.
func knownSeries(size string) bool {
	return AcceleratedNetworking(size) || inSeries(strings.ToLower(size), plainSeries)
}

func inSeries(size string, series []struct{ prefix, suffix string }) bool {
	for _, s := range series {
		rest, ok := strings.CutPrefix(size, s.prefix)
		if !ok {
			continue
		}
		if suffix := strings.TrimLeft(rest, "0123456789"); len(suffix) < len(rest) && suffix == s.suffix {
			return true
		}
	}
	return false
}
