// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"

	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// ruleFiles name the files that declare an emulated world's rules; empty
// keeps the rules its state holds.
type ruleFiles struct {
	faults, rateLimits string
	// quotas declares the quota limits, replacing those the state holds.
	quotas string
	// account declares what the accounts hold (instance profiles,
	// identities, service accounts, SSM parameters, denied operations),
	// replacing what the state holds.
	account string
	// newAccount, without a quota file, gives a world whose quotas were
	// never declared the limits of a new account, as `sim serve` does;
	// the embedded emulator of demo and --sim keeps ample ones.
	newAccount bool
	// latency, when set, replaces the one the state holds.
	latency *sim.Latency
}

// startEmulator starts gpufleet's emulated clouds, in this process: `sim
// serve`, the --sim of reconcile, apply, demo and serve, and `catalog
// refresh --sim` all start them here. A fault file, when given, declares
// the world's fault rules, a rate-limit file its rate limits, a quota file
// its quota limits and an account file what its accounts hold.
func (a *app) startEmulator(cfg sim.Config, files ruleFiles, opts emulator.Options) (*emulator.Emulator, error) {
	world, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	if files.faults != "" {
		rules, err := sim.LoadFaults(files.faults)
		if err != nil {
			return nil, err
		}
		// The state holds the rules of the last start: the file replaces
		// them rather than adding to them, and a rule it repeats keeps
		// how often it fired.
		if err := world.SetFaults(rules...); err != nil {
			return nil, err
		}
	}
	switch {
	case files.quotas != "":
		set, err := sim.LoadQuotas(files.quotas, cfg.Catalog)
		if err != nil {
			return nil, err
		}
		if err := world.SetQuotas(set); err != nil {
			return nil, err
		}
	case files.newAccount && !world.QuotasDeclared():
		if err := world.SetQuotas(sim.QuotaSet{Base: sim.NewAccount}); err != nil {
			return nil, err
		}
	}
	if files.account != "" {
		account, err := sim.LoadAccount(files.account)
		if err != nil {
			return nil, err
		}
		if err := world.SetAccount(account); err != nil {
			return nil, err
		}
	}
	if files.rateLimits != "" {
		limits, err := sim.LoadRateLimits(files.rateLimits)
		if err != nil {
			return nil, err
		}
		// As with faults, the file replaces the limits of the last start.
		if err := world.SetRateLimits(limits...); err != nil {
			return nil, err
		}
	}
	if files.latency != nil {
		// Like the rules, a latency given replaces the one the state holds.
		if err := world.SetLatency(*files.latency); err != nil {
			return nil, err
		}
	}
	if opts.Log == nil {
		opts.Log = a.log
	}
	return emulator.Start(world, opts)
}

// cloudEndpoints are where the providers call: the real clouds (or what
// GPUFLEET_*_ENDPOINT says), or with emulated an embedded emulator whose
// state is kept in simState, running until the returned func is called.
func (a *app) cloudEndpoints(emulated bool, simState string, cat *catalog.Catalog) (clouds.Endpoints, func(), error) {
	if !emulated {
		return clouds.EndpointsFromEnv(), func() {}, nil
	}
	emu, stop, err := a.emulatedClouds(simState, cat)
	if err != nil {
		return clouds.Endpoints{}, nil, err
	}
	return clouds.Endpoints{AWS: emu.Endpoints.EC2, Azure: emu.Endpoints.ARM, GCP: emu.Endpoints.GCE, Lambda: emu.Endpoints.Lambda, OCI: emu.Endpoints.OCI}, stop, nil
}

// emulatedClouds starts the embedded emulator whose state is kept in
// simState, running until the returned func is called.
func (a *app) emulatedClouds(simState string, cat *catalog.Catalog) (*emulator.Emulator, func(), error) {
	// The emulated clouds sell what the catalog lists, at its prices.
	emu, err := a.startEmulator(sim.Config{Seed: 1, StatePath: simState, Catalog: cat}, ruleFiles{}, emulator.Options{})
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		if err := emu.Close(context.Background()); err != nil {
			a.log.Error("saving the emulated clouds", "err", err)
		}
	}
	return emu, stop, nil
}
