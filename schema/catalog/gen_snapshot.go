// SPDX-License-Identifier: Apache-2.0

//go:build ignore

// gen_snapshot writes snapshot.json, the catalog embedded in the package,
// from the public price rows in data/ (see data/README.md for where they
// come from). Run it with `go generate` in this directory after the data
// changes.
//
// The rows are the universe: every region, zone, instance type and price
// in the snapshot is one the data lists. A price is a quote, copied exactly,
// except for the few offers data/derived.csv keeps in regions the data does
// not cover; those are marked Derived. What the data holds but gpufleet
// cannot launch is counted and printed with its reason, never silently
// dropped.
package main

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// recordedAt is when the rows in data/ were read from their source; the
// source files carry no date of their own.
var recordedAt = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// sources are the files prices are read from, one per cloud.
var sources = []struct {
	cloud, id, file, what string
}{
	{catalog.AWS, "public-aws", "data/aws-gpu.csv", "AWS on-demand and spot prices per availability zone (zone ids), public GPU catalog skypilot-catalog catalogs/v7/aws/vms.csv at 001367d22a0033fac286a8c71aeac7109e431bcb"},
	{catalog.Azure, "public-azure", "data/azure-gpu.csv", "Azure on-demand and spot prices per region, public GPU catalog skypilot-catalog catalogs/v6/azure/vms.csv at 098741e70562f65d7af1cceb81e33b284f742604"},
	{catalog.GCP, "public-gcp", "data/gcp-gpu.csv", "GCP on-demand and spot prices per zone, machine and accelerators apart, public GPU catalog skypilot-catalog catalogs/v7/gcp/vms.csv at 017e2502fb63c7a28757acd94002b2d6099d3e3d"},
	{catalog.Lambda, "public-lambda", "data/lambda.csv", "Lambda Cloud on-demand prices per region, public GPU catalog skypilot-catalog catalogs/v7/lambda/vms.csv at 11580132cea293395776b033c8533714d42abb4e"},
	{catalog.OCI, "public-oci", "data/oci.csv", "OCI on-demand prices per availability domain, public GPU catalog skypilot-catalog catalogs/v6/oci/vms.csv at 6e3a02d25e04a22b358168a5f95f8ac620424683, GPU shapes only"},
}

// egress is in US$ per GB; the AWS internet rate is its first 10 TB tier,
// the one a fleet's checkpoints and datasets mostly fall in.
var egress = []struct {
	cloud                 string
	interRegion, internet float64
}{
	{catalog.AWS, 0.02, 0.09},
	{catalog.Azure, 0.02, 0.087},
	{catalog.GCP, 0.02, 0.12},
	// Lambda charges nothing for data transfer.
	{catalog.Lambda, 0, 0},
	// OCI's first 10 TB a month to the internet are free and the rest
	// $0.0085 per GB in North America and Europe; between regions it
	// charges the same rate.
	{catalog.OCI, 0.0085, 0.0085},
}

func main() {
	// -o lets the package's test regenerate into a scratch file and compare.
	output := flag.String("o", "snapshot.json", "file to write")
	quiet := flag.Bool("q", false, "do not print what was skipped")
	flag.Parse()
	b := newBuilder()
	snapshot, err := b.build()
	if err != nil {
		log.Fatalf("gen_snapshot: %v", err)
	}
	var out bytes.Buffer
	if err := snapshot.Write(&out); err != nil {
		log.Fatalf("gen_snapshot: %v", err)
	}
	if err := os.WriteFile(*output, out.Bytes(), 0o644); err != nil {
		log.Fatalf("gen_snapshot: %v", err)
	}
	if *quiet {
		return
	}
	fmt.Printf("%s: %d regions, %d offers, %d bytes\n", *output, len(snapshot.Regions), len(snapshot.Offers), out.Len())
	for _, cloud := range catalog.Clouds {
		n, derived := 0, 0
		for _, o := range snapshot.Offers {
			if o.Cloud == cloud {
				n++
				if o.Derived {
					derived++
				}
			}
		}
		fmt.Printf("  %s: %d rows read, %d offers (%d derived)\n", cloud, b.rows[cloud], n, derived)
		for _, reason := range slices.Sorted(maps.Keys(b.skipped[cloud])) {
			fmt.Printf("    %d skipped: %s\n", b.skipped[cloud][reason], reason)
		}
	}
}

type builder struct {
	c *catalog.Catalog
	// zones holds, per region, the zones rows name, by zone id where the
	// cloud has them.
	zones   map[place]map[string]string
	offers  map[offerKey]int
	rows    map[string]int
	skipped map[string]map[string]int
}

type place struct{ cloud, region string }

func newBuilder() *builder {
	return &builder{
		c:       &catalog.Catalog{Source: "snapshot", FetchedAt: recordedAt},
		zones:   make(map[place]map[string]string),
		offers:  make(map[offerKey]int),
		rows:    make(map[string]int),
		skipped: make(map[string]map[string]int),
	}
}

func (b *builder) skip(cloud, reason string) {
	if b.skipped[cloud] == nil {
		b.skipped[cloud] = make(map[string]int)
	}
	b.skipped[cloud][reason]++
}

func (b *builder) build() (*catalog.Catalog, error) {
	if err := readCorrections("data/corrections.csv"); err != nil {
		return nil, err
	}
	for _, s := range sources {
		b.c.Sources = append(b.c.Sources, catalog.Source{ID: s.id, What: s.what, Date: recordedAt})
		rows, err := readRows(s.file)
		if err != nil {
			return nil, err
		}
		b.rows[s.cloud] = len(rows)
		switch s.cloud {
		case catalog.AWS:
			err = b.aws(s.id, rows)
		case catalog.Azure:
			err = b.azure(s.id, rows)
		case catalog.GCP:
			err = b.gcp(s.id, rows)
		case catalog.Lambda:
			err = b.lambda(s.id, rows)
		case catalog.OCI:
			err = b.oci(s.id, rows)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := b.derived("data/derived.csv"); err != nil {
		return nil, err
	}
	if err := b.regions(); err != nil {
		return nil, err
	}
	for _, e := range egress {
		b.c.Egress = append(b.c.Egress, catalog.Egress{
			Cloud:                  e.cloud,
			InterRegionMicrosPerGB: catalog.Micros(e.interRegion),
			InternetMicrosPerGB:    catalog.Micros(e.internet),
		})
	}

	c := b.c
	// Sorted so that regenerating after a data change gives a small diff.
	slices.SortFunc(c.Regions, func(a, b catalog.Region) int {
		return cmp.Or(strings.Compare(a.Cloud, b.Cloud), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(c.Offers, func(a, b catalog.Offer) int {
		return cmp.Or(
			strings.Compare(a.Cloud, b.Cloud),
			strings.Compare(a.Region, b.Region),
			strings.Compare(a.Zone, b.Zone),
			strings.Compare(a.InstanceType, b.InstanceType),
			strings.Compare(string(a.Market), string(b.Market)),
		)
	})
	slices.SortFunc(c.Egress, func(a, b catalog.Egress) int { return strings.Compare(a.Cloud, b.Cloud) })
	c.AddQuotaUses()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// row is one line of a data file, by column name, with its line number
// for errors.
type row struct {
	file string
	line int
	col  map[string]string
}

func (r row) get(name string) string { return strings.TrimSpace(r.col[name]) }

func (r row) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", r.file, r.line, fmt.Sprintf(format, args...))
}

func readRows(file string) ([]row, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	header, err := rd.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the header, %w", file, err)
	}
	var rows []row
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		r := row{file: file, line: line, col: make(map[string]string, len(header))}
		for i, name := range header {
			r.col[name] = rec[i]
		}
		rows = append(rows, r)
	}
}

// number parses a column the data writes as a decimal ("8.0", "96.0").
func (r row) number(name string) (float64, error) {
	v, err := strconv.ParseFloat(r.get(name), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errorf("%s %q is not a number", name, r.get(name))
	}
	return v, nil
}

func (r row) count(name string) (int, error) {
	v, err := r.number(name)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || v < 0 {
		return 0, r.errorf("%s %q is not a whole count", name, r.get(name))
	}
	return int(v), nil
}

// price is a row's price column in micro-dollars; false when the column is
// empty, as the data has it where a type is not sold that way.
func (r row) price(name string) (int64, bool, error) {
	if r.get(name) == "" {
		return 0, false, nil
	}
	v, err := r.number(name)
	if err != nil {
		return 0, false, err
	}
	if v <= 0 {
		return 0, false, r.errorf("%s %q is not a positive price", name, r.get(name))
	}
	return catalog.Micros(v), true, nil
}

// model is the normalised GPU model of the data's accelerator name. The
// data's bare "A100" is the 40GB part on all three clouds (AWS's p4d rows
// say 40960 MiB, GCP's a2-highgpu and Azure's ND A100 v4 carry it).
func model(r row, name string) (string, error) {
	if name == "A100" {
		return "A100-40GB", nil
	}
	if m, ok := catalog.NormalizeGPU(name); ok {
		return m, nil
	}
	return "", r.errorf("accelerator %q has no GPU model in gpu.go", name)
}

// shape reads the instance facts every cloud's rows share.
func shape(r row, cloud, accelName string) (catalog.Offer, error) {
	m, err := model(r, accelName)
	if err != nil {
		return catalog.Offer{}, err
	}
	gpus, err := r.count("AcceleratorCount")
	if err != nil {
		return catalog.Offer{}, err
	}
	vcpus, err := r.count("vCPUs")
	if err != nil {
		return catalog.Offer{}, err
	}
	mem, err := r.number("MemoryGiB")
	if err != nil {
		return catalog.Offer{}, err
	}
	if n, ok := corrections[[2]string{cloud, r.get("InstanceType")}]; ok {
		gpus = n
	}
	return catalog.Offer{Cloud: cloud, InstanceType: r.get("InstanceType"), GPUModel: m, GPUs: gpus, VCPUs: vcpus, MemoryGiB: mem}, nil
}

// corrections are GPU counts data/corrections.csv says the rows have wrong,
// each with the source that says so, by cloud and instance type; a count of
// 0 leaves the type out (a size with a fraction of a GPU).
var corrections = map[[2]string]int{}

func readCorrections(file string) error {
	rows, err := readRows(file)
	if err != nil {
		return err
	}
	for _, r := range rows {
		n, err := r.count("gpus")
		if err != nil {
			return err
		}
		if r.get("why") == "" {
			return r.errorf("a correction needs a why")
		}
		corrections[[2]string{r.get("cloud"), r.get("instanceType")}] = n
	}
	return nil
}

// offer adds the on-demand and spot offers of one row, skipping a market
// the row has no price for.
func (b *builder) offer(r row, o catalog.Offer, onDemand, spot string) error {
	for _, m := range []struct {
		market catalog.Market
		column string
	}{{catalog.OnDemand, onDemand}, {catalog.Spot, spot}} {
		p, ok, err := r.price(m.column)
		if err != nil {
			return err
		}
		if !ok {
			b.skip(o.Cloud, fmt.Sprintf("no %s price listed (the offer is left out, the type's other market kept)", m.market))
			continue
		}
		o.Market, o.PriceMicros = m.market, p
		if err := b.add(r, o); err != nil {
			return err
		}
	}
	return nil
}

type offerKey struct {
	cloud, region, zone, instanceType string
	market                            catalog.Market
}

// add adds one offer. The data lists some types twice in a zone, once with
// a spot price and once without (AWS p4de): a price listed again the same
// is one offer, a price listed again differently is an error in the data.
func (b *builder) add(r row, o catalog.Offer) error {
	k := offerKey{o.Cloud, o.Region, o.Zone, o.InstanceType, o.Market}
	if i, ok := b.offers[k]; ok {
		if first := b.c.Offers[i]; first != o {
			return r.errorf("%s %s %s %s %s is listed again at %s, first at %s", o.Cloud, o.Region, o.Zone, o.InstanceType, o.Market,
				catalog.FormatMicros(o.PriceMicros), catalog.FormatMicros(first.PriceMicros))
		}
		b.skip(o.Cloud, "an offer listed again with the same price")
		return nil
	}
	b.offers[k] = len(b.c.Offers)
	b.c.Offers = append(b.c.Offers, o)
	return nil
}

// gcpReference finds, for a machine row whose zone has no row pricing its
// GPUs, the zone whose GPU price to borrow: one where the same machine type
// and its GPUs are both priced, in the same geography if there is one,
// else anywhere; the first such by region and zone, so the choice is
// stable. It returns that zone's machine row and GPU row.
func (b *builder) gcpReference(rows []row, machine row, accels map[gcpAccelKey]row, name string, n int) (row, row, bool) {
	country, _ := catalog.CountryOf(catalog.GCP, machine.get("Region"))
	var best, bestGPUs row
	bestRank := ""
	for _, r := range rows {
		if r.get("InstanceType") != machine.get("InstanceType") || r.get("Region") == machine.get("Region") {
			continue
		}
		a, ok := accels[gcpAccelKey{r.get("AvailabilityZone"), name, n}]
		if !ok {
			continue
		}
		other, _ := catalog.CountryOf(catalog.GCP, r.get("Region"))
		rank := "1"
		if geo(other) == geo(country) {
			rank = "0"
		}
		rank += r.get("Region") + " " + r.get("AvailabilityZone")
		if bestRank == "" || rank < bestRank {
			best, bestGPUs, bestRank = r, a, rank
		}
	}
	if bestRank == "" {
		return row{}, row{}, false
	}
	return best, bestGPUs, true
}

func (b *builder) zone(cloud, region, name, id string) {
	p := place{cloud, region}
	if b.zones[p] == nil {
		b.zones[p] = make(map[string]string)
	}
	b.zones[p][name] = id
}

// aws reads zone-level rows. The data names zones by zone id (use1-az4),
// which is the same place in every account; zone names (us-east-1a) are
// assigned per account. The snapshot names zone idN after the Nth letter
// and records the ids beside the names; a refresh reads the account's own
// mapping from DescribeAvailabilityZones.
func (b *builder) aws(source string, rows []row) error {
	for _, r := range rows {
		accel := r.get("AcceleratorName")
		if accel == "" {
			b.skip(catalog.AWS, "no accelerator named")
			continue
		}
		o, err := shape(r, catalog.AWS, accel)
		if err != nil {
			return err
		}
		o.Region, o.Source = r.get("Region"), source
		id := r.get("AvailabilityZone")
		name, err := awsZoneName(o.Region, id)
		if err != nil {
			return r.errorf("%v", err)
		}
		o.Zone = name
		b.zone(catalog.AWS, o.Region, name, id)
		if err := b.offer(r, o, "Price", "SpotPrice"); err != nil {
			return err
		}
	}
	return nil
}

func awsZoneName(region, id string) (string, error) {
	_, n, ok := strings.Cut(id, "-az")
	k, err := strconv.Atoi(n)
	if !ok || err != nil || k < 1 || k > 26 {
		return "", fmt.Errorf("zone id %q is not of the form <region code>-az<N>", id)
	}
	return region + string(rune('a'+k-1)), nil
}

// azure reads region-level rows: Azure's price list has no zones. Azure
// names its zones "1", "2" and "3" in every region; the catalog qualifies
// them with the region ("eastus-1", as AKS zone labels do) so that a zone
// names one place, as it does on AWS and GCP. The Azure provider sends ARM
// the bare number.
func (b *builder) azure(source string, rows []row) error {
	seen := make(map[string]int)
	for _, r := range rows {
		o, err := shape(r, catalog.Azure, r.get("AcceleratorName"))
		if err != nil {
			return err
		}
		if o.GPUs == 0 {
			b.skip(catalog.Azure, "a size with a fraction of a GPU (data/corrections.csv)")
			continue
		}
		o.Region, o.Source = r.get("Region"), source
		key := o.Region + " " + o.InstanceType
		if line, ok := seen[key]; ok {
			return r.errorf("%s is listed again (first at line %d)", key, line)
		}
		seen[key] = r.line
		for _, z := range []string{"1", "2", "3"} {
			b.zone(catalog.Azure, o.Region, o.Region+"-"+z, "")
		}
		if err := b.offer(r, o, "Price", "SpotPrice"); err != nil {
			return err
		}
	}
	return nil
}

// gcpAccelerators says which accelerator rows price a GPU machine type's
// GPUs, by the data's name, and how many the type carries: the machine type
// rows price the host alone. GCE's machineTypes API gives the same facts.
func gcpAccelerators(instanceType string) (string, int, bool) {
	family, size, _ := strings.Cut(instanceType, "-")
	series, rest, _ := strings.Cut(size, "-")
	if family == "g2" && series == "standard" {
		// L4s per g2 size, by vCPUs.
		n, ok := map[string]int{"4": 1, "8": 1, "12": 1, "16": 1, "24": 2, "32": 1, "48": 4, "96": 8}[rest]
		return "L4", n, ok
	}
	name, ok := map[string]string{
		"a2-highgpu": "A100", "a2-megagpu": "A100", "a2-ultragpu": "A100-80GB",
		"a3-highgpu": "H100", "a3-edgegpu": "H100", "a3-megagpu": "H100-MEGA", "a3-ultragpu": "H200",
	}[family+"-"+series]
	if !ok {
		return "", 0, false
	}
	count, _, _ := strings.Cut(rest, "-") // "8g-nolssd"
	n, err := strconv.Atoi(strings.TrimSuffix(count, "g"))
	return name, n, err == nil && strings.HasSuffix(count, "g") && n > 0
}

type gcpAccelKey struct {
	zone, name string
	count      int
}

// gcp joins each machine type's zone row with the row pricing its GPUs in
// the same zone. Accelerator rows no machine type of the data attaches are
// counted: the T4, V100, P4 and P100 attach to N1 hosts and the B200 to A4
// hosts, whose rows the data does not have, and TPU slices are launched
// through the TPU API, not as instances.
func (b *builder) gcp(source string, rows []row) error {
	type accelKey = gcpAccelKey
	accels := make(map[accelKey]row)
	used := make(map[accelKey]bool)
	for _, r := range rows {
		if r.get("InstanceType") != "" {
			continue
		}
		name := r.get("AcceleratorName")
		n, err := r.count("AcceleratorCount")
		if err != nil {
			return err
		}
		k := accelKey{r.get("AvailabilityZone"), name, n}
		if first, ok := accels[k]; ok {
			if !maps.Equal(first.col, r.col) {
				return r.errorf("%s ×%d in %s is priced twice, differently (line %d)", name, n, k.zone, first.line)
			}
			b.skip(catalog.GCP, "a row repeated exactly")
			continue
		}
		accels[k] = r
	}
	for _, r := range rows {
		if r.get("InstanceType") == "" {
			continue
		}
		name, n, ok := gcpAccelerators(r.get("InstanceType"))
		if !ok {
			return r.errorf("machine type %s: which GPUs it carries is not known", r.get("InstanceType"))
		}
		zone := r.get("AvailabilityZone")
		k := accelKey{zone, name, n}
		a, quoted := accels[k]
		var ref row // the machine row of the zone whose GPU price is borrowed
		if !quoted {
			if ref, a, quoted = b.gcpReference(rows, r, accels, name, n); !quoted {
				b.skip(catalog.GCP, "a machine type whose GPUs have no price in its zone or any other")
				continue
			}
		} else {
			used[k] = true
		}
		m, err := model(r, name)
		if err != nil {
			return err
		}
		vcpus, err := r.count("vCPUs")
		if err != nil {
			return err
		}
		mem, err := r.number("MemoryGiB")
		if err != nil {
			return err
		}
		o := catalog.Offer{
			Cloud: catalog.GCP, Region: r.get("Region"), Zone: zone, InstanceType: r.get("InstanceType"),
			GPUModel: m, GPUs: n, VCPUs: vcpus, MemoryGiB: mem, Source: source,
		}
		b.zone(catalog.GCP, o.Region, zone, "")
		for _, market := range []struct {
			m      catalog.Market
			column string
		}{{catalog.OnDemand, "Price"}, {catalog.Spot, "SpotPrice"}} {
			host, hostOK, err := r.price(market.column)
			if err != nil {
				return err
			}
			gpus, gpusOK, err := a.price(market.column)
			if err != nil {
				return err
			}
			if !hostOK || !gpusOK {
				b.skip(catalog.GCP, fmt.Sprintf("no %s price listed for the machine or its GPUs (the offer is left out, the type's other market kept)", market.m))
				continue
			}
			if ref.col != nil {
				// GCP sets a region's GPU and machine prices apart, so the
				// borrowed GPU price is scaled by the two zones' machine
				// prices: an estimate, and marked so.
				refHost, refOK, err := ref.price(market.column)
				if err != nil {
					return err
				}
				if !refOK {
					b.skip(catalog.GCP, fmt.Sprintf("no %s price listed for the machine or its GPUs (the offer is left out, the type's other market kept)", market.m))
					continue
				}
				gpus = int64(math.Round(float64(gpus)*float64(host)/float64(refHost)/100)) * 100
				o.Derived = true
			}
			o.Market, o.PriceMicros = market.m, host+gpus
			if err := b.add(r, o); err != nil {
				return err
			}
		}
	}
	attached := make(map[string]bool)
	for k := range used {
		attached[k.name] = true
	}
	for k := range accels {
		switch {
		case used[k]:
		case strings.HasPrefix(k.name, "tpu-"):
			b.skip(catalog.GCP, "a TPU slice (launched through the TPU API, not as an instance)")
		case attached[k.name]:
			b.skip(catalog.GCP, fmt.Sprintf("%s GPUs priced in a zone or a count no machine type of the data has there", k.name))
		default:
			b.skip(catalog.GCP, fmt.Sprintf("%s GPUs, whose host machine types are not in the data", k.name))
		}
	}
	return nil
}

// lambda reads region-level rows. Lambda Cloud has no zones and no spot
// market: each region is its own single zone, named as the region, and an
// instance type is sold on demand only. The rows list every type in every
// region; which have room right now only the API says
// (regions_with_capacity_available), and the provider reads it.
func (b *builder) lambda(source string, rows []row) error {
	seen := make(map[string]int)
	for _, r := range rows {
		accel := r.get("AcceleratorName")
		if accel == "" {
			b.skip(catalog.Lambda, "no accelerator named (a CPU-only type)")
			continue
		}
		region := r.get("Region")
		if _, ok := catalog.CountryOf(catalog.Lambda, region); !ok {
			b.skip(catalog.Lambda, "a region Lambda publishes no location for")
			continue
		}
		o, err := shape(r, catalog.Lambda, accel)
		if err != nil {
			return err
		}
		o.Region, o.Zone, o.Source = region, region, source
		key := o.Region + " " + o.InstanceType
		if line, ok := seen[key]; ok {
			return r.errorf("%s is listed again (first at line %d)", key, line)
		}
		seen[key] = r.line
		if r.get("SpotPrice") != "" {
			return r.errorf("Lambda has no spot market, but the row lists a spot price")
		}
		b.zone(catalog.Lambda, o.Region, o.Zone, "")
		p, ok, err := r.price("Price")
		if err != nil {
			return err
		}
		if !ok {
			b.skip(catalog.Lambda, "no on-demand price listed")
			continue
		}
		o.Market, o.PriceMicros = catalog.OnDemand, p
		if err := b.add(r, o); err != nil {
			return err
		}
	}
	return nil
}

// oci reads availability-domain rows. The data names a domain by the part
// of its name every tenancy shares (PHX-AD-1; an account sees it behind a
// prefix of its own, Uocm:PHX-AD-1), in upper case as OCI writes it, which
// one region's rows do not: the snapshot writes it so everywhere. GPU
// shapes are sold on demand only (preemptible capacity is a CPU offer);
// the CPU rows are left out.
func (b *builder) oci(source string, rows []row) error {
	seen := make(map[string]int)
	for _, r := range rows {
		accel := r.get("AcceleratorName")
		if accel == "" {
			b.skip(catalog.OCI, "no accelerator named (a CPU shape)")
			continue
		}
		o, err := shape(r, catalog.OCI, accel)
		if err != nil {
			return err
		}
		o.Region, o.Zone, o.Source = r.get("Region"), strings.ToUpper(r.get("AvailabilityZone")), source
		if o.Region == "" || o.Zone == "" {
			return r.errorf("a row needs a region and an availability domain")
		}
		key := o.Zone + " " + o.InstanceType
		if line, ok := seen[key]; ok {
			return r.errorf("%s is listed again (first at line %d)", key, line)
		}
		seen[key] = r.line
		if r.get("SpotPrice") != "" {
			return r.errorf("OCI sells GPU shapes on demand only, but the row lists a spot price")
		}
		b.zone(catalog.OCI, o.Region, o.Zone, "")
		p, ok, err := r.price("Price")
		if err != nil {
			return err
		}
		if !ok {
			b.skip(catalog.OCI, "no on-demand price listed")
			continue
		}
		o.Market, o.PriceMicros = catalog.OnDemand, p
		if err := b.add(r, o); err != nil {
			return err
		}
	}
	return nil
}

// derived reads data/derived.csv: offers kept in regions the public data
// does not cover, priced from the same type's quote in a base region times
// a regional level and rounded to $0.0001. They are marked Derived, and
// plans that use one say so.
func (b *builder) derived(file string) error {
	rows, err := readRows(file)
	if err != nil {
		return err
	}
	type key struct {
		cloud, region, instanceType string
		market                      catalog.Market
	}
	quoted := make(map[key]catalog.Offer)
	for _, o := range b.c.Offers {
		if o.Zone == "" {
			quoted[key{o.Cloud, o.Region, o.InstanceType, o.Market}] = o
		}
	}
	for _, r := range rows {
		cloud, region, base := r.get("cloud"), r.get("region"), r.get("baseRegion")
		level, err := r.number("level")
		if err != nil {
			return err
		}
		if _, ok := catalog.CountryOf(cloud, region); !ok {
			return r.errorf("%s region %q has no country", cloud, region)
		}
		found := false
		for _, market := range []catalog.Market{catalog.OnDemand, catalog.Spot} {
			o, ok := quoted[key{cloud, base, r.get("instanceType"), market}]
			if !ok {
				continue
			}
			found = true
			if _, clash := quoted[key{cloud, region, o.InstanceType, market}]; clash {
				return r.errorf("%s %s %s is quoted: a derived price may not replace a quote", cloud, region, o.InstanceType)
			}
			o.Region, o.Derived = region, true
			o.PriceMicros = int64(math.Round(float64(o.PriceMicros)*level/100)) * 100
			if err := b.add(r, o); err != nil {
				return err
			}
		}
		if !found {
			return r.errorf("%s %s is not quoted in %s", cloud, r.get("instanceType"), base)
		}
		if cloud == catalog.Azure {
			for _, z := range []string{"1", "2", "3"} {
				b.zone(cloud, region, region+"-"+z, "")
			}
		}
	}
	return nil
}

// regions lists every region an offer is in, with the zones rows named,
// its country and its coarse geography.
func (b *builder) regions() error {
	for p, zones := range b.zones {
		country, ok := catalog.CountryOf(p.cloud, p.region)
		if !ok {
			return fmt.Errorf("%s region %q has no country in country.go", p.cloud, p.region)
		}
		r := catalog.Region{Cloud: p.cloud, Name: p.region, Country: country, Geo: geo(country)}
		for _, name := range slices.Sorted(maps.Keys(zones)) {
			r.Zones = append(r.Zones, name)
			if id := zones[name]; id != "" {
				r.ZoneIDs = append(r.ZoneIDs, id)
			}
		}
		if len(r.ZoneIDs) > 0 && len(r.ZoneIDs) != len(r.Zones) {
			return fmt.Errorf("%s %s: some zones have ids and some not", p.cloud, p.region)
		}
		b.c.Regions = append(b.c.Regions, r)
	}
	return nil
}

// geo is the coarse geography reports show beside a region.
func geo(country string) string {
	for _, g := range []struct{ geo, name string }{
		{"us", "us"}, {"ca", "ca"}, {"eu", "europe"}, {"ap", "apac"},
		{"sa", "latam"}, {"me", "middle-east"}, {"af", "africa"},
	} {
		if countries, _ := catalog.GeoCountries(g.name); slices.Contains(countries, country) {
			return g.geo
		}
	}
	return "other"
}
