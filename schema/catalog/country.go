// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"maps"
	"slices"
)

// regionCountries is where each cloud's regions are, by the country of
// their data centres (ISO 3166-1 alpha-2): the one fact about a region the
// clouds' price and type APIs do not give, and what residency rules are
// written in.
var regionCountries = map[string]map[string]string{
	AWS: {
		"us-east-1": "US", "us-east-2": "US", "us-west-1": "US", "us-west-2": "US",
		"us-gov-east-1": "US", "us-gov-west-1": "US",
		"ca-central-1": "CA", "ca-west-1": "CA", "mx-central-1": "MX", "sa-east-1": "BR",
		"eu-central-1": "DE", "eu-central-2": "CH", "eu-west-1": "IE", "eu-west-2": "GB", "eu-west-3": "FR",
		"eu-south-1": "IT", "eu-south-2": "ES", "eu-north-1": "SE",
		"il-central-1": "IL", "me-south-1": "BH", "me-central-1": "AE", "af-south-1": "ZA",
		"ap-east-1": "HK", "ap-east-2": "TW", "ap-south-1": "IN", "ap-south-2": "IN",
		"ap-southeast-1": "SG", "ap-southeast-2": "AU", "ap-southeast-3": "ID", "ap-southeast-4": "AU",
		"ap-southeast-5": "MY", "ap-southeast-6": "NZ", "ap-southeast-7": "TH",
		"ap-northeast-1": "JP", "ap-northeast-2": "KR", "ap-northeast-3": "JP",
		"cn-north-1": "CN", "cn-northwest-1": "CN",
	},
	Azure: {
		"eastus": "US", "eastus2": "US", "centralus": "US", "northcentralus": "US", "southcentralus": "US",
		"westcentralus": "US", "westus": "US", "westus2": "US", "westus3": "US",
		"canadacentral": "CA", "canadaeast": "CA", "mexicocentral": "MX",
		"brazilsouth": "BR", "brazilsoutheast": "BR", "chilecentral": "CL",
		"northeurope": "IE", "westeurope": "NL", "uksouth": "GB", "ukwest": "GB",
		"francecentral": "FR", "francesouth": "FR", "germanywestcentral": "DE", "germanynorth": "DE",
		"switzerlandnorth": "CH", "switzerlandwest": "CH", "norwayeast": "NO", "norwaywest": "NO",
		"swedencentral": "SE", "swedensouth": "SE", "polandcentral": "PL", "italynorth": "IT",
		"spaincentral": "ES", "austriaeast": "AT", "belgiumcentral": "BE", "denmarkeast": "DK",
		"eastasia": "HK", "southeastasia": "SG", "japaneast": "JP", "japanwest": "JP",
		"koreacentral": "KR", "koreasouth": "KR", "australiaeast": "AU", "australiasoutheast": "AU",
		"australiacentral": "AU", "australiacentral2": "AU", "newzealandnorth": "NZ",
		"centralindia": "IN", "southindia": "IN", "westindia": "IN", "jioindiacentral": "IN", "jioindiawest": "IN",
		"indonesiacentral": "ID", "malaysiawest": "MY",
		"uaenorth": "AE", "uaecentral": "AE", "qatarcentral": "QA", "israelcentral": "IL",
		"southafricanorth": "ZA", "southafricawest": "ZA",
	},
	GCP: {
		"us-central1": "US", "us-central2": "US", "us-east1": "US", "us-east4": "US", "us-east5": "US",
		"us-south1": "US", "us-west1": "US", "us-west2": "US", "us-west3": "US", "us-west4": "US",
		"northamerica-northeast1": "CA", "northamerica-northeast2": "CA", "northamerica-south1": "MX",
		"southamerica-east1": "BR", "southamerica-west1": "CL",
		"europe-west1": "BE", "europe-west2": "GB", "europe-west3": "DE", "europe-west4": "NL",
		"europe-west6": "CH", "europe-west8": "IT", "europe-west9": "FR", "europe-west10": "DE",
		"europe-west12": "IT", "europe-central2": "PL", "europe-north1": "FI", "europe-north2": "SE",
		"europe-southwest1": "ES",
		"asia-east1":        "TW", "asia-east2": "HK", "asia-northeast1": "JP", "asia-northeast2": "JP",
		"asia-northeast3": "KR", "asia-south1": "IN", "asia-south2": "IN", "asia-southeast1": "SG",
		"asia-southeast2": "ID", "australia-southeast1": "AU", "australia-southeast2": "AU",
		"me-central1": "QA", "me-central2": "SA", "me-west1": "IL", "africa-south1": "ZA",
	},
	// Lambda Cloud's regions, by the locations Lambda publishes for them.
	// The data also lists europe-south-1 and asia-northeast-2, whose
	// location Lambda does not publish: they are left out, not guessed,
	// since residency rules are written in countries.
	Lambda: {
		"us-east-1": "US", "us-east-2": "US", "us-east-3": "US", "us-midwest-1": "US",
		"us-south-1": "US", "us-south-2": "US", "us-south-3": "US",
		"us-west-1": "US", "us-west-2": "US", "us-west-3": "US",
		"europe-central-1": "DE", "asia-northeast-1": "JP", "asia-south-1": "IN",
		"australia-east-1": "AU", "me-west-1": "IL",
	},
	// OCI's regions, by the cities Oracle publishes for them (Vinhedo and
	// Sao Paulo in Brazil, Chuncheon and Seoul in South Korea).
	OCI: {
		"us-ashburn-1": "US", "us-phoenix-1": "US", "us-sanjose-1": "US",
		"ca-montreal-1": "CA", "ca-toronto-1": "CA", "mx-queretaro-1": "MX",
		"sa-saopaulo-1": "BR", "sa-vinhedo-1": "BR", "sa-santiago-1": "CL",
		"eu-amsterdam-1": "NL", "eu-frankfurt-1": "DE", "eu-madrid-1": "ES", "eu-marseille-1": "FR",
		"eu-milan-1": "IT", "eu-paris-1": "FR", "eu-stockholm-1": "SE", "eu-zurich-1": "CH",
		"uk-cardiff-1": "GB", "uk-london-1": "GB",
		"me-abudhabi-1": "AE", "me-dubai-1": "AE", "me-jeddah-1": "SA", "il-jerusalem-1": "IL",
		"af-johannesburg-1": "ZA",
		"ap-chuncheon-1":    "KR", "ap-seoul-1": "KR", "ap-hyderabad-1": "IN", "ap-mumbai-1": "IN",
		"ap-osaka-1": "JP", "ap-tokyo-1": "JP", "ap-singapore-1": "SG",
		"ap-melbourne-1": "AU", "ap-sydney-1": "AU",
	},
}

// CountryOf is the country a cloud's region is in, as an ISO 3166-1
// alpha-2 code; false for a region gpufleet does not know the place of.
func CountryOf(cloud, region string) (string, bool) {
	c, ok := regionCountries[cloud][region]
	return c, ok
}

// geoCountries are the geographies a residency rule may name, each a set
// of countries. eu is the European Union, whose law is what data-residency
// rules usually mean by it; europe takes in the rest of the continent.
var geoCountries = map[string][]string{
	"eu": {"AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT",
		"LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK"},
	"eea": {"AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IS",
		"IT", "LI", "LT", "LU", "LV", "MT", "NL", "NO", "PL", "PT", "RO", "SE", "SI", "SK"},
	"europe": {"AT", "BE", "BG", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GB", "GR", "HR", "HU",
		"IE", "IS", "IT", "LI", "LT", "LU", "LV", "MT", "NL", "NO", "PL", "PT", "RO", "SE", "SI", "SK"},
	"us":            {"US"},
	"ca":            {"CA"},
	"north-america": {"CA", "MX", "US"},
	"south-america": {"AR", "BR", "CL", "CO", "PE"},
	"latam":         {"AR", "BR", "CL", "CO", "MX", "PE"},
	"apac":          {"AU", "CN", "HK", "ID", "IN", "JP", "KR", "MY", "NZ", "SG", "TH", "TW"},
	"asia":          {"CN", "HK", "ID", "IN", "JP", "KR", "MY", "SG", "TH", "TW"},
	"oceania":       {"AU", "NZ"},
	"middle-east":   {"AE", "BH", "IL", "QA", "SA"},
	"africa":        {"ZA"},
}

// Geos are the geographies a residency rule may name, sorted.
func Geos() []string {
	return slices.Sorted(maps.Keys(geoCountries))
}

// GeoCountries is the countries of a geography; false for one gpufleet
// does not know.
func GeoCountries(geo string) ([]string, bool) {
	c, ok := geoCountries[geo]
	return slices.Clone(c), ok
}

// KnownCountry reports whether a code is the country of a region gpufleet
// knows, so that a rule naming one nobody has a region in can be told.
func KnownCountry(code string) bool {
	for _, regions := range regionCountries {
		if slices.Contains(slices.Collect(maps.Values(regions)), code) {
			return true
		}
	}
	return false
}

// RegionNames are the regions of a cloud whose country gpufleet knows,
// sorted: every region the cloud had when the table was written.
func RegionNames(cloud string) []string {
	return slices.Sorted(maps.Keys(regionCountries[cloud]))
}
