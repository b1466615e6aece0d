// SPDX-License-Identifier: Apache-2.0

package armsim

import "strings"

// rbacActions is the RBAC action each call needs, which an account may
// deny its caller (sim.Account.Denied, "azure:ACTION"): named in full
// ("azure:Microsoft.Compute/virtualMachines/write") or without its
// provider namespace ("azure:virtualMachines/write").
var rbacActions = map[string]string{
	OpPut:          resourceType + "/write",
	OpPatch:        resourceType + "/write",
	OpGet:          resourceType + "/read",
	OpInstanceView: resourceType + "/instanceView/read",
	OpList:         resourceType + "/read",
	OpListAll:      resourceType + "/read",
	OpDelete:       resourceType + "/delete",
	OpDeallocate:   resourceType + "/deallocate/action",
	OpPowerOff:     resourceType + "/powerOff/action",
	OpStart:        resourceType + "/start/action",
	OpRestart:      resourceType + "/restart/action",
	OpOperation:    "Microsoft.Compute/locations/operations/read",
	OpUsages:       "Microsoft.Compute/locations/usages/read",
	OpSKUs:         "Microsoft.Compute/skus/read",

	OpPPGPut:    ppgType + "/write",
	OpPPGGet:    ppgType + "/read",
	OpPPGList:   ppgType + "/read",
	OpPPGDelete: ppgType + "/delete",

	OpGroupPut:    groupResourceType + "/write",
	OpGroupGet:    groupResourceType + "/read",
	OpGroupList:   groupResourceType + "/read",
	OpGroupDelete: groupResourceType + "/delete",

	OpVNetPut:      "Microsoft.Network/virtualNetworks/write",
	OpVNetGet:      "Microsoft.Network/virtualNetworks/read",
	OpVNetList:     "Microsoft.Network/virtualNetworks/read",
	OpVNetDelete:   "Microsoft.Network/virtualNetworks/delete",
	OpSubnetPut:    "Microsoft.Network/virtualNetworks/subnets/write",
	OpSubnetGet:    "Microsoft.Network/virtualNetworks/subnets/read",
	OpSubnetList:   "Microsoft.Network/virtualNetworks/subnets/read",
	OpSubnetDelete: "Microsoft.Network/virtualNetworks/subnets/delete",
	OpNICPut:       "Microsoft.Network/networkInterfaces/write",
	OpNICGet:       "Microsoft.Network/networkInterfaces/read",
	OpNICList:      "Microsoft.Network/networkInterfaces/read",
	OpNICDelete:    "Microsoft.Network/networkInterfaces/delete",

	OpSubscriptionGet: "Microsoft.Resources/subscriptions/read",
	OpLocationList:    "Microsoft.Resources/subscriptions/locations/read",
}

// denied reports whether the account denies its caller the call.
func (s *Server) denied(op string) bool {
	action, ok := rbacActions[op]
	if !ok {
		return false
	}
	_, short, _ := strings.Cut(action, "/")
	return s.world.Denied(cloud, action) || s.world.Denied(cloud, short)
}
