"""Drives what an account whose role lacks actions gets from ARM.

Run by pythonsdk_test.go (TestPythonSDKDenied) with ARM_ENDPOINT,
SUBSCRIPTION and REQUESTS_CA_BUNDLE set, against a front whose account
denies its caller virtualMachines/write and the deallocate action, and
holds VM "running" already. Each step's outcome is printed as one JSON
object on stdout.
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
RG = "gpufleet"


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


def tag_running():
    vm = compute.virtual_machines.get(RG, "running")
    vm.tags = {"team": "ml"}
    return compute.virtual_machines.begin_create_or_update(RG, "running", vm).result().name


step("list", lambda: sorted(vm.name for vm in compute.virtual_machines.list(RG)))
step("write", tag_running)
step("deallocate", lambda: compute.virtual_machines.begin_deallocate(RG, "running").result())
step("powerOff", lambda: compute.virtual_machines.begin_power_off(RG, "running").result() or "done")

json.dump(results, sys.stdout, indent=1, sort_keys=True)
