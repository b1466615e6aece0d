// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// maxUserData is EC2's limit on user data, counted before base64.
const maxUserData = 16384

// parseUserData decodes the launch's user data and keeps it for
// DescribeInstanceAttribute. It is kept in base64, which the world's
// state file holds as it is: the decoded bytes need not be text (cloud-init
// takes gzip). EC2 reads base64 split across lines, as some tools send it.
// Neither the data nor any part of it ever goes into an answer but that
// one.
func parseUserData(form url.Values, l *launch) *apiError {
	raw := form.Get("UserData")
	if raw == "" {
		return nil
	}
	compact := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, raw)
	data, err := base64.StdEncoding.DecodeString(compact)
	if err != nil {
		return invalidValue("Invalid BASE64 encoding of user data")
	}
	if len(data) > maxUserData {
		return invalidValue("User data is limited to %d bytes", maxUserData)
	}
	l.properties[propUserData] = base64.StdEncoding.EncodeToString(data)
	return nil
}

var (
	// profileARN's groups are the account and the profile's name, after
	// its path.
	profileARN  = regexp.MustCompile(`^arn:aws[a-z-]*:iam::([0-9]{12}):instance-profile/(?:[\w+=,.@-]+/)*([\w+=,.@-]{1,128})$`)
	profileName = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
)

// parseInstanceProfile keeps the IAM instance profile the instances run
// as, by ARN. A profile named by name is the account's own; its ARN is
// built with the front's account id. Given both, the ARN is the one used.
// A profile must be one the world's account holds: EC2 asks IAM at launch,
// and answers for one that does not exist as for a malformed one.
func (s *Server) parseInstanceProfile(form url.Values, region string, l *launch) *apiError {
	arn, name := form.Get("IamInstanceProfile.Arn"), form.Get("IamInstanceProfile.Name")
	switch {
	case arn != "":
		m := profileARN.FindStringSubmatch(arn)
		if m == nil || m[1] != s.opts.AccountID || !s.world.HasInstanceProfile(m[2]) {
			return invalidValue("Value (%s) for parameter iamInstanceProfile.arn is invalid. Invalid IAM Instance Profile ARN", arn)
		}
	case name != "":
		if !profileName.MatchString(name) || !s.world.HasInstanceProfile(name) {
			return invalidValue("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", name)
		}
		arn = fmt.Sprintf("arn:%s:iam::%s:instance-profile/%s", partition(region), s.opts.AccountID, name)
	default:
		return nil
	}
	l.properties[propInstanceProfile] = arn
	return nil
}

// partition is the AWS partition a region belongs to.
func partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// profileID is the unique id IAM gives an instance profile ("AIPA" and 17
// characters), derived from its ARN so every answer agrees.
func profileID(arn string) string {
	sum := sha256.Sum256([]byte(arn))
	return "AIPA" + base32.StdEncoding.EncodeToString(sum[:11])[:17]
}

// metadataOption is one setting of the instance metadata service: its
// parameter, the property it is kept in, EC2's default for it and the
// values it takes.
type metadataOption struct {
	param, prop, def string
	values           []string
}

// metadataOptions are the settings of the instance metadata service a
// launch may give. The defaults are EC2's for an image that does not ask
// for IMDSv2 (none of the front's does): tokens optional, one hop.
var metadataOptions = []metadataOption{
	{"HttpTokens", propHTTPTokens, "optional", []string{"optional", "required"}},
	{"HttpEndpoint", propHTTPEndpoint, "enabled", []string{"disabled", "enabled"}},
	{"HttpProtocolIpv6", propHTTPProtocolIPv6, "disabled", []string{"disabled", "enabled"}},
	{"InstanceMetadataTags", propMetadataTags, "disabled", []string{"disabled", "enabled"}},
}

const (
	defaultHopLimit = 1
	maxHopLimit     = 64
)

func parseMetadataOptions(form url.Values, l *launch) *apiError {
	for _, o := range metadataOptions {
		v := form.Get("MetadataOptions." + o.param)
		switch {
		case v == "":
			v = o.def
		case !slices.Contains(o.values, v):
			return invalidValue("Value (%s) for parameter %s is invalid. Valid values: %s", v, o.param, strings.Join(o.values, ", "))
		}
		l.properties[o.prop] = v
	}
	hops := defaultHopLimit
	if raw := form.Get("MetadataOptions.HttpPutResponseHopLimit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxHopLimit {
			return invalidValue("Value (%s) for parameter HttpPutResponseHopLimit is invalid. Expected a value between 1 and %d.", raw, maxHopLimit)
		}
		hops = n
	}
	l.properties[propHopLimit] = strconv.Itoa(hops)
	return nil
}

type metadataOptionsXML struct {
	State                string `xml:"state"`
	HTTPTokens           string `xml:"httpTokens"`
	HopLimit             int    `xml:"httpPutResponseHopLimit"`
	HTTPEndpoint         string `xml:"httpEndpoint"`
	HTTPProtocolIPv6     string `xml:"httpProtocolIpv6"`
	InstanceMetadataTags string `xml:"instanceMetadataTags"`
}

// renderMetadataOptions draws an instance's metadata settings: pending in
// the answer to the launch, as EC2 shows them until they apply, applied
// from then on.
func renderMetadataOptions(inst *sim.Instance, fresh bool) *metadataOptionsXML {
	get := func(prop string) string {
		for _, o := range metadataOptions {
			if o.prop != prop {
				continue
			}
			if v := inst.Properties[prop]; v != "" {
				return v
			}
			return o.def
		}
		return ""
	}
	hops, err := strconv.Atoi(inst.Properties[propHopLimit])
	if err != nil {
		hops = defaultHopLimit
	}
	x := &metadataOptionsXML{
		State:                "applied",
		HTTPTokens:           get(propHTTPTokens),
		HopLimit:             hops,
		HTTPEndpoint:         get(propHTTPEndpoint),
		HTTPProtocolIPv6:     get(propHTTPProtocolIPv6),
		InstanceMetadataTags: get(propMetadataTags),
	}
	if fresh {
		x.State = "pending"
	}
	return x
}

type iamProfileXML struct {
	ARN string `xml:"arn"`
	ID  string `xml:"id"`
}

func renderInstanceProfile(inst *sim.Instance) *iamProfileXML {
	arn := inst.Properties[propInstanceProfile]
	if arn == "" {
		return nil
	}
	return &iamProfileXML{ARN: arn, ID: profileID(arn)}
}
