// SPDX-License-Identifier: Apache-2.0

package emulator

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ocisim"
)

// The OCI front is served on a port of its own and routes by the Host a
// client keeps: the regional host reaches the API, which asks for a
// signature, and the front's own address is no OCI endpoint.
func TestOCIFront(t *testing.T) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := Start(world, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close(context.Background()) })
	for _, c := range []struct {
		host   string
		status int
		code   string
	}{
		{"", http.StatusNotFound, ocisim.CodeNotAuthorizedOrNotFound},
		{"iaas.us-ashburn-1.oraclecloud.com", http.StatusUnauthorized, ocisim.CodeNotAuthenticated},
	} {
		req, err := http.NewRequest("GET", emu.Endpoints.OCI+"/20160918/instances?compartmentId=ocid1.compartment.oc1..x", nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Code string }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.status || body.Code != c.code {
			t.Errorf("with Host %q the front answered %d %q (%v), want %d %s", c.host, resp.StatusCode, body.Code, err, c.status, c.code)
		}
	}
}
