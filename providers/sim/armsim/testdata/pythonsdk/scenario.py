"""Drives the emulator's ARM front with the Azure SDK for Python, unchanged.

Run by pythonsdk_test.go with ARM_ENDPOINT (https, its CA in
REQUESTS_CA_BUNDLE) and SUBSCRIPTION set. Each step's outcome is printed as
one JSON object on stdout, which the Go test asserts on: a step that
raises records the error's HTTP status and ARM code (HttpResponseError.
error.code) instead of failing the script.
"""

import json
import sys
import time

from azure.core.exceptions import HttpResponseError
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.resource import ResourceManagementClient

from armsdk import CLIENT, LOCATION, SSH_KEY, SUB, T4, StaticCredential

RG = "py-rg"
A100 = "Standard_NC24ads_A100_v4"


def clients(**config):
    kw = dict(CLIENT, **config)
    cred = StaticCredential()
    return (
        ResourceManagementClient(cred, SUB, **kw),
        NetworkManagementClient(cred, SUB, **kw),
        ComputeManagementClient(cred, SUB, **kw),
    )


resources, network, compute = clients()
# A client that does not retry, so that a throttled call surfaces.
_, _, compute_once = clients(retry_total=0)

results = {}


def step(name, fn):
    """Runs one step, recording what it returned or how ARM refused it."""
    started = time.monotonic()
    try:
        out = {"ok": True, "value": fn()}
    except HttpResponseError as err:
        code = err.error.code if err.error is not None else None
        out = {"ok": False, "status": err.status_code, "code": code,
               "message": err.error.message if err.error is not None else str(err)}
        if err.response is not None:
            out["retryAfter"] = err.response.headers.get("Retry-After")
    out["seconds"] = round(time.monotonic() - started, 3)
    results[name] = out


def subnet_id(rg, vnet, subnet):
    return (f"/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Network"
            f"/virtualNetworks/{vnet}/subnets/{subnet}")


def vm_body(size, zone=None, nic_id=None, subnet=None, location=LOCATION):
    body = {
        "location": location,
        "tags": {"made-by": "python"},
        "hardwareProfile": {"vmSize": size},
        "storageProfile": {
            "imageReference": {"publisher": "Canonical", "offer": "ubuntu-24_04-lts",
                               "sku": "server", "version": "latest"},
            "osDisk": {"createOption": "FromImage", "managedDisk": {"storageAccountType": "Premium_LRS"}},
        },
        "osProfile": {
            "computerName": "py",
            "adminUsername": "azureuser",
            "linuxConfiguration": {
                "disablePasswordAuthentication": True,
                "ssh": {"publicKeys": [{"path": "/home/azureuser/.ssh/authorized_keys", "keyData": SSH_KEY}]},
            },
        },
    }
    if zone:
        body["zones"] = [zone]
    if nic_id:
        body["networkProfile"] = {"networkInterfaces": [{"id": nic_id, "primary": True}]}
    else:
        body["networkProfile"] = {
            "networkApiVersion": "2020-11-01",
            "networkInterfaceConfigurations": [{
                "name": "nic0",
                "primary": True,
                "ipConfigurations": [{"name": "ip0", "subnet": {"id": subnet}}],
            }],
        }
    return body


def create_group():
    g = resources.resource_groups.create_or_update(RG, {"location": LOCATION, "tags": {"team": "ml"}})
    return {"id": g.id, "location": g.location, "state": g.properties.provisioning_state,
            "exists": resources.resource_groups.check_existence(RG),
            "fixture": resources.resource_groups.get("gpufleet").location,
            "listed": sorted(x.name for x in resources.resource_groups.list())}


def create_vnet():
    poller = network.virtual_networks.begin_create_or_update(RG, "py-vnet", {
        "location": LOCATION,
        "address_space": {"address_prefixes": ["10.10.0.0/16"]},
        "subnets": [{"name": "default", "address_prefix": "10.10.0.0/24"}],
    })
    first = poller.status()
    v = poller.result()
    s = network.subnets.begin_create_or_update(RG, "py-vnet", "second", {"address_prefix": "10.10.1.0/24"}).result()
    v = network.virtual_networks.get(RG, "py-vnet")
    return {"first": first, "state": v.provisioning_state, "subnets": sorted(x.name for x in v.subnets),
            "second": s.address_prefix, "secondState": s.provisioning_state}


def overlapping_subnet():
    return network.subnets.begin_create_or_update(RG, "py-vnet", "overlap", {"address_prefix": "10.10.0.128/25"}).result().name


def create_nic():
    nic = network.network_interfaces.begin_create_or_update(RG, "py-nic", {
        "location": LOCATION,
        "ip_configurations": [{"name": "ipconfig1", "subnet": {"id": subnet_id(RG, "py-vnet", "default")}}],
    }).result()
    return {"id": nic.id, "ip": nic.ip_configurations[0].private_ip_address, "state": nic.provisioning_state}


def nic_bad_subnet():
    return network.network_interfaces.begin_create_or_update(RG, "py-nic-bad", {
        "location": LOCATION,
        "ip_configurations": [{"name": "ipconfig1", "subnet": {"id": subnet_id(RG, "py-vnet", "missing")}}],
    }).result().id


def create_vm():
    nic_id = results["nic"]["value"]["id"]
    poller = compute.virtual_machines.begin_create_or_update(RG, "py-vm", vm_body(T4, zone="1", nic_id=nic_id))
    first = poller.status()
    polls = 0
    while not poller.done():
        polls += 1
        poller.wait(0.2)
    vm = poller.result()
    return {"first": first, "state": vm.provisioning_state, "vmId": vm.vm_id, "zones": vm.zones,
            "nic": vm.network_profile.network_interfaces[0].id, "waited": polls > 0}


def get_vm():
    vm = compute.virtual_machines.get(RG, "py-vm", expand="instanceView")
    statuses = [s.code for s in vm.instance_view.statuses]
    nic = network.network_interfaces.get(RG, "py-nic")
    return {"state": vm.provisioning_state, "statuses": statuses, "size": vm.hardware_profile.vm_size,
            "nicVM": nic.virtual_machine.id if nic.virtual_machine else None}


def create_again():
    nic_id = results["nic"]["value"]["id"]
    vm = compute.virtual_machines.begin_create_or_update(RG, "py-vm", vm_body(T4, zone="1", nic_id=nic_id)).result()
    return {"vmId": vm.vm_id, "state": vm.provisioning_state}


def update_tags():
    # A PATCH replaces the tags whole: the one the VM was made with goes.
    vm = compute.virtual_machines.begin_update(RG, "py-vm", {"tags": {"team": "ml", "gpufleet-fleet": "ml"}}).result()
    again = compute.virtual_machines.get(RG, "py-vm")
    return {"tags": vm.tags, "read": again.tags, "size": again.hardware_profile.vm_size}


def create_many():
    # Zone 1: the test keeps the T4 size out of zones 2 and 3.
    pollers = [compute.virtual_machines.begin_create_or_update(
        RG, f"py-many-{i}", vm_body(T4, zone="1", subnet=subnet_id(RG, "py-vnet", "second")))
        for i in range(5)]
    return sorted(p.result().name for p in pollers)


def list_vms():
    pages = []
    for page in compute.virtual_machines.list(RG).by_page():
        pages.append([vm.name for vm in page])
    return {"pages": pages}


def list_all_vms():
    return sorted(vm.name for vm in compute.virtual_machines.list_all())


def creation_refused(rg, body, name="py-refused"):
    return lambda: compute.virtual_machines.begin_create_or_update(rg, name, body).result().provisioning_state


def throttled():
    return compute_once.usage.list(LOCATION).next().name.value


def delete_vm():
    poller = compute.virtual_machines.begin_delete(RG, "py-vm")
    first = poller.status()
    poller.result()
    try:
        compute.virtual_machines.get(RG, "py-vm")
        gone = False
    except HttpResponseError as err:
        gone = err.status_code == 404
    return {"first": first, "gone": gone}


def delete_again():
    poller = compute.virtual_machines.begin_delete(RG, "py-vm")
    poller.result()
    return poller.status()


def delete_nic_in_use():
    return network.network_interfaces.begin_delete(RG, "py-nic").result()


def delete_group():
    poller = resources.resource_groups.begin_delete(RG)
    first = poller.status()
    poller.result()
    return {"first": first, "exists": resources.resource_groups.check_existence(RG),
            "vms": [vm.name for vm in compute.virtual_machines.list_all() if vm.id.lower().startswith(
                f"/subscriptions/{SUB}/resourcegroups/{RG}/".lower())]}


step("group", create_group)
step("vnet", create_vnet)
step("overlappingSubnet", overlapping_subnet)
step("nic", create_nic)
step("nicBadSubnet", nic_bad_subnet)
step("vm", create_vm)
step("get", get_vm)
step("createAgain", create_again)
step("updateTags", update_tags)
step("many", create_many)
step("list", list_vms)
step("listAll", list_all_vms)
step("wrongGroup", creation_refused("no-such-rg", vm_body(T4, zone="1", subnet=subnet_id(RG, "py-vnet", "default"))))
step("wrongNIC", creation_refused(RG, vm_body(T4, zone="1", nic_id=(
    f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Network/networkInterfaces/no-such-nic"))))
step("wrongSubnet", creation_refused(RG, vm_body(T4, zone="1", subnet=subnet_id(RG, "py-vnet", "no-such-subnet"))))
step("skuNotAvailable", creation_refused(RG, vm_body(T4, zone="2", subnet=subnet_id(RG, "py-vnet", "default")), "py-sku"))
step("zonalAllocationFailed", creation_refused(RG, vm_body(T4, zone="3", subnet=subnet_id(RG, "py-vnet", "default")), "py-zonal"))
step("allocationFailed", creation_refused("gpufleet", vm_body(A100, location="westus3",
                                                              subnet=subnet_id("gpufleet", "gpu-westus3", "nodes")), "py-regional"))
step("throttled", throttled)
step("badVersionGroup", lambda: resources.resource_groups.get(RG, api_version="2099-01-01").name)
step("badVersionVM", lambda: compute.virtual_machines.get(RG, "py-vm", api_version="2099-01-01").name)
step("nicInUse", delete_nic_in_use)
step("delete", delete_vm)
step("deleteAgain", delete_again)
step("deleteGroup", delete_group)

json.dump(results, sys.stdout, indent=1, sort_keys=True)
