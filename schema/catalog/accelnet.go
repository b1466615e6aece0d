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
	size = strings.ToLower(size)
	for _, s := range acceleratedSeries {
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
