// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/schema"
)

// Setting overrides one of the repository's defaults, as --set
// defaults.migrationThreshold=0.2 says.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (s Setting) String() string { return s.Key + "=" + s.Value }

// settable are the defaults a variant may change, with how to set each.
var settable = map[string]func(d *schema.Defaults, v string) error{
	"defaults.migrationThreshold": func(d *schema.Defaults, v string) error {
		return setFraction(&d.MigrationThreshold, v, 1)
	},
	"defaults.spotRiskPremium": func(d *schema.Defaults, v string) error {
		return setFraction(&d.SpotRiskPremium, v, 10)
	},
	"defaults.maxDeletions": func(d *schema.Defaults, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("want a whole number of at least 0, not %q", v)
		}
		d.MaxDeletions = &n
		d.Disruption.Budget = schema.Budget{Nodes: n, Field: "defaults.maxDeletions", Raw: v}
		return nil
	},
	"defaults.disruption.budget": func(d *schema.Defaults, v string) error {
		b, err := schema.ParseBudget(v, "defaults.disruption.budget")
		if err != nil {
			return err
		}
		d.Disruption.Budget = b
		return nil
	},
	"defaults.prune": func(d *schema.Defaults, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, not %q", v)
		}
		d.Prune = b
		return nil
	},
}

// the bounds are the schema's (schema.cue).
func setFraction(f *float64, v string, most float64) error {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x < 0 || x > most {
		return fmt.Errorf("want a number from 0 to %g, not %q", most, v)
	}
	*f = x
	return nil
}

// ParseSetting reads KEY=VALUE, checking the key and the value.
func ParseSetting(s string) (Setting, error) {
	key, value, ok := strings.Cut(s, "=")
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if !ok || key == "" {
		return Setting{}, fmt.Errorf("setting %q: want KEY=VALUE, as defaults.migrationThreshold=0.2", s)
	}
	set, known := settable[key]
	if !known {
		return Setting{}, fmt.Errorf("setting %q: %s cannot be set; these can: %s", s, key, strings.Join(SettableKeys(), ", "))
	}
	var probe schema.Defaults
	if err := set(&probe, value); err != nil {
		return Setting{}, fmt.Errorf("setting %s: %w", key, err)
	}
	return Setting{Key: key, Value: value}, nil
}

// SettableKeys lists what ParseSetting accepts, sorted.
func SettableKeys() []string {
	return []string{"defaults.disruption.budget", "defaults.maxDeletions", "defaults.migrationThreshold", "defaults.prune", "defaults.spotRiskPremium"}
}

// patched returns a copy of the repository with the settings applied; the
// original is left alone.
func patched(repo *schema.Repo, settings []Setting) (*schema.Repo, error) {
	out := *repo
	for _, s := range settings {
		set, ok := settable[s.Key]
		if !ok {
			return nil, fmt.Errorf("setting %s cannot be set", s.Key)
		}
		if err := set(&out.Config.Defaults, s.Value); err != nil {
			return nil, fmt.Errorf("setting %s: %w", s.Key, err)
		}
	}
	return &out, nil
}
