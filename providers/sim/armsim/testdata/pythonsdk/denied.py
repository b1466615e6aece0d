"""Drives what an account whose role lacks actions gets from ARM.

Run by pythonsdk_test.go (TestPythonSDKDenied) with ARM_ENDPOINT,
SUBSCRIPTION and REQUESTS_CA_BUNDLE set, against a front whose account
denies its caller virtualMachines/write and the deallocate action, and
holds VM "running" already. Each step's outcome is printed as one JSON
object on stdout.
"""

from azure.mgmt.compute import ComputeManagementClient

from armsdk import CLIENT, RG, SUB, StaticCredential, done, step

compute = ComputeManagementClient(StaticCredential(), SUB, **CLIENT)


def tag_running():
    vm = compute.virtual_machines.get(RG, "running")
    vm.tags = {"team": "ml"}
    return compute.virtual_machines.begin_create_or_update(RG, "running", vm).result().name


step("list", lambda: sorted(vm.name for vm in compute.virtual_machines.list(RG)))
step("write", tag_running)
step("deallocate", lambda: compute.virtual_machines.begin_deallocate(RG, "running").result())
step("powerOff", lambda: compute.virtual_machines.begin_power_off(RG, "running").result() or "done")

done()
