// SPDX-License-Identifier: Apache-2.0

package catalog

import "strings"

// Family names the instance family a type belongs to, as agreements and
// committed-use rates name it: the part of the name every size of the
// family shares. It is read from the name alone, so it holds for types no
// table here knows.
//
//   - AWS: the name before the dot ("g6e.2xlarge" is of "g6e").
//   - GCP: the machine series, before the first dash ("a3-highgpu-8g" is
//     of "a3").
//   - Azure: the size series, without "Standard_" and the vCPU count
//     ("Standard_NC24ads_A100_v4" is of "NCads_A100_v4").
//
// A name it cannot read is its own family.
func Family(cloud, instanceType string) string {
	switch cloud {
	case AWS:
		family, _, _ := strings.Cut(instanceType, ".")
		return family
	case GCP:
		family, _, _ := strings.Cut(instanceType, "-")
		return family
	case Azure:
		size := strings.TrimPrefix(instanceType, "Standard_")
		letters := strings.IndexFunc(size, func(r rune) bool { return r < 'A' || r > 'Z' })
		if letters <= 0 {
			return size
		}
		rest := size[letters:]
		digits := strings.TrimLeft(rest, "0123456789")
		if len(digits) == len(rest) {
			return size
		}
		return size[:letters] + digits
	}
	return instanceType
}
