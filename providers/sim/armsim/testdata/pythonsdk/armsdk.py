"""What the scripts that drive the ARM front share: the endpoint and a
credential that asks no one, the body of a VM on the example's network,
and the steps, each recorded as what it returned or how ARM refused it.

The scripts run with ARM_ENDPOINT (https, its CA in REQUESTS_CA_BUNDLE)
and SUBSCRIPTION set, and print their steps as one JSON object on stdout,
which the Go tests assert on.
"""

import json
import os
import sys
import time

from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError

ENDPOINT = os.environ["ARM_ENDPOINT"]
SUB = os.environ["SUBSCRIPTION"]
RG = "gpufleet"
LOCATION = "eastus"
T4 = "Standard_NC4as_T4_v3"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpufleetpythontest py@example.com"
SUBNET = (f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Network"
          f"/virtualNetworks/gpu-{LOCATION}/subnets/nodes")
# The keyword arguments of every management client.
CLIENT = dict(base_url=ENDPOINT, credential_scopes=[ENDPOINT + "/.default"])


class StaticCredential:
    """A token credential that asks no one: the emulator takes any token."""

    def get_token(self, *scopes, **kwargs):
        return AccessToken("emulator-token", int(time.time()) + 3600)


results = {}


def step(name, fn):
    """Runs one step, recording what it returned or how ARM refused it."""
    try:
        out = {"ok": True, "value": fn()}
    except HttpResponseError as err:
        code = err.error.code if err.error is not None else None
        out = {"ok": False, "status": err.status_code, "code": code,
               "message": err.error.message if err.error is not None else str(err)}
    results[name] = out


def done():
    """Prints the steps' outcomes for the Go test."""
    json.dump(results, sys.stdout, indent=1, sort_keys=True)


def vm_body(zone="1", nic_id=None, identity=None):
    """A T4 VM in eastus, on the example's subnet unless it names a NIC."""
    body = {
        "location": LOCATION,
        "hardwareProfile": {"vmSize": T4},
        "zones": [zone],
        "storageProfile": {
            "imageReference": {"publisher": "Canonical", "offer": "ubuntu-24_04-lts",
                               "sku": "server", "version": "latest"},
            "osDisk": {"createOption": "FromImage"},
        },
        "osProfile": {
            "adminUsername": "azureuser",
            "linuxConfiguration": {
                "disablePasswordAuthentication": True,
                "ssh": {"publicKeys": [{"path": "/home/azureuser/.ssh/authorized_keys", "keyData": SSH_KEY}]},
            },
        },
    }
    if nic_id:
        body["networkProfile"] = {"networkInterfaces": [{"id": nic_id, "primary": True}]}
    else:
        body["networkProfile"] = {
            "networkApiVersion": "2020-11-01",
            "networkInterfaceConfigurations": [{
                "name": "nic0", "primary": True,
                "ipConfigurations": [{"name": "ip0", "subnet": {"id": SUBNET}}],
            }],
        }
    if identity:
        body["identity"] = {"type": "UserAssigned", "userAssignedIdentities": {identity: {}}}
    return body


def power_state(compute, name):
    """The VM's PowerState/... status code."""
    view = compute.virtual_machines.instance_view(RG, name)
    return next((s.code for s in view.statuses if s.code.startswith("PowerState/")), None)
