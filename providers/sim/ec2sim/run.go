// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

type runInstancesResponse struct {
	XMLName       xml.Name      `xml:"RunInstancesResponse"`
	Xmlns         string        `xml:"xmlns,attr"`
	RequestID     string        `xml:"requestId"`
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Groups        []groupXML    `xml:"groupSet>item"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

// launch is a validated RunInstances request.
type launch struct {
	region, zone, instanceType string
	market                     catalog.Market
	minCount, maxCount         int
	token                      string
	tags                       map[string]string
	// volumeTags are the tags for the launch's volumes.
	volumeTags map[string]string
	// properties are stored on every instance of the reservation.
	properties map[string]string
	// devices are the EBS volumes each instance gets, without their ids.
	devices []blockDevice
	// nics are the network interfaces each instance gets, without their
	// addresses.
	nics []networkInterface
	// params is the canonical form of the parameters a ClientToken replay
	// must repeat; digest is its short form, kept on the instances.
	params, digest string
	// maxPriceMicros caps a spot launch's price; zero for none.
	maxPriceMicros int64
}

// maxLaunchCount bounds one RunInstances call: the emulator's stand-in for
// the account's instance limit.
const maxLaunchCount = 1000

var (
	amiID   = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)
	groupID = regexp.MustCompile(`^sg-([0-9a-f]{8}|[0-9a-f]{17})$`)
)

func (s *Server) runInstances(req *request) (any, *apiError) {
	form := req.form
	instanceType := form.Get("InstanceType")
	market := catalog.OnDemand
	if form.Get("InstanceMarketOptions.MarketType") == "spot" {
		market = catalog.Spot
	}
	// A launch into a subnet goes to the subnet's zone; one that names
	// neither goes where EC2 would choose.
	zone := form.Get("Placement.AvailabilityZone")
	if subnet := launchSubnetID(form); zone == "" && subnet != "" {
		if sn, ok := s.findSubnet(req.region, subnet); ok {
			zone = sn.Zone
		}
	}
	if zone == "" {
		zone = s.defaultZone(req.region, instanceType, market)
	}
	lc := launchContext{region: req.region, zone: zone, instanceType: instanceType, market: market}
	outcome, apiErr := s.intercept(req, zone, instanceType)
	if apiErr != nil {
		return nil, apiErr
	}
	// A dry run meets throttling and server errors, not the launch's
	// own failures: it launches nothing.
	if outcome.Err != nil && (!req.dryRun || outcome.Err.Kind == sim.KindThrottled || outcome.Err.Kind == sim.KindServerError) {
		return nil, s.worldError(outcome.Err, lc)
	}
	l, apiErr := s.parseLaunch(req, zone, market)
	if apiErr != nil {
		return nil, apiErr
	}
	lc.count = l.minCount

	s.mutations.Lock()
	defer s.mutations.Unlock()
	if l.token != "" {
		if earlier := s.byToken(req.region, l.token); len(earlier) > 0 {
			if earlier[0].Properties[propParamsDigest] != l.digest {
				return nil, s.worldError(&sim.Error{Kind: sim.KindIdempotencyMismatch}, lc)
			}
			return s.runResponse(req, earlier, false), nil
		}
	}
	if apiErr := s.launchGroup(req, &l); apiErr != nil {
		return nil, apiErr
	}
	if l.maxPriceMicros > 0 {
		if price, ok := s.spotPrice(req.region, l.zone, l.instanceType); ok && l.maxPriceMicros < price {
			return nil, &apiError{Status: http.StatusBadRequest, Code: "SpotMaxPriceTooLow", Message: fmt.Sprintf(
				"Your Spot request price of %s is lower than the minimum required Spot request fulfillment price of %s.", dollars(l.maxPriceMicros), dollars(price))}
		}
	}

	if req.dryRun {
		// Whether the zone offers the type is the call's to check, as
		// EC2's dry run does; whether it has room is not.
		if _, ok := s.world.Type(cloud, l.zone, l.instanceType, l.market); !ok {
			return nil, s.worldError(&sim.Error{Kind: sim.KindUnsupported}, lc)
		}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	insts, fresh, apiErr := s.launchReservation(req, l, outcome.FailLater, lc)
	if apiErr != nil {
		return nil, apiErr
	}
	return s.runResponse(req, insts, fresh), nil
}

// launchReservation launches between MinCount and MaxCount instances, as
// many as fit, or none at all below MinCount, as EC2 does. fresh is false
// when the world recognised the token and answered with an earlier
// reservation.
func (s *Server) launchReservation(req *request, l launch, failLater *sim.Error, lc launchContext) (insts []*sim.Instance, fresh bool, apiErr *apiError) {
	plan, fit, apiErr := s.planAddresses(req.region, l.nics, l.minCount, l.maxCount)
	if apiErr != nil {
		return nil, false, apiErr
	}
	reservation := s.newID("r", 17)
	for i := range fit {
		spec := sim.LaunchSpec{
			Cloud:        cloud,
			Zone:         l.zone,
			InstanceType: l.instanceType,
			Market:       l.market,
			Tags:         l.tags,
			Params:       l.params,
			Properties:   maps.Clone(l.properties),
		}
		spec.Properties[propReservation] = reservation
		spec.Properties[propLaunchIndex] = strconv.Itoa(i)
		spec.Properties[propBlockDevices] = withVolumes(l.devices, reservation, i)
		spec.Properties[propNetworkInterfaces] = plan.assign(l.nics, fmt.Sprintf("%s/%d", reservation, i))
		if l.market == catalog.Spot {
			spec.Properties[propSpotRequest] = s.newID("sir", 8)
		}
		if failLater != nil {
			spec.Properties[propLaunchFailure] = launchFailure(failLater)
		}
		// Only the first instance carries the world's token: the world
		// maps a token to one instance, and the rest are found by their
		// reservation.
		if i == 0 && l.token != "" {
			spec.Token = sim.TokenKey(cloud, req.region, l.token)
		}
		res, err := s.world.Launch(spec)
		if err != nil {
			if len(insts) >= l.minCount {
				break
			}
			for _, inst := range insts {
				s.world.Remove(inst.ID)
			}
			return nil, false, s.worldError(err, lc)
		}
		if !res.Created {
			// The world still knows the token though no listed instance
			// carries it: answer with the reservation it points at.
			return s.reservation(req.region, res.Instance.Properties[propReservation]), false, nil
		}
		insts = append(insts, res.Instance)
	}
	if failLater != nil {
		// EC2 has no operations to fail: a launch that fails after it was
		// accepted shows as instances that go from pending to terminated,
		// with the reason in their state reason.
		for _, inst := range insts {
			if _, err := s.world.Terminate(inst.ID); err != nil {
				return nil, false, s.worldError(err, lc)
			}
		}
	}
	return insts, true, nil
}

func (s *Server) runResponse(req *request, insts []*sim.Instance, fresh bool) runInstancesResponse {
	out := runInstancesResponse{Xmlns: xmlns, RequestID: req.id, OwnerID: s.opts.AccountID}
	for _, inst := range insts {
		out.ReservationID = inst.Properties[propReservation]
		out.Instances = append(out.Instances, s.renderInstance(inst, fresh))
	}
	return out
}

// parseLaunch validates a RunInstances request beyond what the fault
// check needed.
func (s *Server) parseLaunch(req *request, zone string, market catalog.Market) (launch, *apiError) {
	form := req.form
	l := launch{
		region:       req.region,
		zone:         zone,
		instanceType: form.Get("InstanceType"),
		market:       market,
		token:        form.Get("ClientToken"),
		tags:         map[string]string{},
		volumeTags:   map[string]string{},
		properties:   map[string]string{},
	}

	image := form.Get("ImageId")
	if image == "" {
		return l, missingParameter("ImageId")
	}
	image, apiErr := s.resolveImage(req.region, image)
	if apiErr != nil {
		return l, apiErr
	}
	l.properties[propImage] = image

	minCount, hasMin, apiErr := intParam(form, "MinCount")
	if apiErr != nil {
		return l, apiErr
	}
	maxCount, hasMax, apiErr := intParam(form, "MaxCount")
	if apiErr != nil {
		return l, apiErr
	}
	switch {
	case !hasMin:
		return l, missingParameter("MinCount")
	case !hasMax:
		return l, missingParameter("MaxCount")
	case minCount < 1:
		return l, invalidValue("Value (%d) for parameter minCount is invalid. Expected a value greater than 0.", minCount)
	case maxCount < minCount:
		return l, invalidValue("Value (%d) for parameter maxCount is invalid. Expected a value greater than or equal to minCount.", maxCount)
	case minCount > maxLaunchCount:
		return l, &apiError{Status: http.StatusBadRequest, Code: "InstanceLimitExceeded", Message: fmt.Sprintf("Your quota allows for %d more running instance(s). You requested at least %d", maxLaunchCount, minCount)}
	}
	l.minCount, l.maxCount = minCount, min(maxCount, maxLaunchCount)

	if len(l.token) > 64 {
		return l, invalidValue("Value (%s) for parameter clientToken is invalid. Length exceeds maximum of 64 characters.", l.token)
	}
	l.properties[propClientToken] = l.token
	// Key pairs are not modelled: any name is one the account has.
	if key := form.Get("KeyName"); key != "" {
		l.properties[propKeyName] = key
	}

	if apiErr := s.checkPlacement(req, &l); apiErr != nil {
		return l, apiErr
	}
	if apiErr := parseMarket(form, &l); apiErr != nil {
		return l, apiErr
	}
	if apiErr := parseTagSpecifications(form, &l); apiErr != nil {
		return l, apiErr
	}
	if apiErr := s.parseNetwork(form, req.region, &l); apiErr != nil {
		return l, apiErr
	}
	if apiErr := parseUserData(form, &l); apiErr != nil {
		return l, apiErr
	}
	if apiErr := s.parseInstanceProfile(form, req.region, &l); apiErr != nil {
		return l, apiErr
	}
	if apiErr := parseMetadataOptions(form, &l); apiErr != nil {
		return l, apiErr
	}
	devices, apiErr := parseBlockDevices(form, image)
	if apiErr != nil {
		return l, apiErr
	}
	l.devices = devices
	l.properties[propRootDevice] = rootDeviceOf(image)
	if tags := encodeTags(l.volumeTags); tags != "" {
		l.properties[propVolumeTags] = tags
	}

	l.params = canonicalParams(form)
	sum := sha256.Sum256([]byte(l.params))
	l.digest = hex.EncodeToString(sum[:16])
	l.properties[propParamsDigest] = l.digest
	return l, nil
}

// checkPlacement checks the type and zone against the catalog; a type the
// zone does not offer is left to the world, which says so.
func (s *Server) checkPlacement(req *request, l *launch) *apiError {
	switch {
	case l.instanceType == "":
		return missingParameter("InstanceType")
	case !s.world.TypeExists(cloud, l.instanceType):
		return invalidValue("Invalid value '%s' for InstanceType.", l.instanceType)
	}
	if requested := req.form.Get("Placement.AvailabilityZone"); requested != "" {
		if region, ok := s.world.ZoneRegion(cloud, requested); !ok || region != req.region {
			return invalidValue("Invalid availability zone: [%s]", requested)
		}
		return nil
	}
	if l.zone == "" {
		return &apiError{Status: http.StatusBadRequest, Code: "Unsupported", Message: "The requested configuration is currently not supported. Please check the documentation for supported configurations."}
	}
	return nil
}

func parseMarket(form url.Values, l *launch) *apiError {
	get := form.Get
	switch marketType := get("InstanceMarketOptions.MarketType"); marketType {
	case "", "spot":
	case "capacity-block":
		return &apiError{Status: http.StatusBadRequest, Code: "Unsupported", Message: "The capacity-block market type is not supported by this endpoint."}
	default:
		return invalidValue("Invalid value '%s' for MarketType.", marketType)
	}
	if l.market != catalog.Spot {
		return nil
	}
	spotType := cmp.Or(get("InstanceMarketOptions.SpotOptions.SpotInstanceType"), "one-time")
	switch spotType {
	case "one-time", "persistent":
	default:
		return invalidValue("Invalid value '%s' for SpotInstanceType.", spotType)
	}
	interruption := cmp.Or(get("InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior"), "terminate")
	switch interruption {
	case "terminate", "stop", "hibernate":
	default:
		return invalidValue("Invalid value '%s' for InstanceInterruptionBehavior.", interruption)
	}
	// A persistent request relaunches what was interrupted, so what it
	// interrupts must be kept: RunInstances takes it only with stop or
	// hibernate.
	if spotType == "persistent" && interruption == "terminate" {
		return &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterCombination", Message: "Persistent Spot Instance requests are supported only when the instance interruption behavior is stop or hibernate, not terminate."}
	}
	if raw := get("InstanceMarketOptions.SpotOptions.MaxPrice"); raw != "" {
		price, err := strconv.ParseFloat(raw, 64)
		if err != nil || price <= 0 {
			return invalidValue("Invalid value '%s' for MaxPrice.", raw)
		}
		l.maxPriceMicros = int64(price*1e6 + 0.5)
		l.properties[propSpotMaxPrice] = dollars(l.maxPriceMicros)
	}
	l.properties[propSpotType] = spotType
	l.properties[propSpotInterruption] = interruption
	return nil
}

// taggableAtLaunch are the resource types RunInstances accepts tag
// specifications for; the instance's and its volumes' tags are kept.
var taggableAtLaunch = map[string]bool{
	"instance": true, "volume": true, "network-interface": true, "spot-instances-request": true,
}

func parseTagSpecifications(form url.Values, l *launch) *apiError {
	for _, n := range indexes(form, "TagSpecification") {
		prefix := fmt.Sprintf("TagSpecification.%d", n)
		resourceType := form.Get(prefix + ".ResourceType")
		if !taggableAtLaunch[resourceType] {
			return invalidValue("'%s' is not a valid taggable resource type for this operation.", resourceType)
		}
		tags, err := tagList(form, prefix+".Tag")
		if err != nil {
			return err
		}
		var into map[string]string
		switch resourceType {
		case "instance":
			into = l.tags
		case "volume":
			into = l.volumeTags
		default:
			continue
		}
		for _, t := range tags {
			into[t.key] = t.value
		}
	}
	if len(l.tags) > maxTags || len(l.volumeTags) > maxTags {
		return tagLimitExceeded()
	}
	return nil
}

// canonicalParams is every parameter a ClientToken replay must repeat: all
// of them but the token itself and the placement's zone, which EC2 exempts
// from the idempotency check along with the region. The world keeps them
// with the token, in its state file too, so the user data, which holds
// secrets, is kept as its digest, which tells another file apart as well.
func canonicalParams(form url.Values) string {
	kept := make(url.Values, len(form))
	for k, v := range form {
		switch k {
		case "ClientToken", "Placement.AvailabilityZone", "Placement.AvailabilityZoneId":
			continue
		case "UserData":
			sum := sha256.Sum256([]byte(strings.Join(v, "\x00")))
			v = []string{"sha256:" + hex.EncodeToString(sum[:])}
		}
		kept[k] = v
	}
	return kept.Encode() // sorted by key, so the SDK's field order does not matter
}

// byToken returns the reservation an earlier RunInstances with this token
// launched in the region, in launch order.
func (s *Server) byToken(region, token string) []*sim.Instance {
	return s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Region == region && inst.Properties[propClientToken] == token
	})
}

func (s *Server) reservation(region, id string) []*sim.Instance {
	return s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Region == region && inst.Properties[propReservation] == id
	})
}

// defaultZone is where EC2 places a launch that names no zone: here, the
// region's first zone that offers the type on the market and has a
// default subnet, else the first that offers it, where the launch fails
// for want of a subnet.
func (s *Server) defaultZone(region, instanceType string, market catalog.Market) string {
	r, ok := s.world.Region(cloud, region)
	if !ok {
		return ""
	}
	var offering []string
	for _, z := range r.Zones {
		if _, ok := s.world.Type(cloud, z, instanceType, market); ok {
			offering = append(offering, z)
		}
	}
	for _, z := range offering {
		if _, apiErr := s.defaultSubnetIn(region, z); apiErr == nil {
			return z
		}
	}
	if len(offering) > 0 {
		return offering[0]
	}
	return ""
}

// launchFailure is the state reason of a launch that failed after EC2
// accepted it.
func launchFailure(e *sim.Error) string {
	switch e.Code {
	case "InternalError", "Server.InternalError":
		return "Server.InternalError"
	}
	return reasonNoCapacity
}

// newID makes an EC2-style id from the world's seeded source, so that ids
// repeat with the seed.
func (s *Server) newID(prefix string, digits int) string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteByte('-')
	for range digits {
		b.WriteByte("0123456789abcdef"[s.world.Rand(16)])
	}
	return b.String()
}
