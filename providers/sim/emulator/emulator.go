// SPDX-License-Identifier: Apache-2.0

package emulator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/armsim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/providers/sim/gcesim"
	"github.com/gpufleet/gpufleet/providers/sim/lambdasim"
	"github.com/gpufleet/gpufleet/providers/sim/ocisim"
	"github.com/gpufleet/gpufleet/providers/sim/pricesim"
	"github.com/gpufleet/gpufleet/providers/sim/simtls"
)

// Endpoints are the base URLs of the fronts: the clouds' compute APIs, and
// their price APIs. (EC2's spot price history is on EC2; Lambda Cloud's
// prices are in its one API.)
type Endpoints struct {
	EC2 string `json:"ec2"`
	ARM string `json:"arm"`
	GCE string `json:"gce"`
	// AWSPricing serves the Price List API's GetProducts.
	AWSPricing string `json:"awsPricing"`
	// AzurePrices serves the Azure Retail Prices API.
	AzurePrices string `json:"azurePrices"`
	// GCPBilling serves the Cloud Billing Catalog's SKU listing.
	GCPBilling string `json:"gcpBilling"`
	// Lambda serves Lambda Cloud's API.
	Lambda string `json:"lambda"`
	// OCI serves OCI's compute and identity APIs for every region at
	// once: a client sends its requests here with the regional endpoint's
	// host as their Host (see ocisim).
	OCI string `json:"oci"`
}

// LambdaSSHKey is the SSH key the emulated Lambda Cloud account holds from
// the start, as an account does the key its owner added on signing up:
// Lambda launches name exactly one, and gpufleet adds none of its own.
var LambdaSSHKey = lambdasim.SSHKey{Name: "gpufleet", PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWVtdWxhdG9yLWxhbWJkYS1rZXk gpufleet@emulator"}

// Options configure Start.
type Options struct {
	// Host to listen on; it must be a loopback address. Empty means
	// 127.0.0.1.
	Host string
	// Ports for EC2, ARM and GCE; zero picks a free one.
	EC2Port, ARMPort, GCEPort int
	// Ports for the price APIs; zero picks a free one.
	AWSPricingPort, AzurePricesPort, GCPBillingPort int
	// LambdaPort is Lambda Cloud's; zero picks a free one.
	LambdaPort int
	// OCIPort is OCI's; zero picks a free one.
	OCIPort int
	// Prices configure the price fronts.
	Prices pricesim.Options
	// ARMThrottleRetryAfter is the wait ARM's injected throttling asks for
	// (see armsim.Options.ThrottleRetryAfter). Zero means one second.
	ARMThrottleRetryAfter time.Duration
	// SaveEvery is how often the world is written to its state file if
	// it changed in ways no request waited for: operations settling and
	// instances expiring as time passes, calls made on the World directly.
	// (A request that changed the world is answered once it is saved.)
	// Zero means 200 ms.
	SaveEvery time.Duration
	// Log receives a line per failed save; nil discards.
	Log *slog.Logger
	// SpotHistory, when set, gives EC2's spot prices a seeded past (see
	// ec2sim.SpotHistory), for importing price history.
	SpotHistory *ec2sim.SpotHistory
	// TLSDir, when set, makes every front serve https with a certificate
	// signed by a CA kept in this directory (see simtls), made on the
	// first start and kept after, so clients told once to trust it keep
	// trusting it. Empty serves plain http.
	TLSDir string
}

// Emulator is the fronts running over one world.
type Emulator struct {
	World     *sim.World
	Endpoints Endpoints
	// TLS names the CA and certificate the fronts serve https with; zero
	// when they serve plain http.
	TLS     simtls.Files
	servers []*http.Server
	stop    chan struct{}
	done    sync.WaitGroup
	log     *slog.Logger
}

// Start listens on loopback and serves the fronts until Close.
func Start(world *sim.World, opts Options) (*Emulator, error) {
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("the emulator listens on loopback only, not %q", host)
	}
	if opts.SaveEvery <= 0 {
		opts.SaveEvery = 200 * time.Millisecond
	}
	e := &Emulator{World: world, stop: make(chan struct{}), log: opts.Log}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	scheme := "http"
	var tlsConfig *tls.Config
	if opts.TLSDir != "" {
		files, err := simtls.Ensure(opts.TLSDir, host)
		if err != nil {
			return nil, err
		}
		if tlsConfig, err = files.ServerConfig(); err != nil {
			return nil, err
		}
		e.TLS, scheme = files, "https"
	}
	fronts := []struct {
		handler http.Handler
		port    int
		url     *string
	}{
		{ec2sim.New(world, ec2sim.Options{SpotHistory: opts.SpotHistory}), opts.EC2Port, &e.Endpoints.EC2},
		{armsim.New(world, armsim.Options{ThrottleRetryAfter: opts.ARMThrottleRetryAfter}), opts.ARMPort, &e.Endpoints.ARM},
		{gcesim.New(world, gcesim.Options{}), opts.GCEPort, &e.Endpoints.GCE},
		{pricesim.NewAWS(world, opts.Prices), opts.AWSPricingPort, &e.Endpoints.AWSPricing},
		{pricesim.NewAzure(world, opts.Prices), opts.AzurePricesPort, &e.Endpoints.AzurePrices},
		{pricesim.NewGCP(world, opts.Prices), opts.GCPBillingPort, &e.Endpoints.GCPBilling},
		{lambdasim.New(world, lambdasim.Options{SSHKeys: []lambdasim.SSHKey{LambdaSSHKey}}), opts.LambdaPort, &e.Endpoints.Lambda},
		{ocisim.New(world, ocisim.Options{}), opts.OCIPort, &e.Endpoints.OCI},
	}
	for _, f := range fronts {
		l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(f.port)))
		if err != nil {
			e.shutdown(context.Background())
			return nil, fmt.Errorf("starting the emulator, %w", err)
		}
		srv := &http.Server{Handler: durable(world, e.log, f.handler), ReadHeaderTimeout: 10 * time.Second}
		if tlsConfig != nil {
			// A config of its own: serving sets up HTTP/2 in it.
			srv.TLSConfig = tlsConfig.Clone()
		}
		e.servers = append(e.servers, srv)
		*f.url = scheme + "://" + l.Addr().String()
		e.done.Add(1)
		go func() {
			defer e.done.Done()
			var err error
			if tlsConfig != nil {
				err = srv.ServeTLS(l, "", "")
			} else {
				err = srv.Serve(l)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				e.log.Error("emulator front stopped", "err", err)
			}
		}()
	}
	e.done.Add(1)
	go e.autosave(opts.SaveEvery)
	return e, nil
}

// autosave writes what no request waited for to be saved: changes made by
// calling the World directly, and what time changed, which a crash would
// not lose (a restart redoes it) but which readers of the file, such as
// `sim inspect`, should see. It costs nothing while nothing changed.
func (e *Emulator) autosave(every time.Duration) {
	defer e.done.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-tick.C:
			if err := e.World.Save(); err != nil {
				e.log.Error("saving emulator state", "err", err)
			}
		}
	}
}

// Close stops the fronts, waiting for requests in flight, and saves the
// world.
func (e *Emulator) Close(ctx context.Context) error {
	err := e.shutdown(ctx)
	if saveErr := e.World.Save(); saveErr != nil {
		err = errors.Join(err, saveErr)
	}
	return err
}

func (e *Emulator) shutdown(ctx context.Context) error {
	// Requests in flight get a moment to finish. Connections that clients
	// opened and never used would otherwise hold Shutdown for five
	// seconds: past the moment, they are closed.
	ctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	var err error
	for _, srv := range e.servers {
		if serr := srv.Shutdown(ctx); errors.Is(serr, context.DeadlineExceeded) {
			err = errors.Join(err, srv.Close())
		} else {
			err = errors.Join(err, serr)
		}
	}
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
	e.done.Wait()
	return err
}
