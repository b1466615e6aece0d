// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The tests in this file read data/ on their own, with none of the
// generator's code, and hold the embedded snapshot to it: every offer is a
// row of the public data (or a derived offer where the data has no row), and
// every row the data prices is an offer.

// dataRow is one line of a data file, by column name.
type dataRow map[string]string

func readData(t *testing.T, file string) []dataRow {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var rows []dataRow
	for _, rec := range records[1:] {
		r := make(dataRow)
		for i, name := range records[0] {
			r[name] = rec[i]
		}
		rows = append(rows, r)
	}
	return rows
}

// micros reads a price column; -1 for an empty one.
func (r dataRow) micros(t *testing.T, column string) int64 {
	if r[column] == "" {
		return -1
	}
	v, err := strconv.ParseFloat(r[column], 64)
	if err != nil {
		t.Fatalf("%s %q: %v", column, r[column], err)
	}
	return Micros(v)
}

func (r dataRow) whole(t *testing.T, column string) int {
	v, err := strconv.ParseFloat(r[column], 64)
	if err != nil {
		t.Fatalf("%s %q: %v", column, r[column], err)
	}
	return int(v)
}

func priceColumn(m Market) string {
	if m == Spot {
		return "SpotPrice"
	}
	return "Price"
}

// zoneID is the AWS zone id the snapshot records beside a zone's name.
func zoneID(t *testing.T, c *Catalog, region, zone string) string {
	r, ok := c.Region(AWS, region)
	if !ok {
		t.Fatalf("region %s is not listed", region)
	}
	i := slices.Index(r.Zones, zone)
	if i < 0 || i >= len(r.ZoneIDs) {
		t.Fatalf("zone %s of %s has no zone id", zone, region)
	}
	return r.ZoneIDs[i]
}

func TestEverySnapshotOfferIsARowOfThePublicData(t *testing.T) {
	c := Default()
	aws := readData(t, "data/aws-gpu.csv")
	azure := readData(t, "data/azure-gpu.csv")
	gcp := readData(t, "data/gcp-gpu.csv")
	lambda := readData(t, "data/lambda.csv")
	oci := readData(t, "data/oci.csv")
	corrected := make(map[string]int)
	for _, r := range readData(t, "data/corrections.csv") {
		corrected[r["cloud"]+" "+r["instanceType"]] = r.whole(t, "gpus")
	}
	azureRegions := make(map[string]bool)
	for _, r := range azure {
		azureRegions[r["Region"]] = true
	}
	shapeMatches := func(o Offer, r dataRow) bool {
		gpus := r.whole(t, "AcceleratorCount")
		if n, ok := corrected[o.Cloud+" "+o.InstanceType]; ok {
			gpus = n
		}
		return o.GPUs == gpus && o.VCPUs == r.whole(t, "vCPUs") && fmt.Sprint(o.MemoryGiB) == strings.TrimSuffix(r["MemoryGiB"], ".0")
	}

	counts := make(map[string]int)
	for _, o := range c.Offers {
		counts[o.Cloud]++
		var found bool
		switch {
		case o.Derived && o.Cloud == Azure:
			counts[o.Cloud+" derived"]++
			// Only where the data has no row for the region at all.
			found = !azureRegions[o.Region]
		case o.Derived && o.Cloud == GCP:
			counts[o.Cloud+" derived"]++
			// Only a machine row of the zone, whose GPUs the zone does not
			// price: the offer costs the machine and then some.
			name, n := gpusOfGCPMachine(o.InstanceType)
			for _, vm := range gcp {
				if vm["InstanceType"] == o.InstanceType && vm["AvailabilityZone"] == o.Zone && o.PriceMicros > vm.micros(t, priceColumn(o.Market)) {
					found = true
				}
			}
			for _, gpus := range gcp {
				if gpus["InstanceType"] == "" && gpus["AvailabilityZone"] == o.Zone && gpus["AcceleratorName"] == name && gpus.whole(t, "AcceleratorCount") == n {
					found = false
				}
			}
		case o.Cloud == AWS:
			id := zoneID(t, c, o.Region, o.Zone)
			for _, r := range aws {
				if r["InstanceType"] == o.InstanceType && r["Region"] == o.Region && r["AvailabilityZone"] == id &&
					r.micros(t, priceColumn(o.Market)) == o.PriceMicros && shapeMatches(o, r) {
					found = true
					break
				}
			}
		case o.Cloud == Azure:
			for _, r := range azure {
				if r["InstanceType"] == o.InstanceType && r["Region"] == o.Region && o.Zone == "" &&
					r.micros(t, priceColumn(o.Market)) == o.PriceMicros && shapeMatches(o, r) {
					found = true
					break
				}
			}
		case o.Cloud == Lambda:
			// Lambda has no zones: the offer's zone is its region.
			for _, r := range lambda {
				if r["InstanceType"] == o.InstanceType && r["Region"] == o.Region && o.Zone == o.Region && o.Market == OnDemand &&
					r.micros(t, "Price") == o.PriceMicros && shapeMatches(o, r) {
					found = true
					break
				}
			}
		case o.Cloud == OCI:
			// An OCI zone is an availability domain, upper-cased as OCI
			// writes it everywhere.
			for _, r := range oci {
				if r["InstanceType"] == o.InstanceType && r["Region"] == o.Region && strings.ToUpper(r["AvailabilityZone"]) == o.Zone &&
					o.Market == OnDemand && r.micros(t, "Price") == o.PriceMicros && shapeMatches(o, r) {
					found = true
					break
				}
			}
		case o.Cloud == GCP:
			// A GCP offer is a machine row and a row pricing as many GPUs
			// in the same zone.
			for _, vm := range gcp {
				if vm["InstanceType"] != o.InstanceType || vm["AvailabilityZone"] != o.Zone || vm["Region"] != o.Region {
					continue
				}
				name, _ := gpusOfGCPMachine(o.InstanceType)
				for _, gpus := range gcp {
					if gpus["InstanceType"] == "" && gpus["AvailabilityZone"] == o.Zone && gpus["AcceleratorName"] == name && gpus.whole(t, "AcceleratorCount") == o.GPUs &&
						vm.micros(t, priceColumn(o.Market))+gpus.micros(t, priceColumn(o.Market)) == o.PriceMicros &&
						vm.micros(t, priceColumn(o.Market)) > 0 && gpus.micros(t, priceColumn(o.Market)) > 0 &&
						vm.whole(t, "vCPUs") == o.VCPUs {
						found = true
						break
					}
				}
			}
		}
		if !found {
			t.Errorf("%s at %s: no row of the public data gives it", describeOffer(o), FormatMicros(o.PriceMicros))
		}
	}
	t.Logf("offers: aws %d, azure %d (%d derived), gcp %d (%d derived), lambda %d, oci %d", counts[AWS], counts[Azure], counts[Azure+" derived"], counts[GCP], counts[GCP+" derived"], counts[Lambda], counts[OCI])
}

func TestEveryPricedRowOfThePublicDataIsAnOffer(t *testing.T) {
	c := Default()
	type key struct {
		cloud, region, zone, instanceType string
		market                            Market
	}
	have := make(map[key]bool)
	for _, o := range c.Offers {
		zone := o.Zone
		if o.Cloud == AWS {
			zone = zoneID(t, c, o.Region, o.Zone)
		}
		have[key{o.Cloud, o.Region, zone, o.InstanceType, o.Market}] = true
	}
	check := func(cloud string, r dataRow, zone string) {
		for _, m := range []Market{OnDemand, Spot} {
			if r.micros(t, priceColumn(m)) > 0 && !have[key{cloud, r["Region"], zone, r["InstanceType"], m}] {
				t.Errorf("%s %s %s %s %s at %s is not in the snapshot", cloud, r["Region"], zone, r["InstanceType"], m, r[priceColumn(m)])
			}
		}
	}
	for _, r := range readData(t, "data/aws-gpu.csv") {
		// The one trn2 row names no accelerator, so the snapshot cannot say
		// what the type carries.
		if r["AcceleratorName"] != "" {
			check(AWS, r, r["AvailabilityZone"])
		}
	}
	leftOut := leftOutTypes(t)
	for _, r := range readData(t, "data/azure-gpu.csv") {
		if !leftOut[r["InstanceType"]] {
			check(Azure, r, "")
		}
	}
	for _, r := range readData(t, "data/lambda.csv") {
		// CPU-only types, and regions whose country Lambda does not
		// publish (country.go), are left out.
		if _, located := CountryOf(Lambda, r["Region"]); r["AcceleratorName"] != "" && located {
			check(Lambda, r, r["Region"])
		}
	}
	for _, r := range readData(t, "data/oci.csv") {
		// CPU shapes are left out.
		if r["AcceleratorName"] != "" {
			check(OCI, r, strings.ToUpper(r["AvailabilityZone"]))
		}
	}
	gcp := readData(t, "data/gcp-gpu.csv")
	priced := make(map[string]bool) // zone, model and count of a GPU row
	for _, r := range gcp {
		if r["InstanceType"] == "" {
			for _, m := range []Market{OnDemand, Spot} {
				if r.micros(t, priceColumn(m)) > 0 {
					priced[r["AvailabilityZone"]+" "+r["AcceleratorName"]+" "+r["AcceleratorCount"]+" "+string(m)] = true
				}
			}
		}
	}
	machines := 0
	for _, r := range gcp {
		if r["InstanceType"] == "" {
			continue
		}
		machines++
		name, n := gpusOfGCPMachine(r["InstanceType"])
		for _, m := range []Market{OnDemand, Spot} {
			if r.micros(t, priceColumn(m)) > 0 && priced[r["AvailabilityZone"]+" "+name+" "+strconv.Itoa(n)+" "+string(m)] &&
				!have[key{GCP, r["Region"], r["AvailabilityZone"], r["InstanceType"], m}] {
				t.Errorf("gcp %s %s %s at %s + its GPUs is not in the snapshot", r["AvailabilityZone"], r["InstanceType"], m, r[priceColumn(m)])
			}
		}
	}
	if machines == 0 {
		t.Error("no GCP machine rows read")
	}
}

// leftOutTypes are the types data/corrections.csv leaves out, with a GPU
// count of 0.
func leftOutTypes(t *testing.T) map[string]bool {
	out := make(map[string]bool)
	for _, r := range readData(t, "data/corrections.csv") {
		if r["gpus"] == "0" {
			out[r["instanceType"]] = true
		}
	}
	return out
}

// gpusOfGCPMachine is which GPUs a GCP GPU machine type carries, by the
// data's name, and how many, as GCE documents the a2, a3 and g2 series:
// "-8g" is 8, and the g2 sizes carry 1, 2, 4 or 8 L4s.
func gpusOfGCPMachine(name string) (string, int) {
	if size, ok := strings.CutPrefix(name, "g2-standard-"); ok {
		return "L4", map[string]int{"4": 1, "8": 1, "12": 1, "16": 1, "24": 2, "32": 1, "48": 4, "96": 8}[size]
	}
	parts := strings.Split(name, "-")
	if len(parts) < 3 {
		return "", 0
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(parts[2], "g"))
	series := map[string]string{
		"a2-highgpu": "A100", "a2-megagpu": "A100", "a2-ultragpu": "A100-80GB",
		"a3-highgpu": "H100", "a3-edgegpu": "H100", "a3-megagpu": "H100-MEGA", "a3-ultragpu": "H200",
	}
	return series[parts[0]+"-"+parts[1]], n
}

// TestSnapshotCoverage holds the snapshot to the universe of the data: the
// regions and instance types it lists are the data's, not a chosen few.
func TestSnapshotCoverage(t *testing.T) {
	c := Default()
	files := map[string]string{AWS: "data/aws-gpu.csv", Azure: "data/azure-gpu.csv", GCP: "data/gcp-gpu.csv", Lambda: "data/lambda.csv", OCI: "data/oci.csv"}
	for _, cloud := range Clouds {
		t.Run(cloud, func(t *testing.T) {
			dataTypes, dataRegions := make(map[string]bool), make(map[string]bool)
			leftOut := leftOutTypes(t)
			for _, r := range readData(t, files[cloud]) {
				_, located := CountryOf(cloud, r["Region"])
				if r["InstanceType"] != "" && (cloud != AWS && cloud != Lambda && cloud != OCI || r["AcceleratorName"] != "") && !leftOut[r["InstanceType"]] && (cloud != Lambda || located) {
					dataTypes[r["InstanceType"]] = true
					dataRegions[r["Region"]] = true
				}
			}
			types, regions := make(map[string]bool), make(map[string]bool)
			for _, o := range c.Offers {
				if o.Cloud == cloud {
					types[o.InstanceType] = true
					regions[o.Region] = true
				}
			}
			for name := range dataTypes {
				if !types[name] {
					t.Errorf("type %s is in the data, not in the snapshot", name)
				}
			}
			for name := range dataRegions {
				if !regions[name] {
					t.Errorf("region %s is in the data, not in the snapshot", name)
				}
			}
			t.Logf("%s: %d types, %d regions", cloud, len(types), len(regions))
		})
	}
}

// Reading the embedded snapshot: what the first Default of a process
// costs, and the snapshot's size.
func BenchmarkReadSnapshot(b *testing.B) {
	b.ReportAllocs()
	var c *Catalog
	for b.Loop() {
		var err error
		if c, err = Read(bytes.NewReader(snapshotJSON)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(c.Offers)), "offers")
	b.ReportMetric(float64(len(c.Regions)), "regions")
	b.ReportMetric(float64(len(snapshotJSON))/1024, "KiB")
}

// Default after the first: a copy a caller may change.
func BenchmarkDefault(b *testing.B) {
	b.ReportAllocs()
	Default()
	for b.Loop() {
		Default()
	}
}
