"""Drives what a VM's allocation meets: capacity and vCPU quotas.

Run by pythonsdk_test.go (TestPythonSDKAllocation) like scenario.py, with
ARM_ENDPOINT, SUBSCRIPTION, REQUESTS_CA_BUNDLE and PHASE set:

  capacity     zone 1 of eastus has room for one T4 VM: a deallocated VM
               gives it back, and its start fails while another holds it.
  quota        the subscription has a new one's quotas: the usages list
               them, and a T4 create is over its family's.
  quotaRaised  the Go test has raised the family's limit: the create fits.

Each step's outcome is printed as one JSON object on stdout.
"""

import json
import os
import sys
import time

from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError
from azure.mgmt.compute import ComputeManagementClient

ENDPOINT = os.environ["ARM_ENDPOINT"]
SUB = os.environ["SUBSCRIPTION"]
PHASE = os.environ["PHASE"]
RG = "gpufleet"
LOCATION = "eastus"
T4 = "Standard_NC4as_T4_v3"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpufleetpythontest py@example.com"
SUBNET = (f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Network"
          f"/virtualNetworks/gpu-{LOCATION}/subnets/nodes")


class StaticCredential:
    """A token credential that asks no one: the emulator takes any token."""

    def get_token(self, *scopes, **kwargs):
        return AccessToken("emulator-token", int(time.time()) + 3600)


compute = ComputeManagementClient(StaticCredential(), SUB, base_url=ENDPOINT,
                                  credential_scopes=[ENDPOINT + "/.default"])

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


def vm_body():
    return {
        "location": LOCATION,
        "hardwareProfile": {"vmSize": T4},
        "zones": ["1"],
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
        "networkProfile": {
            "networkApiVersion": "2020-11-01",
            "networkInterfaceConfigurations": [{
                "name": "nic0", "primary": True,
                "ipConfigurations": [{"name": "ip0", "subnet": {"id": SUBNET}}],
            }],
        },
    }


def create(name):
    vm = compute.virtual_machines.begin_create_or_update(RG, name, vm_body()).result()
    return vm.provisioning_state


def power_state(name):
    view = compute.virtual_machines.instance_view(RG, name)
    return next((s.code for s in view.statuses if s.code.startswith("PowerState/")), None)


def deallocate(name):
    compute.virtual_machines.begin_deallocate(RG, name).result()
    return power_state(name)


def start(name):
    compute.virtual_machines.begin_start(RG, name).result()
    return power_state(name)


def delete(name):
    compute.virtual_machines.begin_delete(RG, name).result()
    return True


def usages():
    return {u.name.value: {"limit": u.limit, "used": u.current_value}
            for u in compute.usage.list(LOCATION)}


if PHASE == "capacity":
    step("createFirst", lambda: create("alloc-a"))
    step("deallocateFirst", lambda: deallocate("alloc-a"))
    step("createSecond", lambda: create("alloc-b"))
    step("startWithoutRoom", lambda: start("alloc-a"))
    step("stillDeallocated", lambda: power_state("alloc-a"))
    step("deleteSecond", lambda: delete("alloc-b"))
    step("startWithRoom", lambda: start("alloc-a"))
    step("deallocateAgain", lambda: deallocate("alloc-a"))
    step("deleteDeallocated", lambda: delete("alloc-a"))
elif PHASE == "quota":
    step("usages", usages)
    step("createOverQuota", lambda: create("quota-a"))
elif PHASE == "quotaRaised":
    step("createUnderQuota", lambda: create("quota-b"))
    step("usagesRaised", usages)
else:
    sys.exit(f"unknown PHASE {PHASE!r}")

json.dump(results, sys.stdout, indent=1, sort_keys=True)
