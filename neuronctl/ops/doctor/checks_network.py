"""`network.efa` (level 2): the EFA devices multi-node jobs need, and the versions that must agree
across nodes (aws-neuronx-collectives, libfabric), reported for `fleet doctor`'s drift report.

Sources (probes/efa.py): multi-node jobs need EFA on every participating instance; trn1.32xlarge
has 8 EFA devices, trn1n.32xlarge 16 (EFA_DEVICES); the libfabric version must match between
the AMI and the workload containers. No AWS page read here states the EFA single-subnet rule
or says where a node's subnet can be read offline, so the subnet is not checked.
"""

from __future__ import annotations

from typing import Any

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.registry import check
from neuronctl.ops.doctor.runner import Outcome

EFA_DEVICES = {"trn1.32xlarge": 8, "trn1n.32xlarge": 16}
"""EFA devices by instance type, where a source gives them (setup-trn1-multi-node-execution)."""


def efa_section(f: Facts) -> dict[str, Any]:
    """The report's `efa` section (fleet doctor compares it across nodes)."""
    efa = f.efa
    return {"devices": len(efa.devices),
            "libfabric": ", ".join(f"{k} {v}" for k, v in sorted(efa.libfabric.items())) or None}


@check("network.efa", "EFA for multi-node jobs", level=2, gathers=("hardware", "efa"))
def check_efa(f: Facts) -> Outcome:
    hw, efa = f.hardware, f.efa
    if not hw.present:
        return Outcome("skip", "no Neuron hardware: no EFA to check")
    collectives = hw.system_packages.get("aws-neuronx-collectives")
    fabric = ", ".join(f"{k} {v}" for k, v in sorted(efa.libfabric.items()))
    details = [f"EFA devices: {', '.join(efa.devices) or 'none'}",
               f"aws-neuronx-collectives: {collectives or 'not installed'}",
               f"libfabric: {fabric or 'not installed (dpkg)'}",
               "the same collectives and libfabric versions on every node (and in the "
               "containers): neuronctl fleet doctor reports any drift"]
    if efa.other_rdma:
        details.append(f"other RDMA devices: {', '.join(efa.other_rdma)}")
    want = EFA_DEVICES.get(hw.instance_type or "")
    if want is not None and len(efa.devices) < want:
        return Outcome("warn", f"{len(efa.devices)} EFA device(s) on a {hw.instance_type}, which "
                               f"has {want}: multi-node jobs need EFA enabled on every instance",
                       "launch the instance with all its EFA interfaces and install the EFA "
                       "driver (aws-efa-installer)", tuple(details), "fix")
    if efa.devices and not collectives:
        return Outcome("warn", f"{len(efa.devices)} EFA device(s) but no aws-neuronx-collectives: "
                               "multi-node collectives cannot run",
                       "sudo apt-get install -y aws-neuronx-collectives", tuple(details), "fix")
    if not efa.devices:
        return Outcome("pass", "no EFA devices: single-node work only (multi-node jobs need EFA "
                               "on every instance)", None, tuple(details))
    return Outcome("pass", f"{len(efa.devices)} EFA device(s), collectives {collectives}", None,
                   tuple(details))
