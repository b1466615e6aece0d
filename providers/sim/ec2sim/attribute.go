// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"net/http"
	"slices"
)

type attributeValueXML struct {
	Value string `xml:"value,omitempty"`
}

type describeInstanceAttributeResponse struct {
	XMLName        xml.Name                 `xml:"DescribeInstanceAttributeResponse"`
	Xmlns          string                   `xml:"xmlns,attr"`
	RequestID      string                   `xml:"requestId"`
	InstanceID     string                   `xml:"instanceId"`
	UserData       *attributeValueXML       `xml:"userData,omitempty"`
	InstanceType   *attributeValueXML       `xml:"instanceType,omitempty"`
	RootDeviceName *attributeValueXML       `xml:"rootDeviceName,omitempty"`
	BlockDevices   []instanceBlockDeviceXML `xml:"blockDeviceMapping>item"`
}

// instanceAttributes are the attributes EC2 describes; the front serves
// those it keeps, and says so of the others.
var instanceAttributes = []string{
	"instanceType", "kernel", "ramdisk", "userData", "disableApiTermination", "instanceInitiatedShutdownBehavior",
	"rootDeviceName", "blockDeviceMapping", "productCodes", "sourceDestCheck", "groupSet", "ebsOptimized",
	"sriovNetSupport", "enaSupport", "enclaveOptions", "disableApiStop",
}

// describeInstanceAttribute answers one attribute of one instance. The
// user data comes back in base64, as EC2 returns it, and empty for an
// instance launched without any.
func (s *Server) describeInstanceAttribute(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	id, attribute := req.form.Get("InstanceId"), req.form.Get("Attribute")
	switch {
	case id == "":
		return nil, missingParameter("InstanceId")
	case attribute == "":
		return nil, missingParameter("Attribute")
	case !slices.Contains(instanceAttributes, attribute):
		return nil, invalidValue("Value (%s) for parameter attribute is invalid. Unknown attribute.", attribute)
	}
	if apiErr := checkInstanceIDs([]string{id}); apiErr != nil {
		return nil, apiErr
	}
	found, apiErr := s.lookup(req.region, []string{id})
	if apiErr != nil {
		return nil, apiErr
	}
	inst := found[0]
	out := describeInstanceAttributeResponse{Xmlns: xmlns, RequestID: req.id, InstanceID: inst.ID}
	switch attribute {
	case "userData":
		out.UserData = &attributeValueXML{Value: inst.Properties[propUserData]}
	case "instanceType":
		out.InstanceType = &attributeValueXML{Value: inst.InstanceType}
	case "rootDeviceName":
		out.RootDeviceName = &attributeValueXML{Value: rootDeviceName(inst)}
	case "blockDeviceMapping":
		out.BlockDevices = renderDevices(inst, stateName(inst.State))
	default:
		return nil, &apiError{Status: http.StatusBadRequest, Code: "Unsupported", Message: "The attribute " + attribute + " is not served by this endpoint."}
	}
	return out, nil
}
