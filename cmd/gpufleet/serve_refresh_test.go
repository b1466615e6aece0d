// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// refreshedOffers picks, from the embedded catalog, an Azure instance type
// with on-demand prices in two regions: home, where a workload of its GPUs
// is cheapest at first, and away, the other, where the type's offer is
// the one whose price the test drops.
func refreshedOffers(t *testing.T) (home string, drop catalog.Offer, cheapest int64) {
	t.Helper()
	cat := catalog.Default()
	regionsOf := map[string][]string{}
	for _, o := range cat.Offers {
		if o.Cloud == catalog.Azure && o.Market == catalog.OnDemand && o.Zone == "" && o.PriceMicros > 0 {
			regionsOf[o.InstanceType] = append(regionsOf[o.InstanceType], o.Region)
		}
	}
	var pick string
	for _, typ := range slices.Sorted(maps.Keys(regionsOf)) {
		if len(regionsOf[typ]) >= 2 {
			pick = typ
			break
		}
	}
	if pick == "" {
		t.Skip("no Azure type is priced on demand in two regions")
	}
	regions := slices.Sorted(slices.Values(regionsOf[pick]))[:2]
	var chosen []catalog.Offer
	for _, o := range cat.Offers {
		if o.Cloud == catalog.Azure && o.InstanceType == pick && o.Market == catalog.OnDemand && o.Zone == "" && slices.Contains(regions, o.Region) {
			chosen = append(chosen, o)
		}
	}
	model, gpus := chosen[0].GPUModel, chosen[0].GPUs
	// The cheapest node of the same GPUs in either region, whatever its type.
	var low catalog.Offer
	for _, o := range cat.Offers {
		if o.Cloud == catalog.Azure && o.Market == catalog.OnDemand && o.GPUModel == model && o.GPUs == gpus && slices.Contains(regions, o.Region) && o.PriceMicros > 0 &&
			(low.PriceMicros == 0 || o.PriceMicros < low.PriceMicros) {
			low = o
		}
	}
	for _, o := range chosen {
		if o.Region != low.Region {
			return low.Region, o, low.PriceMicros
		}
	}
	t.Fatalf("no second region for %s", pick)
	return
}

// azureFleet is a repository of one fleet of two on-demand nodes of the
// offer's GPUs, on Azure in two regions, moved only to save more than 10%.
func azureFleet(regions []string, offer catalog.Offer) map[string]string {
	var subnets []string
	for _, r := range regions {
		subnets = append(subnets, fmt.Sprintf("\t\t%s: \"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet/providers/Microsoft.Network/virtualNetworks/gpu-%s/subnets/nodes\"", r, r))
	}
	return map[string]string{
		"gpufleet.cue": fmt.Sprintf(`package gpufleet

gpufleet: clouds: azure: {
	subscription:  "00000000-0000-0000-0000-000000000000"
	resourceGroup: "gpufleet"
	regions: [%q, %q]
	launch: {
		adminUsername: "mlops"
		sshPublicKey:  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3bWl2Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6 mlops@example.com"
		subnetByRegion: {
%s
		}
	}
}
gpufleet: defaults: migrationThreshold: 0.10
`, regions[0], regions[1], strings.Join(subnets, "\n")),
		"fleets/f.cue": fmt.Sprintf(`package gpufleet

fleets: f: {
	owner: "team"
	workloads: w: {
		gpu: {model: %q, perNode: %d}
		nodes:    2
		capacity: "on-demand"
	}
}
`, offer.GPUModel, offer.GPUs),
	}
}

// startPrices serves cat's prices on the given price API ports (0 picks
// free ones), standing for the clouds' price lists.
func startPrices(t *testing.T, cat *catalog.Catalog, azurePort int) *emulator.Emulator {
	t.Helper()
	world, err := sim.New(sim.Config{Seed: 1, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.Start(world, emulator.Options{AzurePricesPort: azurePort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close(context.Background()) })
	return emu
}

// liveOffers are the offers of a fleet's live nodes in the status its
// repository's main branch holds, none before the first status commit.
func liveOffers(t *testing.T, bare, fleet string) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", bare, "show", "main:status/"+fleet+".json").Output()
	if err != nil {
		return nil
	}
	var st struct {
		Workloads []struct {
			Instances []struct {
				Offer string `json:"offer"`
				State string `json:"state"`
			} `json:"instances"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status/%s.json: %v", fleet, err)
	}
	var offers []string
	for _, w := range st.Workloads {
		for _, inst := range w.Instances {
			if inst.State == "running" || inst.State == "pending" {
				offers = append(offers, inst.Offer)
			}
		}
	}
	return offers
}

// allIn reports whether there are n offers, every one in region.
func allIn(offers []string, n int, region string) bool {
	if len(offers) != n {
		return false
	}
	for _, o := range offers {
		if parts := strings.Split(o, "/"); len(parts) < 2 || parts[1] != region {
			return false
		}
	}
	return true
}

// metric is the value of a sample of the metrics at addr, 0 when absent.
func metric(t *testing.T, addr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// seriesOf is an offer's price points in a history file.
func seriesOf(t *testing.T, name, key string) []history.Point {
	t.Helper()
	h, err := history.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range h.Series {
		if s.Offer == key {
			return s.Points
		}
	}
	return nil
}

// `gpufleet serve` refreshes the prices on its schedule and plans with
// them: when a price list drops an offer's price well past the migration
// threshold between two refreshes, the next runs move the fleet's nodes
// there and the price history gains the new price; when the price API then
// answers 500, the refreshes fail, the catalog file stays as the last good
// refresh wrote it, runs go on planning with it, and the metrics and
// /readyz say so.
func TestServeRefreshesPricesAndMovesNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve through price refreshes; run without -short")
	}
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	bin := buildGpufleet(t)
	dir := t.TempDir()
	home, drop, cheapest := refreshedOffers(t)
	away := drop.Region
	dropped := cheapest / 4
	key := history.Key(drop)

	// The clouds' compute APIs, and their price lists apart, so that the
	// price lists can change while the clouds run on.
	clouds := startPrices(t, catalog.Default(), 0)
	priceList := startPrices(t, catalog.Default(), 0)
	u, err := url.Parse(priceList.Endpoints.AzurePrices)
	if err != nil {
		t.Fatal(err)
	}
	pricePort, _ := strconv.Atoi(u.Port())

	// The fleet repository, served by a real git daemon.
	serveDir := filepath.Join(dir, "git")
	bare := filepath.Join(serveDir, "fleet.git")
	mustGit(t, "", "init", "-q", "--bare", "-b", "main", bare)
	seed := filepath.Join(dir, "seed")
	writeFiles(t, seed, azureFleet(slices.Sorted(slices.Values([]string{home, away})), drop))
	git := gitIn(t, seed)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "fleet")
	git("remote", "add", "origin", bare)
	git("push", "-q", "origin", "main")
	port := freeTCPPort(t)
	testenv.GitDaemon(t, gitBin, serveDir, port)

	addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	serve := exec.Command(bin, "serve", "--repo", fmt.Sprintf("git://127.0.0.1:%d/fleet.git", port), "--listen", addr,
		"--workdir", filepath.Join(dir, "clones"), "--interval", "1s", "--jitter", "0", "--catalog-refresh", "2s")
	serve.Dir = dir
	// Nothing of this machine's clouds may leak in: no credentials, no
	// endpoints but the emulator's.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "AWS_") && !strings.HasPrefix(name, "AZURE_") &&
			!strings.HasPrefix(name, "GOOGLE_") && !strings.HasPrefix(name, "GPUFLEET_") && name != "HOME" {
			serve.Env = append(serve.Env, kv)
		}
	}
	serve.Env = append(serve.Env, "HOME="+dir, "GPUFLEET_AZURE_ENDPOINT="+clouds.Endpoints.ARM,
		"GPUFLEET_AZURE_PRICES_ENDPOINT="+priceList.Endpoints.AzurePrices, "GPUFLEET_HISTORY="+filepath.Join(dir, "history.json"))
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	serve.Stdout, serve.Stderr = logFile, logFile
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			serve.Process.Kill()
			serve.Wait()
		}
	})
	logs := func() string {
		b, _ := os.ReadFile(logFile.Name())
		return string(b)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs())
		}
	})
	catalogFile := filepath.Join(dir, ".gpufleet", "catalog.json")
	successes := func() float64 { return metric(t, addr, `gpufleet_catalog_refreshes_total{result="success"}`) }
	failures := func() float64 { return metric(t, addr, `gpufleet_catalog_refresh_failures_total`) }
	// Deadlines are a safety net only: every wait is for a state to show.
	const guard = 2 * time.Minute

	// First, both nodes where they are cheapest, with prices refreshed.
	waitUntil(t, guard, "two nodes in "+home+" and a refresh", func() bool {
		return allIn(liveOffers(t, bare, "f"), 2, home) && successes() >= 1
	})
	before := seriesOf(t, filepath.Join(dir, "history.json"), key)
	if len(before) == 0 || before[len(before)-1].PriceMicros != drop.PriceMicros {
		t.Fatalf("the history's %s before the drop: %v, want it at %d", key, before, drop.PriceMicros)
	}

	// The price list drops the price in the other region to a quarter of
	// the cheapest: the next refresh reads it, the next run moves there.
	priceList.Close(context.Background())
	var changed bytes.Buffer
	if err := catalog.Default().Write(&changed); err != nil {
		t.Fatal(err)
	}
	cheaper, err := catalog.Read(&changed)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range cheaper.Offers {
		if history.Key(o) == key {
			cheaper.Offers[i].PriceMicros = dropped
		}
	}
	priceList = startPrices(t, cheaper, pricePort)
	waitUntil(t, guard, "both nodes moved to "+away, func() bool { return allIn(liveOffers(t, bare, "f"), 2, away) })
	after := seriesOf(t, filepath.Join(dir, "history.json"), key)
	if len(after) <= len(before) || after[len(after)-1].PriceMicros != dropped {
		t.Errorf("the history's %s after the drop: %v, want a point more than %v, at %d", key, after, before, dropped)
	}

	// The price API fails: the refreshes fail and leave the catalog as the
	// last good one wrote it.
	if err := priceList.World.AddFaults(&sim.Fault{Cloud: catalog.Azure, Op: "RetailPrices", Kind: sim.FaultServerError, Rate: 1}); err != nil {
		t.Fatal(err)
	}
	failed := failures()
	waitUntil(t, guard, "a failed refresh", func() bool { return failures() >= failed+1 })
	kept, err := os.ReadFile(catalogFile)
	if err != nil {
		t.Fatal(err)
	}
	good, runs := successes(), metric(t, addr, `gpufleet_reconcile_runs_total{repo="`+fmt.Sprintf("git://127.0.0.1:%d/fleet.git", port)+`",result="success"}`)
	waitUntil(t, guard, "a second failed refresh and a run after it", func() bool {
		return failures() >= failed+2 &&
			metric(t, addr, `gpufleet_reconcile_runs_total{repo="`+fmt.Sprintf("git://127.0.0.1:%d/fleet.git", port)+`",result="success"}`) > runs
	})
	if now, err := os.ReadFile(catalogFile); err != nil || !bytes.Equal(now, kept) {
		t.Errorf("the catalog file changed while the refreshes failed (%v)", err)
	}
	if s := successes(); s != good {
		t.Errorf("%v refreshes succeeded while the price API answered 500", s-good)
	}
	if got, err := readCatalog(catalogFile); err != nil || priceIn(got, drop) != dropped {
		t.Errorf("the catalog kept after the failures does not hold the dropped price: %v", err)
	}
	if !allIn(liveOffers(t, bare, "f"), 2, away) {
		t.Errorf("after the failed refreshes the nodes are on %v, want both in %s", liveOffers(t, bare, "f"), away)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Status  string `json:"status"`
		Catalog *struct {
			Type, Reason, Message string
			Status                bool
		} `json:"catalog"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || ready.Catalog == nil || ready.Catalog.Reason != "RefreshFailed" || ready.Catalog.Status || !strings.Contains(ready.Catalog.Message, "azure") {
		t.Errorf("/readyz while the refreshes fail: %s %+v %+v (%v)", resp.Status, ready, ready.Catalog, err)
	}

	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); err != nil {
		t.Errorf("serve stopped with %v", err)
	}
	if text := logs(); !strings.Contains(text, "price refresh failed: runs plan with the last good catalog") {
		t.Errorf("serve did not log the failed refreshes:\n%s", text)
	}
}

func priceIn(cat *catalog.Catalog, offer catalog.Offer) int64 {
	for _, o := range cat.Offers {
		if history.Key(o) == history.Key(offer) {
			return o.PriceMicros
		}
	}
	return 0
}
