// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// accountTypes name the brute force's types as each cloud's families do,
// so that family terms have something to match, with the family each is
// of written out here rather than read by catalog.Family.
var accountTypes = map[string]map[string]struct{ name, family string }{
	"aws": {"big": {"p5.48xlarge", "p5"}, "small": {"g6.xlarge", "g6"}, "small4": {"g6.12xlarge", "g6"}},
	"gcp": {"big": {"a3-highgpu-8g", "a3"}, "small": {"g2-standard-4", "g2"}, "small4": {"g2-standard-48", "g2"}},
}

// withAccountTypes renames an instance's types everywhere it names them.
func withAccountTypes(in Input) Input {
	rename := func(k OfferKey) OfferKey {
		k.InstanceType = accountTypes[k.Cloud][k.InstanceType].name
		return k
	}
	in.Offers = slices.Clone(in.Offers)
	for i := range in.Offers {
		in.Offers[i].OfferKey = rename(in.Offers[i].OfferKey)
	}
	in.Blocked = slices.Clone(in.Blocked)
	for i := range in.Blocked {
		in.Blocked[i] = rename(in.Blocked[i])
	}
	in.Observed = slices.Clone(in.Observed)
	for i := range in.Observed {
		in.Observed[i].OfferKey = rename(in.Observed[i].OfferKey)
	}
	in.Reservations = slices.Clone(in.Reservations)
	for i, r := range in.Reservations {
		in.Reservations[i].InstanceType = accountTypes[r.Cloud][r.InstanceType].name
	}
	return in
}

func randomTerm(r *rand.Rand, family bool) schema.PriceTerm {
	var t schema.PriceTerm
	if !family && r.IntN(2) == 0 {
		price := float64(1+r.IntN(40)) / 4
		t.Price = &price
	} else {
		d := []float64{5, 12.5, 30, 60, 85}[r.IntN(5)]
		t.Discount = &d
	}
	if r.IntN(3) == 0 {
		t.Markets = [][]catalog.Market{{catalog.OnDemand}, {catalog.Spot}, {catalog.OnDemand, catalog.Spot}}[r.IntN(3)]
	}
	return t
}

func randomPricing(r *rand.Rand) schema.Pricing {
	var p schema.Pricing
	for _, cloud := range []string{"aws", "gcp"} {
		if r.IntN(4) == 0 {
			continue
		}
		cp := &schema.CloudPricing{Markets: []catalog.Market{catalog.OnDemand}, Families: map[string]schema.PriceTerm{}, Types: map[string]schema.PriceTerm{}}
		if r.IntN(3) != 0 {
			d := []float64{5, 12.5, 30, 60}[r.IntN(4)]
			cp.Discount = &d
		}
		if r.IntN(3) == 0 {
			cp.Markets = []catalog.Market{catalog.OnDemand, catalog.Spot}
		}
		for _, typ := range accountTypes[cloud] {
			if r.IntN(4) == 0 {
				cp.Families[typ.family] = randomTerm(r, true)
			}
			if r.IntN(4) == 0 {
				cp.Types[typ.name] = randomTerm(r, false)
			}
		}
		if cloud == "aws" {
			p.AWS = cp
		} else {
			p.GCP = cp
		}
	}
	return p
}

// bruteAccountPrice prices a node-hour from the rules: the type's term if
// it covers the market, else the family's, else the cloud's discount, none
// adding to another; a discount rounds half up to a micro-dollar; a list
// price that is no price stays one.
func bruteAccountPrice(p schema.Pricing, o Offer) int64 {
	list := o.PriceMicros
	if list <= 0 {
		return list
	}
	var cp *schema.CloudPricing
	switch o.Cloud {
	case "aws":
		cp = p.AWS
	case "gcp":
		cp = p.GCP
	}
	if cp == nil {
		return list
	}
	covers := func(markets []catalog.Market) bool {
		if markets == nil {
			markets = cp.Markets
		}
		return slices.Contains(markets, o.Market)
	}
	var family string
	for _, typ := range accountTypes[o.Cloud] {
		if typ.name == o.InstanceType {
			family = typ.family
		}
	}
	off := func(percent float64) int64 {
		// list × (100 − percent) / 100, rounded half up.
		x := new(big.Rat).Mul(new(big.Rat).SetInt64(list), new(big.Rat).Sub(big.NewRat(100, 1), new(big.Rat).SetFloat64(percent)))
		x.Quo(x, big.NewRat(100, 1))
		x.Add(x, big.NewRat(1, 2))
		return new(big.Int).Quo(x.Num(), x.Denom()).Int64()
	}
	apply := func(t schema.PriceTerm) int64 {
		if t.Price != nil {
			return int64(*t.Price*1e6 + 0.5)
		}
		return off(*t.Discount)
	}
	if t, ok := cp.Types[o.InstanceType]; ok && covers(t.Markets) {
		return apply(t)
	}
	if t, ok := cp.Families[family]; ok && covers(t.Markets) {
		return apply(t)
	}
	if cp.Discount != nil && covers(nil) {
		return off(*cp.Discount)
	}
	return list
}

// The optimum over account prices is the brute force's optimum over the
// prices the rules give, and account prices move placements: a discount
// that makes another offer cheaper is where the nodes go. -short skips it.
func TestAccountPricesPlanAsTheBruteForceDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 instances solved by brute force; run without -short")
	}
	const instances = 1000
	r := rand.New(rand.NewPCG(28, 5))
	moved := 0
	for i := range instances {
		in := withAccountTypes(randomInput(r))
		pricing := randomPricing(r)

		listPlan, err := Solve(in)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		priced := in
		priced.Offers = slices.Clone(in.Offers)
		ApplyAccountPrices(priced.Offers, pricing)
		plan, err := Solve(priced)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}

		rules := in
		rules.Offers = slices.Clone(in.Offers)
		for j := range rules.Offers {
			rules.Offers[j].PriceMicros = bruteAccountPrice(pricing, in.Offers[j])
		}
		for j, o := range priced.Offers {
			if o.PriceMicros != rules.Offers[j].PriceMicros {
				t.Fatalf("instance %d: %s costs %d, the rules say %d (pricing %+v %+v)", i, o.OfferKey, o.PriceMicros, rules.Offers[j].PriceMicros, pricing.AWS, pricing.GCP)
			}
			if o.Adjusted() && o.ListMicros != in.Offers[j].PriceMicros {
				t.Fatalf("instance %d: %s keeps list %d, was %d", i, o.OfferKey, o.ListMicros, in.Offers[j].PriceMicros)
			}
		}
		b := newBrute(rules)
		want := b.best()
		got, ok := b.evaluate(b.fromPlan(t, plan))
		if !ok {
			t.Fatalf("instance %d: the plan breaks a rule\ninput: %+v\nplan: %+v", i, priced, plan.Fleets)
		}
		if got.better(want) || want.better(got) {
			t.Fatalf("instance %d: plan objective %v, brute force %v over account prices\ninput: %+v\nplan: %+v", i, got, want, priced, plan.Fleets)
		}
		for _, f := range plan.Fleets {
			for _, w := range f.Workloads {
				for _, pl := range w.Placements {
					o, _ := offerByKey(priced.Offers, pl.Offer)
					if !pl.Unpriced && (pl.PriceMicros != o.PriceMicros || pl.AccountTerms != o.AccountTerms) {
						t.Fatalf("instance %d: placement on %s at %d %+v, its offer at %d %+v", i, pl.Offer, pl.PriceMicros, pl.AccountTerms, o.PriceMicros, o.AccountTerms)
					}
				}
			}
		}
		if placedOn(listPlan) != placedOn(plan) {
			moved++
		}
	}
	if moved < instances/40 {
		t.Errorf("account prices moved nodes in only %d of %d instances: the test proves little", moved, instances)
	}
	t.Logf("%d instances, %d placed otherwise at account prices", instances, moved)
}

func offerByKey(offers []Offer, k OfferKey) (Offer, bool) {
	for _, o := range offers {
		if o.OfferKey == k {
			return o, true
		}
	}
	return Offer{}, false
}

// placedOn writes where a plan puts nodes, for comparing two plans.
func placedOn(p *Plan) string {
	var s []byte
	for _, f := range p.Fleets {
		for _, w := range f.Workloads {
			for _, pl := range w.Placements {
				s = append(s, (f.Name + "/" + w.Name + "@" + pl.Offer.String() + ";")...)
				s = append(s, byte('0'+pl.Count))
			}
		}
	}
	return string(s)
}

func TestAccountTermsSayHowThePriceWasMade(t *testing.T) {
	tests := []struct {
		terms AccountTerms
		price int64
		want  string
	}{
		{AccountTerms{}, 60_000_000, "$60.00/h"},
		{AccountTerms{ListMicros: 60_000_000, DiscountPPM: 120_000}, 52_800_000, "$52.80/h (list $60.00 − 12 %)"},
		{AccountTerms{ListMicros: 60_000_000, DiscountPPM: 125_000}, 52_500_000, "$52.50/h (list $60.00 − 12.5 %)"},
		{AccountTerms{ListMicros: 60_000_000, PrivatePrice: true}, 50_000_000, "$50.00/h (private price, list $60.00)"},
	}
	for _, tt := range tests {
		if got := PriceText(tt.price, tt.terms); got != tt.want {
			t.Errorf("PriceText(%d, %+v) = %q, want %q", tt.price, tt.terms, got, tt.want)
		}
	}
}

// Applying account prices twice is applying them once: each time prices
// from the list price, so a caller that applies them again (the
// reconciler's live offers, then NewInput's) cannot discount twice.
func TestAccountPricesApplyOnce(t *testing.T) {
	d := 12.0
	pricing := schema.Pricing{AWS: &schema.CloudPricing{Discount: &d, Markets: []catalog.Market{catalog.OnDemand}}}
	offers := []Offer{
		offer("aws", "us-east-1", "us-east-1a", "p5.48xlarge", catalog.OnDemand, "H100", 8, 60, Unlimited),
		offer("aws", "us-east-1", "us-east-1a", "p5.48xlarge", catalog.Spot, "H100", 8, 30, Unlimited),
		offer("aws", "us-east-1", "us-east-1a", "p4d.24xlarge", catalog.OnDemand, "A100", 8, 0, Unlimited),
		offer("gcp", "us-central1", "us-central1-a", "a3-highgpu-8g", catalog.OnDemand, "H100", 8, 55, Unlimited),
	}
	ApplyAccountPrices(offers, pricing)
	ApplyAccountPrices(offers, pricing)
	want := []int64{52_800_000, 30_000_000, 0, 55_000_000}
	for i, o := range offers {
		if o.PriceMicros != want[i] {
			t.Errorf("%s: %d, want %d", o.OfferKey, o.PriceMicros, want[i])
		}
	}
	if offers[0].ListMicros != 60_000_000 || offers[0].DiscountPPM != 120_000 || offers[1].Adjusted() || offers[2].Adjusted() {
		t.Errorf("terms: %+v %+v %+v", offers[0].AccountTerms, offers[1].AccountTerms, offers[2].AccountTerms)
	}
	ApplyAccountPrices(offers, schema.Pricing{})
	if offers[0].PriceMicros != 60_000_000 || offers[0].Adjusted() {
		t.Errorf("without account pricing, %s is at %d %+v, want its list price", offers[0].OfferKey, offers[0].PriceMicros, offers[0].AccountTerms)
	}
}

// The discount that makes the dearer cloud win is read from the catalog:
// just above it, the fleet moves there; just below, it stays. A budget is
// held to what the account pays: the moved fleet fits a budget the list
// prices break.
func TestADiscountThatChangesTheCheapestCloudChangesThePlan(t *testing.T) {
	const nodes = 2
	load := func(pricing, budget string) *schema.Repo {
		t.Helper()
		dir := t.TempDir()
		files := map[string]string{
			"gpufleet.cue":     "package gpufleet\n\ngpufleet: clouds: {\n\taws: {}\n\tgcp: project: \"acme-gpu-fleet\"\n}\n" + pricing,
			"fleets/train.cue": fmt.Sprintf("package gpufleet\n\nfleets: train: {\n\towner: \"research\"\n%s\tworkloads: pretrain: {gpu: {model: \"H100\", perNode: 8}, nodes: %d, placement: clouds: [\"aws\", \"gcp\"]}\n}\n", budget, nodes),
		}
		for name, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		repo, err := schema.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
	cat := catalog.Default()
	list := NewInput(load("", ""), cat)
	cheapest := map[string]int64{}
	for _, o := range list.Offers {
		if o.GPUModel == "H100" && o.GPUs == 8 && o.Market == catalog.OnDemand && ValidPrice(o) {
			if c, ok := cheapest[o.Cloud]; !ok || o.PriceMicros < c {
				cheapest[o.Cloud] = o.PriceMicros
			}
		}
	}
	if cheapest["aws"] == 0 || cheapest["gcp"] == 0 {
		t.Fatalf("the catalog has no H100 ×8 on-demand offer on both clouds: %v", cheapest)
	}
	winner, loser := "aws", "gcp"
	if cheapest["gcp"] < cheapest["aws"] {
		winner, loser = "gcp", "aws"
	}
	if cloudOf(t, solve(t, list)) != winner {
		t.Fatalf("at list prices the fleet is not on %s, the cheaper cloud", winner)
	}
	// Below this many percent off, the dearer cloud stays dearer.
	flip := 100 * (1 - float64(cheapest[winner])/float64(cheapest[loser]))
	if flip < 0.6 || flip > 99 {
		t.Fatalf("the clouds' H100 ×8 prices are %v, too close or too far apart for a discount half a point either side of %.3f %%: test with another GPU", cheapest, flip)
	}
	// Percentages to a thousandth, as written in gpufleet.cue.
	round := func(percent float64) float64 { return math.Round(percent*1000) / 1000 }
	term := func(percent float64) string {
		return fmt.Sprintf("gpufleet: pricing: %s: discount: %s\n", loser, strconv.FormatFloat(percent, 'f', -1, 64))
	}
	below, above := term(round(flip-0.5)), term(round(flip+0.5))
	if got := cloudOf(t, solve(t, NewInput(load(below, ""), cat))); got != winner {
		t.Errorf("%.3f %% off %s, just below the %.3f %% it takes, moved the fleet to %s", flip-0.5, loser, flip, got)
	}
	moved := solve(t, NewInput(load(above, ""), cat))
	if got := cloudOf(t, moved); got != loser {
		t.Fatalf("%.3f %% off %s, past the %.3f %% it takes, left the fleet on %s", flip+0.5, loser, flip, got)
	}
	pl := moved.Fleets[0].Workloads[0].Placements[0]
	if pl.ListMicros != cheapest[loser] || pl.DiscountPPM != schema.DiscountPPM(round(flip+0.5)) || pl.PriceMicros >= cheapest[winner] {
		t.Errorf("placement %s at %d %+v: want %s's list %d, %.3f %% off, below %d", pl.Offer, pl.PriceMicros, pl.AccountTerms, loser, cheapest[loser], flip+0.5, cheapest[winner])
	}

	// A budget of what the account pays for the moved fleet: met at the
	// account's prices, broken at list prices, where the cheapest cloud
	// asks more.
	budget := fmt.Sprintf("\tbudget: %s\n", strconv.FormatFloat(float64(moved.CostMicros)/1e6, 'f', 6, 64))
	if p := solve(t, NewInput(load(above, budget), cat)); p.Fleets[0].Workloads[0].Placed != nodes {
		t.Errorf("with the discount, a budget of %s placed %d of %d nodes", budget, p.Fleets[0].Workloads[0].Placed, nodes)
	}
	if p := solve(t, NewInput(load("", budget), cat)); p.Fleets[0].Workloads[0].Placed == nodes {
		t.Errorf("at list prices, a budget of %s placed every node at %d", budget, p.CostMicros)
	}
}

// cloudOf is the one cloud a plan places its nodes in.
func cloudOf(t *testing.T, p *Plan) string {
	t.Helper()
	clouds := map[string]bool{}
	for _, f := range p.Fleets {
		for _, w := range f.Workloads {
			for _, pl := range w.Placements {
				clouds[pl.Offer.Cloud] = true
			}
		}
	}
	if len(clouds) != 1 {
		t.Fatalf("the plan uses clouds %v, want one", clouds)
	}
	for c := range clouds {
		return c
	}
	return ""
}
