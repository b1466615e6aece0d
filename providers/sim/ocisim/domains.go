// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"crypto/sha256"
	"encoding/base32"
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// adPrefix is the front's tenancy prefix of availability domain names. OCI
// names a domain for each tenancy with a few letters of its own before the
// domain's tenancy-independent name ("Uocm:PHX-AD-1"); the emulator's
// tenancies all have this one.
const adPrefix = "gpuf"

// adName is the name of a zone's availability domain.
func adName(zone string) string { return adPrefix + ":" + zone }

// adID is an availability domain's OCID, made from its zone so that it is
// the same on every run and for every tenancy.
func adID(zone string) string {
	sum := sha256.Sum256([]byte("availability domain " + zone))
	unique := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))
	return "ocid1.availabilitydomain.oc1..aaaaaaaa" + unique
}

// zoneOf finds the zone of an availability domain named in a region. The
// name is compared without regard to case, as OCI compares it.
func (s *Server) zoneOf(region, name string) (string, bool) {
	prefix, zone, ok := strings.Cut(name, ":")
	if !ok || !strings.EqualFold(prefix, adPrefix) {
		return "", false
	}
	reg, _ := s.world.Region(cloud, region)
	for _, z := range reg.Zones {
		if strings.EqualFold(z, zone) {
			return z, true
		}
	}
	return "", false
}

// availabilityDomain is an availability domain as the identity API
// renders it.
type availabilityDomain struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	// CompartmentID is the tenancy's OCID, whichever compartment was asked
	// about: domains belong to the tenancy.
	CompartmentID string `json:"compartmentId"`
}

// listAvailabilityDomains serves GET /availabilityDomains on the identity
// endpoint: the region's domains, in the catalog's order, in one answer.
func (s *Server) listAvailabilityDomains(w http.ResponseWriter, req *request) error {
	if err := s.intercept(req, sim.Call{Op: OpListAvailabilityDomains}); err != nil {
		return err
	}
	if req.URL.Query().Get("compartmentId") == "" {
		return errMissing("compartmentId")
	}
	reg, _ := s.world.Region(cloud, req.region)
	out := make([]availabilityDomain, 0, len(reg.Zones))
	for _, z := range reg.Zones {
		out = append(out, availabilityDomain{Name: adName(z), ID: adID(z), CompartmentID: req.tenancy})
	}
	return writeJSON(w, http.StatusOK, out)
}
