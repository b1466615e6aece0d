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

import os
import sys

from azure.mgmt.compute import ComputeManagementClient

from armsdk import CLIENT, LOCATION, RG, SUB, StaticCredential, done, power_state, step, vm_body

PHASE = os.environ["PHASE"]
compute = ComputeManagementClient(StaticCredential(), SUB, **CLIENT)


def create(name):
    vm = compute.virtual_machines.begin_create_or_update(RG, name, vm_body()).result()
    return vm.provisioning_state


def deallocate(name):
    compute.virtual_machines.begin_deallocate(RG, name).result()
    return power_state(compute, name)


def start(name):
    compute.virtual_machines.begin_start(RG, name).result()
    return power_state(compute, name)


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
    step("stillDeallocated", lambda: power_state(compute, "alloc-a"))
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

done()
