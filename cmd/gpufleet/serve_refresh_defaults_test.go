// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile/catalogs"
)

// serve refreshes the prices by default only where it can read some and
// some cloud's credentials, or an emulator, are there; it says why when
// it does not; --catalog-refresh wins, and one it cannot honour is an
// error, not a refresh that never happens.
func TestServeCatalogRefreshDefaults(t *testing.T) {
	home := t.TempDir()
	withCredentialsFile := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withCredentialsFile, ".aws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withCredentialsFile, ".aws", "credentials"), []byte("[default]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hour, zero, negative := time.Hour, time.Duration(0), -time.Minute
	emu := &catalogs.Endpoints{AWSPricing: "http://127.0.0.1:1", EC2: "http://127.0.0.1:2", AzurePrices: "http://127.0.0.1:3", GCPBilling: "http://127.0.0.1:4"}
	for _, tt := range []struct {
		name  string
		env   map[string]string
		emu   *catalogs.Endpoints
		given *time.Duration
		// every is the interval wanted, 0 for off; clouds those read.
		every  time.Duration
		clouds []string
		// log or err is what is said.
		log, err string
	}{
		{name: "nothing to read with", env: map[string]string{"HOME": home}, log: "no cloud's credentials are in the environment"},
		{name: "AWS keys", env: map[string]string{"HOME": home, "AWS_ACCESS_KEY_ID": "AKID"}, every: defaultCatalogRefresh, clouds: []string{"aws", "azure"}, log: "GPUFLEET_GCP_API_KEY"},
		{name: "an AWS credentials file", env: map[string]string{"HOME": withCredentialsFile}, every: defaultCatalogRefresh, clouds: []string{"aws", "azure"}},
		{name: "an Azure identity and a GCP key", env: map[string]string{"HOME": home, "AZURE_CLIENT_ID": "x", "GPUFLEET_GCP_API_KEY": "k"}, every: defaultCatalogRefresh, clouds: []string{"azure", "gcp"}},
		{name: "GCP credentials without a key", env: map[string]string{"HOME": home, "GOOGLE_APPLICATION_CREDENTIALS": "/k.json"}, every: defaultCatalogRefresh, clouds: []string{"azure"}, log: "GPUFLEET_GCP_API_KEY"},
		{name: "--sim", env: map[string]string{"HOME": home}, emu: emu, every: defaultCatalogRefresh, clouds: []string{"aws", "azure", "gcp", "lambda"}},
		{name: "a Lambda key", env: map[string]string{"HOME": home, "LAMBDA_API_KEY": "secret_k"}, every: defaultCatalogRefresh, clouds: []string{"azure", "lambda"}},
		{name: "Lambda's emulator", env: map[string]string{"HOME": home, "GPUFLEET_LAMBDA_ENDPOINT": "http://127.0.0.1:7"}, every: defaultCatalogRefresh, clouds: []string{"azure", "lambda"}},
		{name: "no Lambda key", env: map[string]string{"HOME": home, "AWS_ACCESS_KEY_ID": "AKID", "GPUFLEET_GCP_API_KEY": "k"}, every: defaultCatalogRefresh, clouds: []string{"aws", "azure", "gcp"}, log: "lambda: its instance types need an API key in LAMBDA_API_KEY"},
		{name: "an emulator's price list", env: map[string]string{"HOME": home, "GPUFLEET_AZURE_ENDPOINT": "http://127.0.0.1:5", "GPUFLEET_AZURE_PRICES_ENDPOINT": "http://127.0.0.1:6"}, every: defaultCatalogRefresh, clouds: []string{"azure"}},
		{name: "an emulator without its price list", env: map[string]string{"HOME": home, "AWS_ACCESS_KEY_ID": "AKID", "GPUFLEET_AZURE_ENDPOINT": "http://127.0.0.1:5"}, every: defaultCatalogRefresh, clouds: []string{"aws"}, log: "azure: its API is an emulator, and GPUFLEET_AZURE_PRICES_ENDPOINT"},
		{name: "given, without credentials", env: map[string]string{"HOME": home}, given: &hour, every: time.Hour, clouds: []string{"azure"}},
		{name: "given 0", env: map[string]string{"HOME": home, "AWS_ACCESS_KEY_ID": "AKID"}, given: &zero, log: "--catalog-refresh is 0"},
		{name: "given negative", env: map[string]string{"HOME": home}, given: &negative, err: "--catalog-refresh is -1m0s"},
		{name: "given, nothing readable", env: map[string]string{"HOME": home, "GPUFLEET_AZURE_ENDPOINT": "http://127.0.0.1:5"}, given: &hour, err: "no cloud's prices can be read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logged bytes.Buffer
			a := &app{log: slog.New(slog.NewTextHandler(&logged, nil))}
			src := servePriceSources(tt.emu, func(k string) string { return tt.env[k] })
			refresh, every, err := a.catalogRefresher(tt.given, src, filepath.Join(t.TempDir(), "catalog.json"))
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error saying %q", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if every != tt.every || (refresh != nil) != (tt.every > 0) {
				t.Errorf("refreshes every %s (%v), want %s", every, refresh != nil, tt.every)
			}
			if tt.every > 0 && !slices.Equal(src.clouds, tt.clouds) {
				t.Errorf("reads %v, want %v", src.clouds, tt.clouds)
			}
			if !strings.Contains(logged.String(), tt.log) {
				t.Errorf("the log does not say %q:\n%s", tt.log, logged.String())
			}
		})
	}
}
