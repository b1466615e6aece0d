"""Drives what the emulator's ARM front refuses or does as strictly as ARM.

Run by pythonsdk_test.go (TestPythonSDKStrict) like scenario.py, with
ARM_ENDPOINT, SUBSCRIPTION, REQUESTS_CA_BUNDLE and HELD_IDENTITY (a
user-assigned identity the subscription holds) set. The Go test makes zone
2 of eastus fail the first create it is asked for. Each step's outcome is
printed as one JSON object on stdout.
"""

import os

from azure.core import PipelineClient
from azure.core.exceptions import HttpResponseError
from azure.core.rest import HttpRequest
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.resource import SubscriptionClient

from armsdk import (CLIENT, ENDPOINT, LOCATION, RG, SUB, SUBNET, StaticCredential, done, power_state, results,
                    step, vm_body)

HELD_IDENTITY = os.environ["HELD_IDENTITY"]
compute = ComputeManagementClient(StaticCredential(), SUB, **CLIENT)
network = NetworkManagementClient(StaticCredential(), SUB, **CLIENT)
subscriptions = SubscriptionClient(StaticCredential(), **CLIENT)


def create(name, body):
    vm = compute.virtual_machines.begin_create_or_update(RG, name, body).result()
    return {"state": vm.provisioning_state, "vmId": vm.vm_id}


# 1. An interface is one VM's at a time.
def nic_setup():
    nic = network.network_interfaces.begin_create_or_update(RG, "strict-nic", {
        "location": LOCATION, "ip_configurations": [{"name": "ipconfig1", "subnet": {"id": SUBNET}}],
    }).result()
    return nic.id


step("nicSetup", nic_setup)
NIC = results["nicSetup"].get("value")
step("nicFirst", lambda: create("strict-a", vm_body(nic_id=NIC)))
step("nicTaken", lambda: create("strict-b", vm_body(nic_id=NIC)))
step("nicSameVM", lambda: create("strict-a", vm_body(nic_id=NIC)))


def nic_freed():
    compute.virtual_machines.begin_delete(RG, "strict-a").result()
    return create("strict-b", vm_body(nic_id=NIC))


step("nicFreed", nic_freed)


# 2. A request without a bearer token is turned away.
def unauthenticated(headers):
    def run():
        client = PipelineClient(base_url=ENDPOINT)
        resp = client.send_request(HttpRequest(
            "GET", f"{ENDPOINT}/subscriptions/{SUB}/resourcegroups?api-version=2022-09-01", headers=headers))
        return {"status": resp.status_code, "body": resp.text(),
                "challenge": resp.headers.get("WWW-Authenticate")}
    return run


step("authMissing", unauthenticated({}))
step("authBasic", unauthenticated({"Authorization": "Basic dXNlcjpwYXNz"}))
step("authBearer", unauthenticated({"Authorization": "Bearer anything"}))


# 3. A failed create is retried by a PUT once its cause is gone.
def retry_failed():
    out = {}
    try:
        compute.virtual_machines.begin_create_or_update(RG, "strict-retry", vm_body(zone="2")).result()
        out["firstCode"] = None
    except HttpResponseError as err:
        out["firstCode"] = err.error.code if err.error is not None else str(err)
    failed = compute.virtual_machines.get(RG, "strict-retry")
    out["failedState"] = failed.provisioning_state
    poller = compute.virtual_machines.begin_create_or_update(RG, "strict-retry", vm_body(zone="2"))
    out["secondFirst"] = poller.status()
    vm = poller.result()
    out["state"], out["sameVM"] = vm.provisioning_state, vm.vm_id == failed.vm_id
    out["power"] = power_state(compute, "strict-retry")
    return out


step("retry", retry_failed)


# 4. Power actions.
def power_actions():
    out = []
    for action in ("deallocate", "start", "power_off", "restart", "deallocate"):
        poller = getattr(compute.virtual_machines, "begin_" + action)(RG, "strict-b")
        first = poller.status()
        poller.result()
        out.append({"action": action, "first": first, "power": power_state(compute, "strict-b")})
    return out


step("power", power_actions)
step("powerOffDeallocated", lambda: compute.virtual_machines.begin_power_off(RG, "strict-b").result())


# 5. The subscription and its locations.
def subscription():
    s = subscriptions.subscriptions.get(SUB)
    locations = list(subscriptions.subscriptions.list_locations(SUB))
    east = next(x for x in locations if x.name == LOCATION)
    return {"id": s.id, "subscriptionId": s.subscription_id, "state": s.state, "displayName": s.display_name,
            "tenantId": s.tenant_id, "spendingLimit": s.subscription_policies.spending_limit,
            "locations": sorted(x.name for x in locations),
            "east": {"displayName": east.display_name, "regional": east.regional_display_name,
                     "regionType": east.metadata.region_type, "geographyGroup": east.metadata.geography_group}}


step("subscription", subscription)


# 6. User-assigned identities must exist.
MISSING_IDENTITY = HELD_IDENTITY.rsplit("/", 1)[0] + "/not-created"
step("identityMissing", lambda: create("strict-id", vm_body(identity=MISSING_IDENTITY)))
step("identityHeld", lambda: create("strict-id", vm_body(identity=HELD_IDENTITY)))

done()
