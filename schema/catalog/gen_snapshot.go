//go:build ignore

// gen_snapshot writes snapshot.json, the catalog embedded in the package.
// Run it with `go generate` in this directory after editing the tables below.
//
// Every price is one of two kinds. A quote is a public catalog figure
// (prices.md in the team's shared facts), copied exactly. A derived price
// fills a region or size no quote covers: it takes a quote of the same
// family — the same type in the nearest quoted region, preferring the same
// geography, else the cloud's reference region — and scales it by the ratio
// of the two regions' price levels and, for another size or memory variant,
// by a named factor. A base with no spot quote gives a derived row no spot
// offer. Derived prices are rounded to $0.0001, the precision clouds publish.
package main

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	aws   = catalog.AWS
	azure = catalog.Azure
	gcp   = catalog.GCP
)

var fetchedAt = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// A region's level is its price relative to its cloud's reference region
// (us-east-1, eastus, us-central1). Where a quote exists in both, the level
// is their ratio rounded to 0.01 (the row it comes from is named); otherwise
// it is the geography's default: us 1.00, ca 1.10, eu 1.08, ap 1.20.
type region struct {
	cloud, name, geo string
	level            float64
	zones            []string
}

var regions = []region{
	{aws, "us-east-1", "us", 1.00, zones("us-east-1", "a", "b", "c", "d", "e", "f")},
	{aws, "us-east-2", "us", 1.00, zones("us-east-2", "a", "b", "c")},
	{aws, "us-west-2", "us", 1.00, zones("us-west-2", "a", "b", "c")},           // p5 quote: same as us-east-1
	{aws, "ca-central-1", "ca", 1.15, zones("ca-central-1", "a", "b", "d")},     // p5 113.07 / 98.32
	{aws, "eu-west-1", "eu", 1.08, zones("eu-west-1", "a", "b", "c")},           // p4d 35.40 / 32.77 (g4dn says 1.12)
	{aws, "eu-central-1", "eu", 1.25, zones("eu-central-1", "a", "b", "c")},     // g6e.2xlarge 2.80 / 2.24
	{aws, "eu-north-1", "eu", 1.07, zones("eu-north-1", "a", "b", "c")},         // p5 105.20 / 98.32
	{aws, "ap-northeast-1", "ap", 1.25, zones("ap-northeast-1", "a", "c", "d")}, // p5 123.19 / 98.32, p5en 106.00 / 84.80
	{aws, "ap-northeast-2", "ap", 1.23, zones("ap-northeast-2", "a", "b", "c")}, // g5.12xlarge 6.97 / 5.67
	{aws, "ap-south-1", "ap", 1.20, zones("ap-south-1", "a", "b", "c")},         // p4d 39.32 / 32.77

	{azure, "eastus", "us", 1.00, zones("eastus-", "1", "2", "3")},
	{azure, "eastus2", "us", 1.00, zones("eastus2-", "1", "2", "3")},
	{azure, "westus", "us", 1.20, zones("westus-", "1", "2", "3")}, // NC4as_T4_v3 0.631 / 0.526
	{azure, "westus3", "us", 1.00, zones("westus3-", "1", "2", "3")},
	{azure, "southcentralus", "us", 1.00, zones("southcentralus-", "1", "2", "3")},
	{azure, "northeurope", "eu", 1.08, zones("northeurope-", "1", "2", "3")},
	{azure, "westeurope", "eu", 1.08, zones("westeurope-", "1", "2", "3")},
	{azure, "swedencentral", "eu", 1.08, zones("swedencentral-", "1", "2", "3")},
	{azure, "japaneast", "ap", 1.20, zones("japaneast-", "1", "2", "3")},

	{gcp, "us-central1", "us", 1.00, zones("us-central1-", "a", "b", "c", "f")},
	// Northern Virginia costs more than Iowa on GCP for machines; the one
	// GPU figure known there (H100) is quoted directly.
	{gcp, "us-east4", "us", 1.12, zones("us-east4-", "a", "b", "c")},
	{gcp, "us-east1", "us", 1.00, zones("us-east1-", "b", "c", "d")},
	{gcp, "us-west1", "us", 1.00, zones("us-west1-", "a", "b", "c")},
	// europe-west4's a3 quote (GPUs at 3× us-central1) is a per-model
	// outlier, not a regional level, so the geography default is used.
	{gcp, "europe-west4", "eu", 1.08, zones("europe-west4-", "a", "b", "c")},
	{gcp, "europe-west1", "eu", 1.08, zones("europe-west1-", "b", "c", "d")},
	{gcp, "asia-northeast1", "ap", 1.20, zones("asia-northeast1-", "a", "b", "c")},
	{gcp, "asia-southeast1", "ap", 1.20, zones("asia-southeast1-", "a", "b", "c")},
}

// Azure names its zones "1", "2" and "3" in every region; the catalog
// qualifies them with the region ("eastus-1", as AKS zone labels do) so that
// a zone names one place, as it does on AWS and GCP. The Azure provider
// sends ARM the bare number.

func zones(prefix string, suffixes ...string) []string {
	names := make([]string, len(suffixes))
	for i, s := range suffixes {
		names[i] = prefix + s
	}
	return names
}

// shape is what an instance type is, from the clouds' instance specs.
type shape struct {
	gpuModel  string
	gpus      int
	vcpus     int
	memoryGiB float64
}

var shapes = map[string]shape{
	"p5.48xlarge":   {"H100", 8, 192, 2048},
	"p5en.48xlarge": {"H200", 8, 192, 2048},
	"p4d.24xlarge":  {"A100-40GB", 8, 96, 1152},
	"p4de.24xlarge": {"A100-80GB", 8, 96, 1152},
	"g6e.2xlarge":   {"L40S", 1, 8, 64},
	"g6e.48xlarge":  {"L40S", 8, 192, 1536},
	"g6.2xlarge":    {"L4", 1, 8, 32},
	"g6.12xlarge":   {"L4", 4, 48, 192},
	"g6.24xlarge":   {"L4", 4, 96, 384},
	"g5.12xlarge":   {"A10G", 4, 48, 192},
	"g4dn.xlarge":   {"T4", 1, 4, 16},

	"Standard_ND96isr_H100_v5":  {"H100", 8, 96, 1900},
	"Standard_ND96isr_H200_v5":  {"H200", 8, 96, 1850},
	"Standard_NC40ads_H100_v5":  {"H100", 1, 40, 320},
	"Standard_ND96asr_v4":       {"A100-40GB", 8, 96, 900},
	"Standard_ND96amsr_A100_v4": {"A100-80GB", 8, 96, 1900},
	"Standard_NC24ads_A100_v4":  {"A100-80GB", 1, 24, 220},
	"Standard_NV36ads_A10_v5":   {"A10G", 1, 36, 440},
	"Standard_NC4as_T4_v3":      {"T4", 1, 4, 28},

	"a3-highgpu-8g":  {"H100", 8, 208, 1872},
	"a3-ultragpu-8g": {"H200", 8, 224, 2952},
	"a2-highgpu-1g":  {"A100-40GB", 1, 12, 85},
	"a2-highgpu-4g":  {"A100-40GB", 4, 48, 340},
	"a2-highgpu-8g":  {"A100-40GB", 8, 96, 680},
	"a2-ultragpu-1g": {"A100-80GB", 1, 12, 170},
	"a2-ultragpu-8g": {"A100-80GB", 8, 96, 1360},
	"g2-standard-4":  {"L4", 1, 4, 16},
	"g2-standard-48": {"L4", 4, 48, 192},
}

// price is one market's US$ per node-hour. GCP bills a GPU VM as machine
// plus attached GPUs and is quoted that way; the parts stay apart until the
// offer is written because a size change scales them differently. AWS and
// Azure quote whole instances, held in machine.
type price struct{ machine, gpus float64 }

func whole(dollars float64) *price       { return &price{machine: dollars} }
func parts(machine, gpus float64) *price { return &price{machine, gpus} }

// noSpot marks a quote whose spot column is "—".
var noSpot *price

// factor scales a base quote to another size or GPU variant.
type factor struct{ machine, gpus float64 }

func uniform(f float64) factor          { return factor{f, f} }
func (f factor) times(k float64) factor { return factor{f.machine * k, f.gpus * k} }

var (
	same = uniform(1)
	// a100With80GB is Azure's premium for 80GB A100s over 40GB ones
	// (ND96amsr_A100_v4 32.77 / ND96asr_v4 27.20, eastus); AWS and GCP have
	// no 80GB A100 quote, so they borrow it.
	a100With80GB = uniform(32.77 / 27.20)
	// h200OverH100 is AWS's p5en / p5 ratio in us-east-1 (84.80 / 98.32);
	// Azure's ND H200 v5 has no quote.
	h200OverH100 = uniform(84.80 / 98.32)
)

// row is one instance type in one region, priced in both markets.
type row struct {
	cloud, region, instanceType string

	// Set on quotes.
	onDemand, spot *price
	spotZone       string // the one zone a zone-level spot quote applies to

	// Set on derived rows.
	baseType, baseRegion string
	scale                factor
	gpusOnDemand         float64 // a quoted GPU part that replaces the derived one
}

func quote(cloud, region, instanceType string, onDemand, spot *price) row {
	return row{cloud: cloud, region: region, instanceType: instanceType, onDemand: onDemand, spot: spot}
}

func like(cloud, region, instanceType, baseRegion string) row {
	return scaled(cloud, region, instanceType, instanceType, baseRegion, same)
}

func scaled(cloud, region, instanceType, baseType, baseRegion string, scale factor) row {
	return row{cloud: cloud, region: region, instanceType: instanceType, baseType: baseType, baseRegion: baseRegion, scale: scale}
}

func (r row) spotOnlyIn(zone string) row         { r.spotZone = zone; return r }
func (r row) withGPUsQuoted(dollars float64) row { r.gpusOnDemand = dollars; return r }

var rows = []row{
	// p5.48xlarge, 8×H100: a handful of regions.
	quote(aws, "us-east-1", "p5.48xlarge", whole(98.32), whole(30.33)),
	like(aws, "us-east-2", "p5.48xlarge", "us-east-1"),
	quote(aws, "us-west-2", "p5.48xlarge", whole(98.32), whole(33.24)),
	quote(aws, "ca-central-1", "p5.48xlarge", whole(113.07), whole(113.07)), // spot equals on-demand
	quote(aws, "eu-north-1", "p5.48xlarge", whole(105.20), whole(28.53)).spotOnlyIn("eu-north-1b"),
	quote(aws, "ap-northeast-1", "p5.48xlarge", whole(123.19), whole(40.10)),

	// p5en.48xlarge, 8×H200.
	quote(aws, "us-east-1", "p5en.48xlarge", whole(84.80), whole(24.29)),
	like(aws, "us-east-2", "p5en.48xlarge", "us-east-1"),
	like(aws, "us-west-2", "p5en.48xlarge", "us-east-1"),
	quote(aws, "ap-northeast-1", "p5en.48xlarge", whole(106.00), whole(32.62)),

	// p4d.24xlarge, 8×A100 40GB.
	quote(aws, "us-east-1", "p4d.24xlarge", whole(32.77), whole(6.79)),
	like(aws, "us-east-2", "p4d.24xlarge", "us-east-1"),
	like(aws, "us-west-2", "p4d.24xlarge", "us-east-1"),
	like(aws, "ca-central-1", "p4d.24xlarge", "us-east-1"),
	quote(aws, "eu-west-1", "p4d.24xlarge", whole(35.40), whole(16.32)),
	like(aws, "eu-central-1", "p4d.24xlarge", "eu-west-1"),
	like(aws, "ap-northeast-1", "p4d.24xlarge", "ap-south-1"),
	like(aws, "ap-northeast-2", "p4d.24xlarge", "ap-south-1"),
	quote(aws, "ap-south-1", "p4d.24xlarge", whole(39.32), noSpot),

	// p4de.24xlarge, 8×A100 80GB: us-east-1 and us-west-2 only.
	scaled(aws, "us-east-1", "p4de.24xlarge", "p4d.24xlarge", "us-east-1", a100With80GB),
	scaled(aws, "us-west-2", "p4de.24xlarge", "p4d.24xlarge", "us-east-1", a100With80GB),

	// g6e.2xlarge, 1×L40S.
	quote(aws, "us-east-1", "g6e.2xlarge", whole(2.24), whole(0.74)),
	like(aws, "us-east-2", "g6e.2xlarge", "us-east-1"),
	like(aws, "us-west-2", "g6e.2xlarge", "us-east-1"),
	quote(aws, "eu-central-1", "g6e.2xlarge", whole(2.80), whole(1.21)),
	like(aws, "eu-north-1", "g6e.2xlarge", "eu-central-1"),
	like(aws, "ap-northeast-1", "g6e.2xlarge", "us-east-1"),

	// g6e.48xlarge, 8×L40S.
	quote(aws, "us-east-1", "g6e.48xlarge", whole(30.13), whole(7.55)),
	like(aws, "us-east-2", "g6e.48xlarge", "us-east-1"),
	like(aws, "us-west-2", "g6e.48xlarge", "us-east-1"),
	like(aws, "eu-central-1", "g6e.48xlarge", "us-east-1"),
	like(aws, "eu-north-1", "g6e.48xlarge", "us-east-1"),
	like(aws, "ap-northeast-1", "g6e.48xlarge", "us-east-1"),

	// g6.2xlarge, 1×L4: everywhere, from its one quote.
	like(aws, "us-east-1", "g6.2xlarge", "eu-central-1"),
	like(aws, "us-east-2", "g6.2xlarge", "eu-central-1"),
	like(aws, "us-west-2", "g6.2xlarge", "eu-central-1"),
	like(aws, "ca-central-1", "g6.2xlarge", "eu-central-1"),
	like(aws, "eu-west-1", "g6.2xlarge", "eu-central-1"),
	quote(aws, "eu-central-1", "g6.2xlarge", whole(1.22), whole(0.32)),
	like(aws, "eu-north-1", "g6.2xlarge", "eu-central-1"),
	like(aws, "ap-northeast-1", "g6.2xlarge", "eu-central-1"),
	like(aws, "ap-northeast-2", "g6.2xlarge", "eu-central-1"),
	like(aws, "ap-south-1", "g6.2xlarge", "eu-central-1"),

	// g6.12xlarge, 4×L4: its one quote has no spot price, so no region does.
	like(aws, "us-east-1", "g6.12xlarge", "us-west-2"),
	like(aws, "us-east-2", "g6.12xlarge", "us-west-2"),
	quote(aws, "us-west-2", "g6.12xlarge", whole(4.60), noSpot),
	like(aws, "ca-central-1", "g6.12xlarge", "us-west-2"),
	like(aws, "eu-west-1", "g6.12xlarge", "us-west-2"),
	like(aws, "eu-central-1", "g6.12xlarge", "us-west-2"),
	like(aws, "eu-north-1", "g6.12xlarge", "us-west-2"),
	like(aws, "ap-northeast-1", "g6.12xlarge", "us-west-2"),
	like(aws, "ap-northeast-2", "g6.12xlarge", "us-west-2"),
	like(aws, "ap-south-1", "g6.12xlarge", "us-west-2"),

	// g6.24xlarge, 4×L4 with twice the CPU of g6.12xlarge.
	quote(aws, "us-east-1", "g6.24xlarge", whole(6.68), whole(3.03)),
	like(aws, "us-east-2", "g6.24xlarge", "us-east-1"),
	like(aws, "us-west-2", "g6.24xlarge", "us-east-1"),
	like(aws, "ca-central-1", "g6.24xlarge", "us-east-1"),
	like(aws, "eu-west-1", "g6.24xlarge", "us-east-1"),
	like(aws, "eu-central-1", "g6.24xlarge", "us-east-1"),
	like(aws, "eu-north-1", "g6.24xlarge", "us-east-1"),
	like(aws, "ap-northeast-1", "g6.24xlarge", "us-east-1"),
	like(aws, "ap-northeast-2", "g6.24xlarge", "us-east-1"),
	like(aws, "ap-south-1", "g6.24xlarge", "us-east-1"),

	// g5.12xlarge, 4×A10G.
	quote(aws, "us-east-1", "g5.12xlarge", whole(5.67), whole(1.99)),
	like(aws, "us-east-2", "g5.12xlarge", "us-east-1"),
	like(aws, "us-west-2", "g5.12xlarge", "us-east-1"),
	like(aws, "ca-central-1", "g5.12xlarge", "us-east-1"),
	like(aws, "eu-west-1", "g5.12xlarge", "us-east-1"),
	like(aws, "eu-central-1", "g5.12xlarge", "us-east-1"),
	like(aws, "eu-north-1", "g5.12xlarge", "us-east-1"),
	like(aws, "ap-northeast-1", "g5.12xlarge", "ap-northeast-2"),
	quote(aws, "ap-northeast-2", "g5.12xlarge", whole(6.97), whole(6.97)), // spot equals on-demand
	like(aws, "ap-south-1", "g5.12xlarge", "ap-northeast-2"),

	// g4dn.xlarge, 1×T4: everywhere.
	quote(aws, "us-east-1", "g4dn.xlarge", whole(0.526), whole(0.201)),
	like(aws, "us-east-2", "g4dn.xlarge", "us-east-1"),
	like(aws, "us-west-2", "g4dn.xlarge", "us-east-1"),
	like(aws, "ca-central-1", "g4dn.xlarge", "us-east-1"),
	quote(aws, "eu-west-1", "g4dn.xlarge", whole(0.587), whole(0.266)),
	like(aws, "eu-central-1", "g4dn.xlarge", "eu-west-1"),
	like(aws, "eu-north-1", "g4dn.xlarge", "eu-west-1"),
	like(aws, "ap-northeast-1", "g4dn.xlarge", "us-east-1"),
	like(aws, "ap-northeast-2", "g4dn.xlarge", "us-east-1"),
	like(aws, "ap-south-1", "g4dn.xlarge", "us-east-1"),

	// Azure quotes eastus; every other region derives from it, except the
	// one westus quote.

	// ND H100 v5, 8×H100: Azure publishes no spot price for it.
	quote(azure, "eastus", "Standard_ND96isr_H100_v5", whole(96.87), noSpot),
	like(azure, "eastus2", "Standard_ND96isr_H100_v5", "eastus"),
	like(azure, "westus3", "Standard_ND96isr_H100_v5", "eastus"),
	like(azure, "southcentralus", "Standard_ND96isr_H100_v5", "eastus"),
	like(azure, "swedencentral", "Standard_ND96isr_H100_v5", "eastus"),

	// ND H200 v5, 8×H200: unquoted, so the ND H100 v5 price times AWS's H200 ratio.
	scaled(azure, "eastus2", "Standard_ND96isr_H200_v5", "Standard_ND96isr_H100_v5", "eastus", h200OverH100),
	scaled(azure, "swedencentral", "Standard_ND96isr_H200_v5", "Standard_ND96isr_H100_v5", "eastus", h200OverH100),

	// NC H100 v5, 1×H100 NVL.
	quote(azure, "eastus", "Standard_NC40ads_H100_v5", whole(6.98), whole(6.98)), // spot equals on-demand
	like(azure, "eastus2", "Standard_NC40ads_H100_v5", "eastus"),
	like(azure, "westus3", "Standard_NC40ads_H100_v5", "eastus"),
	like(azure, "southcentralus", "Standard_NC40ads_H100_v5", "eastus"),
	like(azure, "swedencentral", "Standard_NC40ads_H100_v5", "eastus"),

	// ND A100 v4, 8×A100 40GB.
	quote(azure, "eastus", "Standard_ND96asr_v4", whole(27.20), whole(2.99)),
	like(azure, "southcentralus", "Standard_ND96asr_v4", "eastus"),
	like(azure, "westeurope", "Standard_ND96asr_v4", "eastus"),
	like(azure, "japaneast", "Standard_ND96asr_v4", "eastus"),

	// NDm A100 v4, 8×A100 80GB.
	quote(azure, "eastus", "Standard_ND96amsr_A100_v4", whole(32.77), whole(3.60)),
	like(azure, "westus3", "Standard_ND96amsr_A100_v4", "eastus"),
	like(azure, "southcentralus", "Standard_ND96amsr_A100_v4", "eastus"),
	like(azure, "westeurope", "Standard_ND96amsr_A100_v4", "eastus"),

	// NC A100 v4, 1×A100 80GB.
	quote(azure, "eastus", "Standard_NC24ads_A100_v4", whole(3.67), whole(0.44)),
	like(azure, "eastus2", "Standard_NC24ads_A100_v4", "eastus"),
	like(azure, "westus3", "Standard_NC24ads_A100_v4", "eastus"),
	like(azure, "southcentralus", "Standard_NC24ads_A100_v4", "eastus"),
	like(azure, "northeurope", "Standard_NC24ads_A100_v4", "eastus"),
	like(azure, "westeurope", "Standard_NC24ads_A100_v4", "eastus"),
	like(azure, "swedencentral", "Standard_NC24ads_A100_v4", "eastus"),
	like(azure, "japaneast", "Standard_NC24ads_A100_v4", "eastus"),

	// NVads A10 v5, 1×A10: everywhere.
	quote(azure, "eastus", "Standard_NV36ads_A10_v5", whole(3.20), whole(0.80)),
	like(azure, "eastus2", "Standard_NV36ads_A10_v5", "eastus"),
	like(azure, "westus", "Standard_NV36ads_A10_v5", "eastus"),
	like(azure, "westus3", "Standard_NV36ads_A10_v5", "eastus"),
	like(azure, "southcentralus", "Standard_NV36ads_A10_v5", "eastus"),
	like(azure, "northeurope", "Standard_NV36ads_A10_v5", "eastus"),
	like(azure, "westeurope", "Standard_NV36ads_A10_v5", "eastus"),
	like(azure, "swedencentral", "Standard_NV36ads_A10_v5", "eastus"),
	like(azure, "japaneast", "Standard_NV36ads_A10_v5", "eastus"),

	// NCas T4 v3, 1×T4: everywhere.
	quote(azure, "eastus", "Standard_NC4as_T4_v3", whole(0.526), whole(0.063)),
	like(azure, "eastus2", "Standard_NC4as_T4_v3", "eastus"),
	quote(azure, "westus", "Standard_NC4as_T4_v3", whole(0.631), whole(0.069)),
	like(azure, "westus3", "Standard_NC4as_T4_v3", "eastus"),
	like(azure, "southcentralus", "Standard_NC4as_T4_v3", "eastus"),
	like(azure, "northeurope", "Standard_NC4as_T4_v3", "eastus"),
	like(azure, "westeurope", "Standard_NC4as_T4_v3", "eastus"),
	like(azure, "swedencentral", "Standard_NC4as_T4_v3", "eastus"),
	like(azure, "japaneast", "Standard_NC4as_T4_v3", "eastus"),

	// GCP quotes are machine + GPUs. GCP attaches T4s to N1 machines, which
	// have no GPU instance type name, so it offers no T4 here.

	// a3-highgpu-8g, 8×H100.
	quote(gcp, "us-central1", "a3-highgpu-8g", parts(9.46, 33.61), parts(2.18, 18.02)),
	like(gcp, "us-east4", "a3-highgpu-8g", "us-central1").withGPUsQuoted(78.37), // machine derived, GPUs quoted
	like(gcp, "us-west1", "a3-highgpu-8g", "us-central1"),
	quote(gcp, "europe-west4", "a3-highgpu-8g", parts(9.93, 101.88), parts(1.79, 18.33)),
	like(gcp, "asia-northeast1", "a3-highgpu-8g", "us-central1"),

	// a3-ultragpu-8g, 8×H200.
	quote(gcp, "us-central1", "a3-ultragpu-8g", parts(12.27, 74.49), parts(2.82, 29.80)),
	like(gcp, "europe-west1", "a3-ultragpu-8g", "us-central1"),
	like(gcp, "asia-southeast1", "a3-ultragpu-8g", "us-central1"),

	// a2-highgpu, A100 40GB. GCP prices machine and GPUs per unit, so the 1-
	// and 4-GPU sizes are exact fractions of the 8-GPU one.
	scaled(gcp, "us-central1", "a2-highgpu-1g", "a2-highgpu-8g", "us-central1", uniform(1.0/8)),
	scaled(gcp, "us-central1", "a2-highgpu-4g", "a2-highgpu-8g", "us-central1", uniform(4.0/8)),
	quote(gcp, "us-central1", "a2-highgpu-8g", parts(5.92, 23.47), parts(2.37, 9.18)),
	scaled(gcp, "us-east1", "a2-highgpu-1g", "a2-highgpu-8g", "us-central1", uniform(1.0/8)),
	scaled(gcp, "us-east1", "a2-highgpu-4g", "a2-highgpu-8g", "us-central1", uniform(4.0/8)),
	like(gcp, "us-east1", "a2-highgpu-8g", "us-central1"),
	scaled(gcp, "europe-west4", "a2-highgpu-1g", "a2-highgpu-8g", "us-central1", uniform(1.0/8)),
	scaled(gcp, "europe-west4", "a2-highgpu-4g", "a2-highgpu-8g", "us-central1", uniform(4.0/8)),
	like(gcp, "europe-west4", "a2-highgpu-8g", "us-central1"),
	scaled(gcp, "asia-northeast1", "a2-highgpu-1g", "a2-highgpu-8g", "us-central1", uniform(1.0/8)),
	scaled(gcp, "asia-northeast1", "a2-highgpu-4g", "a2-highgpu-8g", "us-central1", uniform(4.0/8)),
	like(gcp, "asia-northeast1", "a2-highgpu-8g", "us-central1"),
	scaled(gcp, "asia-southeast1", "a2-highgpu-1g", "a2-highgpu-8g", "us-central1", uniform(1.0/8)),
	scaled(gcp, "asia-southeast1", "a2-highgpu-4g", "a2-highgpu-8g", "us-central1", uniform(4.0/8)),
	like(gcp, "asia-southeast1", "a2-highgpu-8g", "us-central1"),

	// a2-ultragpu, A100 80GB: unquoted, so a2-highgpu plus the 80GB premium.
	scaled(gcp, "us-central1", "a2-ultragpu-1g", "a2-highgpu-8g", "us-central1", a100With80GB.times(1.0/8)),
	scaled(gcp, "us-central1", "a2-ultragpu-8g", "a2-highgpu-8g", "us-central1", a100With80GB),
	scaled(gcp, "us-east4", "a2-ultragpu-1g", "a2-highgpu-8g", "us-central1", a100With80GB.times(1.0/8)),
	scaled(gcp, "us-east4", "a2-ultragpu-8g", "a2-highgpu-8g", "us-central1", a100With80GB),
	scaled(gcp, "europe-west4", "a2-ultragpu-1g", "a2-highgpu-8g", "us-central1", a100With80GB.times(1.0/8)),
	scaled(gcp, "europe-west4", "a2-ultragpu-8g", "a2-highgpu-8g", "us-central1", a100With80GB),
	scaled(gcp, "asia-southeast1", "a2-ultragpu-1g", "a2-highgpu-8g", "us-central1", a100With80GB.times(1.0/8)),
	scaled(gcp, "asia-southeast1", "a2-ultragpu-8g", "a2-highgpu-8g", "us-central1", a100With80GB),

	// g2-standard, L4: everywhere. g2-standard-48 has 12× the machine and 4×
	// the GPUs of g2-standard-4.
	quote(gcp, "us-central1", "g2-standard-4", parts(0.147, 0.560), parts(0.059, 0.223)),
	scaled(gcp, "us-central1", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
	like(gcp, "us-east4", "g2-standard-4", "us-central1"),
	scaled(gcp, "us-east4", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
	like(gcp, "us-east1", "g2-standard-4", "us-central1"),
	scaled(gcp, "us-east1", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
	like(gcp, "us-west1", "g2-standard-4", "us-central1"),
	scaled(gcp, "us-west1", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
	like(gcp, "europe-west4", "g2-standard-4", "us-central1"),
	scaled(gcp, "europe-west4", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
	like(gcp, "europe-west1", "g2-standard-4", "us-central1"),
	scaled(gcp, "europe-west1", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
	like(gcp, "asia-northeast1", "g2-standard-4", "us-central1"),
	scaled(gcp, "asia-northeast1", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
	like(gcp, "asia-southeast1", "g2-standard-4", "us-central1"),
	scaled(gcp, "asia-southeast1", "g2-standard-48", "g2-standard-4", "us-central1", factor{12, 4}),
}

// egress is in US$ per GB; the AWS internet rate is its first 10 TB tier,
// the one a fleet's checkpoints and datasets mostly fall in.
var egress = []struct {
	cloud                 string
	interRegion, internet float64
}{
	{aws, 0.02, 0.09},
	{azure, 0.02, 0.087},
	{gcp, 0.02, 0.12},
}

func main() {
	// -o lets the package's test regenerate into a scratch file and compare.
	output := flag.String("o", "snapshot.json", "file to write")
	flag.Parse()
	snapshot, err := build()
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
	fmt.Printf("%s: %d regions, %d offers\n", *output, len(snapshot.Regions), len(snapshot.Offers))
}

func build() (*catalog.Catalog, error) {
	c := &catalog.Catalog{Source: "snapshot", FetchedAt: fetchedAt}

	type place struct{ cloud, region string }
	levels := make(map[place]float64)
	for _, r := range regions {
		levels[place{r.cloud, r.name}] = r.level
		c.Regions = append(c.Regions, catalog.Region{Cloud: r.cloud, Name: r.name, Geo: r.geo, Zones: slices.Clone(r.zones)})
	}

	type quoted struct{ cloud, region, instanceType string }
	quotes := make(map[quoted]row)
	for _, r := range rows {
		if r.onDemand != nil {
			quotes[quoted{r.cloud, r.region, r.instanceType}] = r
		}
	}

	for _, r := range rows {
		s, ok := shapes[r.instanceType]
		if !ok {
			return nil, fmt.Errorf("%s has no shape", r.instanceType)
		}
		level, ok := levels[place{r.cloud, r.region}]
		if !ok {
			return nil, fmt.Errorf("%s %s has no region entry", r.cloud, r.region)
		}
		offer := catalog.Offer{
			Cloud: r.cloud, Region: r.region, InstanceType: r.instanceType,
			GPUModel: s.gpuModel, GPUs: s.gpus, VCPUs: s.vcpus, MemoryGiB: s.memoryGiB,
		}

		onDemand, spot := r.onDemand, r.spot
		if onDemand == nil {
			base, ok := quotes[quoted{r.cloud, r.baseRegion, r.baseType}]
			if !ok {
				return nil, fmt.Errorf("%s %s %s derives from %s %s, which is not quoted", r.cloud, r.region, r.instanceType, r.baseRegion, r.baseType)
			}
			ratio := level / levels[place{r.cloud, r.baseRegion}]
			onDemand = derive(base.onDemand, r.scale, ratio)
			if r.gpusOnDemand > 0 {
				onDemand.gpus = r.gpusOnDemand
			}
			if base.spot != nil {
				spot = derive(base.spot, r.scale, ratio)
			}
		}

		offer.Market, offer.PriceMicros = catalog.OnDemand, total(onDemand)
		c.Offers = append(c.Offers, offer)
		if spot != nil {
			offer.Market, offer.Zone, offer.PriceMicros = catalog.Spot, r.spotZone, total(spot)
			c.Offers = append(c.Offers, offer)
		}
	}

	for _, e := range egress {
		c.Egress = append(c.Egress, catalog.Egress{
			Cloud:                  e.cloud,
			InterRegionMicrosPerGB: catalog.Micros(e.interRegion),
			InternetMicrosPerGB:    catalog.Micros(e.internet),
		})
	}

	// Sorted so that regenerating after a small edit gives a small diff.
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

// derive scales a quoted price, rounding each part to $0.0001 so that the
// estimate does not pretend to more precision than a quote has.
func derive(base *price, scale factor, ratio float64) *price {
	round := func(dollars float64) float64 { return math.Round(dollars*1e4) / 1e4 }
	return &price{
		machine: round(base.machine * scale.machine * ratio),
		gpus:    round(base.gpus * scale.gpus * ratio),
	}
}

func total(p *price) int64 {
	return catalog.Micros(p.machine + p.gpus)
}
