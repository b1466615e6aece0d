// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"encoding/xml"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
)

const signedEast = "AWS4-HMAC-SHA256 Credential=AKIDSIM/20261102/us-east-1/ec2/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"

type rawAnswer struct {
	status                   int
	code, message, requestID string
	body                     string
}

// post sends a Query API request the SDK would never send.
func post(t testing.TB, base, method, auth, body string) rawAnswer {
	t.Helper()
	target := base + "/"
	var reader io.Reader = strings.NewReader(body)
	if method == http.MethodGet {
		target += "?" + body
		reader = nil
	}
	req, err := http.NewRequest(method, target, reader)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	ans := rawAnswer{status: resp.StatusCode, body: string(raw)}
	if resp.StatusCode/100 != 2 {
		var envelope struct {
			XMLName   xml.Name `xml:"Response"`
			Code      string   `xml:"Errors>Error>Code"`
			Message   string   `xml:"Errors>Error>Message"`
			RequestID string   `xml:"RequestID"`
		}
		if err := xml.Unmarshal(raw, &envelope); err != nil {
			t.Fatalf("status %d with a body that is not EC2's error envelope: %v\n%s", resp.StatusCode, err, raw)
		}
		ans.code, ans.message, ans.requestID = envelope.Code, envelope.Message, envelope.RequestID
	}
	return ans
}

func TestBadInput(t *testing.T) {
	// us-east-1 sells g6.12xlarge on demand only, so a spot run of it fails.
	f := newFixture(t, sim.Config{Catalog: withoutSpot(t, "us-east-1", "g6.12xlarge")})
	const v = "&Version=2016-11-15"
	run := "Action=RunInstances" + v + "&ImageId=ami-0123456789abcdef0&InstanceType=g4dn.xlarge&MinCount=1&MaxCount=1"
	tests := []struct {
		name       string
		method     string
		auth       string
		body       string
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{name: "no action", body: "Version=2016-11-15", wantStatus: 400, wantCode: "MissingAction"},
		{name: "dry run", body: run + "&DryRun=true", wantStatus: 412, wantCode: "DryRunOperation", wantMsg: "Request would have succeeded, but DryRun flag is set."},
		{name: "dry run, not a boolean", body: "Action=DescribeRegions" + v + "&DryRun=maybe", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "a VPC without a CIDR", body: "Action=CreateVpc" + v, wantStatus: 400, wantCode: "MissingParameter"},
		{name: "a subnet without a VPC", body: "Action=CreateSubnet" + v + "&CidrBlock=10.0.0.0/24", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "a group without a description", body: "Action=CreateSecurityGroup" + v + "&GroupName=web", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "deleting a malformed subnet id", body: "Action=DeleteSubnet" + v + "&SubnetId=subnet-zz", wantStatus: 400, wantCode: "InvalidSubnetID.Malformed"},
		{name: "a rule without a protocol's ports", body: "Action=AuthorizeSecurityGroupIngress" + v + "&GroupName=default&IpProtocol=tcp&CidrIp=0.0.0.0/0", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "status: a page too small", body: "Action=DescribeInstanceStatus" + v + "&MaxResults=4", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "empty body", body: "", wantStatus: 400, wantCode: "MissingAction"},
		{name: "unknown action", body: "Action=DescribeInternetGateways" + v, wantStatus: 400, wantCode: "InvalidAction", wantMsg: "The action DescribeInternetGateways is not valid for this web service."},
		{name: "unknown version", body: "Action=DescribeInstances&Version=2099-01-01", wantStatus: 400, wantCode: "NoSuchVersion", wantMsg: "The requested version (2099-01-01) of service AmazonEC2 does not exist"},
		{name: "no version", body: "Action=DescribeInstances", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "malformed encoding", body: "Action=%zz" + v, wantStatus: 404, wantCode: "MalformedQueryString"},
		{name: "oversized body", body: "Action=DescribeInstances" + v + "&Filter.1.Name=tag:x&Filter.1.Value.1=" + strings.Repeat("a", 1<<20), wantStatus: 413, wantCode: "RequestEntityTooLarge"},
		{name: "region the catalog lacks", auth: strings.Replace(signedEast, "us-east-1", "mars-north-1", 1), body: "Action=DescribeInstances" + v, wantStatus: 401, wantCode: "AuthFailure"},
		{name: "not SigV4", auth: "Basic dXNlcjpwYXNz", body: "Action=DescribeInstances" + v, wantStatus: 400, wantCode: "IncompleteSignature"},
		{name: "SigV4 without a credential", auth: "AWS4-HMAC-SHA256 SignedHeaders=host, Signature=00", body: "Action=DescribeInstances" + v, wantStatus: 400, wantCode: "IncompleteSignature"},
		{name: "credential of the wrong shape", auth: "AWS4-HMAC-SHA256 Credential=AKID/us-east-1, Signature=00", body: "Action=DescribeInstances" + v, wantStatus: 400, wantCode: "IncompleteSignature"},
		{name: "unsigned request", body: "Action=DescribeInstances" + v, wantStatus: 200},
		{name: "GET", method: http.MethodGet, body: "Action=DescribeInstances" + v, wantStatus: 200},

		{name: "run: no image", body: strings.Replace(run, "ImageId=ami-0123456789abcdef0&", "", 1), wantStatus: 400, wantCode: "MissingParameter", wantMsg: "The request must contain the parameter ImageId"},
		{name: "run: malformed image", body: strings.Replace(run, "ami-0123456789abcdef0", "ubuntu", 1), wantStatus: 400, wantCode: "InvalidAMIID.Malformed", wantMsg: `Invalid id: "ubuntu" (expecting "ami-...")`},
		{name: "run: no type", body: strings.Replace(run, "InstanceType=g4dn.xlarge&", "", 1), wantStatus: 400, wantCode: "MissingParameter"},
		{name: "run: unknown type", body: strings.Replace(run, "g4dn.xlarge", "x1.huge", 1), wantStatus: 400, wantCode: "InvalidParameterValue", wantMsg: "Invalid value 'x1.huge' for InstanceType."},
		{name: "run: unknown zone", body: run + "&Placement.AvailabilityZone=mars-1a", wantStatus: 400, wantCode: "InvalidParameterValue", wantMsg: "Invalid availability zone: [mars-1a]"},
		{name: "run: another region's zone", body: run + "&Placement.AvailabilityZone=us-west-2a", wantStatus: 400, wantCode: "InvalidParameterValue", wantMsg: "Invalid availability zone: [us-west-2a]"},
		{name: "run: no spot offer in the region", body: strings.Replace(run, "g4dn.xlarge", "g6.12xlarge", 1) + "&InstanceMarketOptions.MarketType=spot", wantStatus: 400, wantCode: "Unsupported"},
		{name: "run: no MinCount", body: strings.Replace(run, "MinCount=1&", "", 1), wantStatus: 400, wantCode: "MissingParameter"},
		{name: "run: MinCount not a number", body: strings.Replace(run, "MinCount=1", "MinCount=one", 1), wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: MinCount zero", body: strings.Replace(run, "MinCount=1", "MinCount=0", 1), wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: MaxCount below MinCount", body: strings.Replace(run, "MinCount=1", "MinCount=3", 1), wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: past the instance limit", body: strings.NewReplacer("MinCount=1", "MinCount=5000", "MaxCount=1", "MaxCount=5000").Replace(run), wantStatus: 400, wantCode: "InstanceLimitExceeded"},
		{name: "run: token too long", body: run + "&ClientToken=" + strings.Repeat("t", 65), wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: unknown market", body: run + "&InstanceMarketOptions.MarketType=auction", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: capacity blocks", body: run + "&InstanceMarketOptions.MarketType=capacity-block", wantStatus: 400, wantCode: "Unsupported"},
		{name: "run: bad spot price", body: run + "&InstanceMarketOptions.MarketType=spot&InstanceMarketOptions.SpotOptions.MaxPrice=cheap", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: bad interruption behaviour", body: run + "&InstanceMarketOptions.MarketType=spot&InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior=explode", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: untaggable resource", body: run + "&TagSpecification.1.ResourceType=bucket&TagSpecification.1.Tag.1.Key=a&TagSpecification.1.Tag.1.Value=b", wantStatus: 400, wantCode: "InvalidParameterValue", wantMsg: "'bucket' is not a valid taggable resource type for this operation."},
		{name: "run: reserved tag", body: run + "&TagSpecification.1.ResourceType=instance&TagSpecification.1.Tag.1.Key=aws:x&TagSpecification.1.Tag.1.Value=b", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: bad subnet", body: run + "&SubnetId=net-1", wantStatus: 400, wantCode: "InvalidSubnetID.NotFound"},
		{name: "run: bad security group", body: run + "&SecurityGroupId.1=default", wantStatus: 400, wantCode: "InvalidGroupId.Malformed"},
		{name: "run: zero-size volume", body: run + "&BlockDeviceMapping.1.DeviceName=/dev/xvda&BlockDeviceMapping.1.Ebs.VolumeSize=0", wantStatus: 400, wantCode: "InvalidParameterValue"},

		{name: "run: user data not base64", body: run + "&UserData=%23!%2Fbin%2Fsh", wantStatus: 400, wantCode: "InvalidParameterValue", wantMsg: "Invalid BASE64 encoding of user data"},
		{name: "run: hop limit out of range", body: run + "&MetadataOptions.HttpPutResponseHopLimit=99", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "run: mapping without a device", body: run + "&BlockDeviceMapping.1.Ebs.VolumeSize=10", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "run: malformed instance profile", body: run + "&IamInstanceProfile.Name=a%20b", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "attribute: no attribute", body: "Action=DescribeInstanceAttribute" + v + "&InstanceId=i-0123456789abcdef0", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "attribute: no instance", body: "Action=DescribeInstanceAttribute" + v + "&Attribute=userData", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "images: malformed id", body: "Action=DescribeImages" + v + "&ImageId.1=ubuntu", wantStatus: 400, wantCode: "InvalidAMIID.Malformed"},
		{name: "volumes: ids with MaxResults", body: "Action=DescribeVolumes" + v + "&VolumeId.1=vol-0123456789abcdef0&MaxResults=5", wantStatus: 400, wantCode: "InvalidParameterCombination"},
		{name: "volumes: another action's token", body: "Action=DescribeVolumes" + v + "&NextToken=c3BvdDo5OTk", wantStatus: 400, wantCode: "InvalidPaginationToken"},

		{name: "describe: filter without a name", body: "Action=DescribeInstances" + v + "&Filter.1.Value.1=x", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "describe: MaxResults not a number", body: "Action=DescribeInstances" + v + "&MaxResults=many", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "terminate: no ids", body: "Action=TerminateInstances" + v, wantStatus: 400, wantCode: "MissingParameter"},
		{name: "tags: no tags", body: "Action=CreateTags" + v + "&ResourceId.1=i-0123456789abcdef0", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "tags: no resources", body: "Action=CreateTags" + v + "&Tag.1.Key=a", wantStatus: 400, wantCode: "MissingParameter"},
		{name: "spot: bad time", body: "Action=DescribeSpotPriceHistory" + v + "&StartTime=yesterday", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "spot: MaxResults out of range", body: "Action=DescribeSpotPriceHistory" + v + "&MaxResults=5000", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "offerings: unknown location type", body: "Action=DescribeInstanceTypeOfferings" + v + "&LocationType=planet", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "offerings: outposts", body: "Action=DescribeInstanceTypeOfferings" + v + "&LocationType=outpost", wantStatus: 400, wantCode: "InvalidParameterValue"},
		{name: "offerings: MaxResults below 5", body: "Action=DescribeInstanceTypeOfferings" + v + "&MaxResults=2", wantStatus: 400, wantCode: "InvalidParameterValue", wantMsg: "Value ( 2 ) for parameter maxResults is invalid. Expecting a value between 5 and 1000."},
		{name: "offerings: unknown filter", body: "Action=DescribeInstanceTypeOfferings" + v + "&Filter.1.Name=vcpus&Filter.1.Value.1=8", wantStatus: 400, wantCode: "InvalidParameterValue", wantMsg: "The filter 'vcpus' is invalid"},
		{name: "offerings: another action's token", body: "Action=DescribeInstanceTypeOfferings" + v + "&NextToken=c3BvdDo5OTk", wantStatus: 400, wantCode: "InvalidPaginationToken"},
		{name: "offerings: a token past the end", body: "Action=DescribeInstanceTypeOfferings" + v + "&NextToken=b2ZmZXJpbmdzOjk5OTk", wantStatus: 400, wantCode: "InvalidPaginationToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			auth := tt.auth
			if auth == "" && tt.name != "unsigned request" {
				auth = signedEast
			}
			got := post(t, f.url, method, auth, tt.body)
			if got.status != tt.wantStatus || got.code != tt.wantCode {
				t.Fatalf("got %d %s (%s), want %d %s", got.status, got.code, got.message, tt.wantStatus, tt.wantCode)
			}
			if tt.wantMsg != "" && got.message != tt.wantMsg {
				t.Errorf("message %q, want %q", got.message, tt.wantMsg)
			}
			if tt.wantStatus != 200 && got.requestID == "" {
				t.Error("error envelope without a RequestID")
			}
			if tt.wantStatus == 200 && !strings.Contains(got.body, `xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"`) {
				t.Errorf("answer lacks EC2's namespace:\n%s", got.body)
			}
		})
	}
}

// queryVocabulary is what the random requests are built from: every
// parameter the front reads, with good, bad and strange values.
var (
	queryActions = []string{"RunInstances", "DescribeInstances", "TerminateInstances", "CreateTags", "DescribeSpotPriceHistory", "DescribeInstanceTypeOfferings",
		"DescribeInstanceAttribute", "DescribeImages", "DescribeVolumes", "DescribeInstanceTypes", "DescribeAvailabilityZones",
		"DescribeRegions", "DescribeInstanceStatus", "CreateVpc", "DescribeVpcs", "DeleteVpc", "CreateSubnet", "DescribeSubnets",
		"DeleteSubnet", "CreateSecurityGroup", "DescribeSecurityGroups", "DeleteSecurityGroup", "AuthorizeSecurityGroupIngress",
		"AuthorizeSecurityGroupEgress", "DescribeTags", "DescribeSpotInstanceRequests", "CreatePlacementGroup",
		"DescribePlacementGroups", "DeletePlacementGroup", "StopInstances", "StartInstances", "", "Nope"}
	queryKeys = []string{
		"ImageId", "InstanceType", "MinCount", "MaxCount", "ClientToken", "Placement.AvailabilityZone",
		"InstanceMarketOptions.MarketType", "InstanceMarketOptions.SpotOptions.MaxPrice",
		"InstanceMarketOptions.SpotOptions.SpotInstanceType", "TagSpecification.1.ResourceType",
		"TagSpecification.1.Tag.1.Key", "TagSpecification.1.Tag.1.Value", "TagSpecification.0.Tag.-1.Key",
		"SubnetId", "SecurityGroupId.1", "SecurityGroupId.99999999999999999999", "BlockDeviceMapping.1.Ebs.VolumeSize",
		"InstanceId.1", "InstanceId.2", "Filter.1.Name", "Filter.1.Value.1", "Filter.2.Name", "MaxResults", "NextToken",
		"ResourceId.1", "Tag.1.Key", "Tag.1.Value", "AvailabilityZone", "StartTime", "EndTime", "ProductDescription.1",
		"InstanceType.1", "Version", "LocationType", "UserData", "InstanceId", "Attribute", "ImageId.1", "VolumeId.1",
		"IamInstanceProfile.Name", "IamInstanceProfile.Arn", "MetadataOptions.HttpTokens", "MetadataOptions.HttpPutResponseHopLimit",
		"BlockDeviceMapping.1.DeviceName", "BlockDeviceMapping.1.Ebs.VolumeType", "BlockDeviceMapping.1.Ebs.DeleteOnTermination",
		"BlockDeviceMapping.2.DeviceName", "BlockDeviceMapping.2.Ebs.VolumeSize",
		"ZoneName.1", "ZoneId.1", "RegionName.1", "AllRegions", "AllAvailabilityZones", "IncludeAllInstances", "IncludeUnsupportedInRegion",
		"CidrBlock", "VpcId", "VpcId.1", "SubnetId.1", "AvailabilityZoneId", "GroupName", "GroupDescription", "GroupId", "GroupId.1",
		"GroupName.1", "SecurityGroup.1", "IpProtocol", "FromPort", "ToPort", "CidrIp", "IpPermissions.1.IpProtocol",
		"IpPermissions.1.FromPort", "IpPermissions.1.ToPort", "IpPermissions.1.IpRanges.1.CidrIp", "IpPermissions.1.Groups.1.GroupId",
		"NetworkInterface.1.DeviceIndex", "NetworkInterface.1.SubnetId", "NetworkInterface.1.AssociatePublicIpAddress", "DryRun", "KeyName",
		"InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior", "Placement.GroupName", "Placement.GroupId", "Strategy",
		"PartitionCount", "Force", "Hibernate",
	}
	queryValues = []string{
		"", "1", "0", "-1", "5", "1000", "99999999999999999999", "ami-0123456789abcdef0", "resolve:ssm:", "g4dn.xlarge",
		"p5.48xlarge", "us-east-1a", "us-west-2a", "spot", "instance", "tag:team", "instance-state-name", "running",
		"i-0123456789abcdef0", "i-", "aws:x", "2026-11-01T00:00:00Z", "not-a-time", "Linux/UNIX", "ZWMyOjE", "*", "?",
		"\\", "\x00", "ü", strings.Repeat("z", 300), "2016-11-15", "availability-zone", "region", "location",
		"userData", "blockDeviceMapping", "kernel", "/dev/xvda", "/dev/sda1", "required", "gp3", "true", "aGVsbG8=", "!!!",
		"vol-0123456789abcdef0", "ami-0123456789abcdef1", "arn:aws:iam::123456789012:instance-profile/x",
		"10.0.0.0/16", "10.0.1.0/24", "172.31.0.0/20", "0.0.0.0/0", "10.0.0.1/33", "::/0", "vpc-0123456789abcdef0",
		"subnet-0123456789abcdef0", "sg-0123456789abcdef0", "default", "use1-az1", "tcp", "-1", "65536", "false",
		"availability-zone-id", "mars-north-1", "eu-west-1", "persistent", "terminate", "stop", "cluster",
		"resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", "resolve:ssm:arn:aws:ssm:::parameter",
		"resolve:ssm:/x:", "arn:aws:iam::123456789012:instance-profile/",
	}
)

// TestRandomQueries throws seeded random requests at every action: each
// must be answered in EC2's shape, and none may reach the handler's panic
// guard (which answers InternalError).
func TestRandomQueries(t *testing.T) {
	f := newFixture(t, sim.Config{})
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 1500 {
		form := url.Values{"Action": {queryActions[rng.IntN(len(queryActions))]}, "Version": {"2016-11-15"}}
		for range rng.IntN(8) {
			form.Add(queryKeys[rng.IntN(len(queryKeys))], queryValues[rng.IntN(len(queryValues))])
		}
		got := post(t, f.url, http.MethodPost, signedEast, form.Encode())
		if got.code == "InternalError" || got.status == 0 {
			t.Fatalf("request %d %s: %d %s %s", i, form.Encode(), got.status, got.code, got.message)
		}
	}
}

// FuzzQuery runs its seeds with the tests; `go test -fuzz FuzzQuery`
// explores further.
func FuzzQuery(f *testing.F) {
	for _, seed := range []string{
		"Action=RunInstances&Version=2016-11-15&ImageId=ami-0123456789abcdef0&InstanceType=g4dn.xlarge&MinCount=1&MaxCount=2",
		"Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag:a&Filter.1.Value.1=*&MaxResults=5",
		"Action=DescribeInstances&Version=2016-11-15&NextToken=aW5zdGFuY2VzOjE",
		"Action=DescribeSpotPriceHistory&Version=2016-11-15&MaxResults=0&NextToken=c3BvdDo5OTk",
		"Action=CreateTags&Version=2016-11-15&ResourceId.1=i-0123456789abcdef0&Tag.1.Key=a",
		"Action=TerminateInstances&Version=2016-11-15&InstanceId.1=i-0123456789abcdef0",
		"Action=DescribeInstanceTypeOfferings&Version=2016-11-15&LocationType=availability-zone&Filter.1.Name=location&Filter.1.Value.1=us-east-1a&MaxResults=5",
		"Action=RunInstances&Version=2016-11-15&ImageId=ami-0123456789abcdef1&InstanceType=g4dn.xlarge&MinCount=1&MaxCount=1&UserData=aGVsbG8=&BlockDeviceMapping.1.DeviceName=/dev/sda1&BlockDeviceMapping.1.Ebs.VolumeSize=20&MetadataOptions.HttpTokens=required",
		"Action=DescribeInstanceAttribute&Version=2016-11-15&InstanceId=i-0123456789abcdef0&Attribute=userData",
		"Action=DescribeVolumes&Version=2016-11-15&MaxResults=5&NextToken=dm9sdW1lczo5OTk",
		"Action=DescribeImages&Version=2016-11-15&ImageId.1=ami-0123456789abcdef0&Filter.1.Name=state&Filter.1.Value.1=available",
		"Action=CreateVpc&Version=2016-11-15&CidrBlock=10.0.0.0/16",
		"Action=CreateSubnet&Version=2016-11-15&VpcId=vpc-0123456789abcdef0&CidrBlock=10.0.1.0/24&AvailabilityZoneId=use1-az2",
		"Action=AuthorizeSecurityGroupIngress&Version=2016-11-15&GroupName=default&IpProtocol=tcp&FromPort=22&ToPort=22&CidrIp=0.0.0.0/0",
		"Action=DescribeInstanceTypes&Version=2016-11-15&InstanceType.1=p5.48xlarge&Filter.1.Name=vcpu-info.default-vcpus&Filter.1.Value.1=192",
		"Action=DescribeInstanceStatus&Version=2016-11-15&IncludeAllInstances=true&MaxResults=5&NextToken=c3RhdHVzOjE",
		"Action=%%&&==",
	} {
		f.Add(seed)
	}
	fx := newFixture(f, sim.Config{})
	f.Fuzz(func(t *testing.T, body string) {
		got := post(t, fx.url, http.MethodPost, signedEast, body)
		if got.code == "InternalError" {
			t.Fatalf("%q reached the panic guard: %s", body, got.message)
		}
	})
}
