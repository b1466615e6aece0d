// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// sourceImage is the source type of an instance booted from an image, the
// one source the front launches from: the world keeps no boot volumes.
const sourceImage = "image"

// maxMetadata is the most bytes a launch's metadata may hold, keys and
// values together, as OCI limits it.
const maxMetadata = 32000

// maxTokenLength is the longest opc-retry-token OCI takes.
const maxTokenLength = 64

// launchDetails is the part of a LaunchInstance body the front acts on.
// The SDK sends the other fields OCI has (shape config, agent config,
// launch options, …) as a caller sets them; the front takes them and
// models none, as the world has nothing they would change.
type launchDetails struct {
	AvailabilityDomain string            `json:"availabilityDomain"`
	CompartmentID      string            `json:"compartmentId"`
	Shape              string            `json:"shape"`
	DisplayName        *string           `json:"displayName"`
	FreeformTags       map[string]string `json:"freeformTags"`
	Metadata           map[string]string `json:"metadata"`
	SourceDetails      *sourceDetails    `json:"sourceDetails"`
	CreateVnicDetails  *struct {
		SubnetID string `json:"subnetId"`
	} `json:"createVnicDetails"`
	// ImageID and SubnetID are the older, deprecated places of the image
	// and the subnet, which OCI still takes.
	ImageID  string `json:"imageId"`
	SubnetID string `json:"subnetId"`
	// PreemptibleInstanceConfig asks for preemptible capacity, OCI's spot.
	PreemptibleInstanceConfig json.RawMessage `json:"preemptibleInstanceConfig"`
}

// launchInstance serves POST /instances: one instance, or none and an
// error. A request with an opc-retry-token the tenancy used in the region
// before is answered with the instance that request launched, whatever
// its state now, when it repeats that request; a different request is
// refused.
func (s *Server) launchInstance(w http.ResponseWriter, req *request) error {
	var d launchDetails
	bodyErr := decodeBody(req.body, &d)
	call := sim.Call{Op: OpLaunchInstance, InstanceType: d.Shape}
	zone, zoneOK := s.zoneOf(req.region, d.AvailabilityDomain)
	if zoneOK {
		call.Zone = zone
	}
	lost, err := s.interceptLater(req, call)
	if err != nil {
		return err
	}
	if bodyErr != nil {
		return bodyErr
	}
	spec, err := s.launchSpec(req, d, zone, zoneOK)
	if err != nil {
		return err
	}
	res, err := s.world.Launch(spec)
	if err != nil {
		var werr *sim.Error
		if !errors.As(err, &werr) {
			return err
		}
		if werr.Kind == sim.KindUnsupported {
			// Offered no longer, between the check and the launch.
			return errShapeNotOffered(d.Shape, d.AvailabilityDomain)
		}
		return s.worldError(werr)
	}
	if lost != nil {
		// OCI reports a launch's failure on the request, so a fail-later
		// fault is a launch whose answer is lost: the instance is made,
		// and the caller hears a server error. A retry with the same
		// token finds it.
		e := errInternal()
		e.Message = "The launch did not complete; the instance it started may exist."
		return e
	}
	return writeInstance(w, s.render(res.Instance))
}

// launchSpec validates a launch as the API does, naming the parameter at
// fault, and makes it the world's.
func (s *Server) launchSpec(req *request, d launchDetails, zone string, zoneOK bool) (sim.LaunchSpec, error) {
	switch {
	case d.CompartmentID == "":
		return sim.LaunchSpec{}, errMissing("compartmentId")
	case d.AvailabilityDomain == "":
		return sim.LaunchSpec{}, errMissing("availabilityDomain")
	case !zoneOK:
		return sim.LaunchSpec{}, errInvalid("availabilityDomain", fmt.Sprintf("%s is not an availability domain of %s.", d.AvailabilityDomain, req.region))
	case d.Shape == "":
		return sim.LaunchSpec{}, errMissing("shape")
	case !s.world.TypeExists(cloud, d.Shape):
		return sim.LaunchSpec{}, errInvalid("shape", fmt.Sprintf("shape %s does not exist.", d.Shape))
	}
	market := catalog.OnDemand
	if preemptible := bytes.TrimSpace(d.PreemptibleInstanceConfig); len(preemptible) > 0 && string(preemptible) != "null" {
		market = catalog.Spot
	}
	if _, ok := s.world.Type(cloud, zone, d.Shape, market); !ok {
		if market == catalog.Spot {
			return sim.LaunchSpec{}, errInvalid("preemptibleInstanceConfig", fmt.Sprintf("shape %s is not offered as preemptible capacity in %s.", d.Shape, d.AvailabilityDomain))
		}
		return sim.LaunchSpec{}, errShapeNotOffered(d.Shape, d.AvailabilityDomain)
	}
	image := d.ImageID
	if d.SourceDetails != nil {
		if d.SourceDetails.SourceType != sourceImage {
			return sim.LaunchSpec{}, errInvalid("sourceDetails.sourceType", fmt.Sprintf("the emulator launches from an image only, not from %q.", d.SourceDetails.SourceType))
		}
		image = cmp.Or(d.SourceDetails.ImageID, image)
	}
	if image == "" {
		return sim.LaunchSpec{}, errMissing("sourceDetails.imageId")
	}
	subnet := d.SubnetID
	if d.CreateVnicDetails != nil {
		subnet = cmp.Or(d.CreateVnicDetails.SubnetID, subnet)
	}
	if subnet == "" {
		return sim.LaunchSpec{}, errMissing("createVnicDetails.subnetId")
	}
	size := 0
	for k, v := range d.Metadata {
		size += len(k) + len(v)
	}
	if size > maxMetadata {
		return sim.LaunchSpec{}, errInvalid("metadata", fmt.Sprintf("the metadata holds %d bytes, over the %d OCI allows.", size, maxMetadata))
	}
	if userData, ok := d.Metadata[userDataKey]; ok {
		// The message never quotes the value: it may hold secrets.
		if _, err := base64.StdEncoding.DecodeString(userData); err != nil {
			return sim.LaunchSpec{}, errInvalid("metadata.user_data", "the user data must be base64-encoded.")
		}
	}
	token := req.Header.Get("opc-retry-token")
	if len(token) > maxTokenLength {
		return sim.LaunchSpec{}, errInvalid("opc-retry-token", fmt.Sprintf("the token has %d characters, over the %d OCI allows.", len(token), maxTokenLength))
	}

	// OCI names an instance launched without a display name after the
	// moment it was launched.
	name := "instance" + s.world.Now().UTC().Format("20060102150405")
	if d.DisplayName != nil {
		name = *d.DisplayName
	}
	props := map[string]string{propDisplayName: name, propImage: image, propSubnet: subnet}
	for k, v := range d.Metadata {
		if k != userDataKey {
			props[propMetadata+k] = v
		}
	}
	// The display name is only a label, so the world is given no Name,
	// which it would hold unique.
	spec := sim.LaunchSpec{Cloud: cloud, Zone: zone, InstanceType: d.Shape, Market: market, Scope: d.CompartmentID,
		Tags: d.FreeformTags, Properties: props}
	if token != "" {
		spec.Token = sim.TokenKey(cloud, req.region, req.tenancy+"\x00"+token)
		spec.Params = paramsDigest(req.body)
	}
	return spec, nil
}

func errShapeNotOffered(shape, ad string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Message: fmt.Sprintf("Shape %s is not valid for availability domain %s.", shape, ad)}
}

// paramsDigest is what a repeat of a launch must match: a digest of its
// whole body in a canonical form, so that the order of its fields does
// not count and the world keeps nothing of it, the user data least of all.
func paramsDigest(body []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	canonical := body
	if dec.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canonical = b
		}
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// decodeBody decodes a request's JSON body. A field the front does not
// model is taken and dropped, as the SDK sends any field OCI has; one of
// the wrong type is refused by name.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errCannotParse("the request needs a JSON body.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return errInvalid(typeErr.Field, fmt.Sprintf("the value is not a %s.", typeErr.Type.Kind()))
		}
		return errCannotParse("the body is not valid JSON.")
	}
	if dec.More() {
		return errCannotParse("the body holds more than one JSON value.")
	}
	return nil
}
