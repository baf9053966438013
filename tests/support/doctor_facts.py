"""Hand-made doctor facts: an interpreter, a machine, a legacy report and a device probe built as
values, so each check runs over exactly the facts a test names and nothing is probed."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuronctl.ops.doctor.facts import Facts
from neuronctl.probes.device import ProbeReport, TierResult
from neuronctl.probes.hardware import Evidence, HardwareReport
from neuronctl.probes.hardware_signals import PciDevice, SysfsDevice
from neuronctl.probes.legacy import LegacyReport, Signal
from neuronctl.probes.pyenv import InstalledDist, PythonEnv
from neuronctl.probes.sysroot import SysRoot
from neuronctl.release.manifest import load_bundled_manifest
from neuronctl.release.model import Manifest

MANIFEST: Manifest = load_bundled_manifest()


def python_env(python: str = "3.12.3", packages: Mapping[str, str] | None = None, *,
               system: str = "Linux", machine: str = "x86_64",
               requires: Mapping[str, tuple[str, ...]] | None = None) -> PythonEnv:
    dists = {name: InstalledDist(name, version, (requires or {}).get(name, ()),
                                 wrong_package=version == "1.0" and name == "torch-neuronx")
             for name, version in (packages or {}).items()}
    minor = ".".join(python.split(".")[:2])
    return PythonEnv(python=python, implementation="CPython", executable="/envs/t/bin/python",
                     prefix="/envs/t", base_prefix="/usr", platform=f"{system.lower()}-{machine}",
                     machine=machine, system=system, libc=("glibc", "2.35"),
                     distributions=dists,
                     markers={"python_version": minor, "python_full_version": python,
                              "platform_machine": machine, "sys_platform": system.lower()})


def machine(chip: str | None = None, *, devices: int = 2, driver: str | None = "2.31.7.0",
            runtime: str | None = "2.35.30.0", dkms_package: str | None = None,
            conflicts: tuple[str, ...] = (), sysfs: bool = True, pci: bool = True,
            instance_type: str | None = None) -> HardwareReport:
    """A host with `devices` Neuron devices of `chip` (none when chip is None and devices is 0)."""
    packages = {"aws-neuronx-runtime-lib": runtime} if runtime else {}
    if dkms_package:
        packages["aws-neuronx-dkms"] = dkms_package
    return HardwareReport(
        chip=chip, chip_name=chip.upper() if chip else None,
        evidence=(Evidence("pci 0000:cc:00.0", "device 0x7364", chip),) if chip else (),
        conflicts=conflicts,
        pci_devices=tuple(PciDevice(f"0000:{0xcc + i:02x}:00.0", "0x7364", chip)
                          for i in range(devices)) if pci else (),
        sysfs_devices=tuple(SysfsDevice(f"neuron{i}", None, None, None, 8)
                            for i in range(devices)) if sysfs else (),
        dev_nodes=tuple(f"neuron{i}" for i in range(devices)), device_count=devices,
        neuron_cores=8 * devices if devices else None,
        neuron_cores_source="sysfs core_count" if devices else None, logical_nc_config=None,
        instance_type=instance_type, instance_type_source="DMI product_name" if instance_type
        else None, driver_version=driver if devices else None,
        runtime_version=runtime, runtime_source="dpkg" if runtime else None, tools_version=None,
        system_packages=packages)


NO_HARDWARE = machine(None, devices=0, driver=None, runtime=None)


def legacy(verdict: str = "none", *, packages: tuple[str, ...] = (),
           placeholders: tuple[str, ...] = ()) -> LegacyReport:
    signals = tuple(Signal(p, "legacy", f"{p} installed") for p in packages)
    return LegacyReport(verdict, signals, placeholders, packages)  # type: ignore[arg-type]


def probe(outcome: str = "ok", device: str | None = "cpu", detail: str = "all tiers passed",
          torch: str | None = "2.14.0") -> ProbeReport:
    tiers = (TierResult("import", "pass" if torch else "fail", "torch imported", 1.0),)
    return ProbeReport("auto", device, torch, tiers, outcome, detail, 5.0)  # type: ignore[arg-type]


def facts(*, env: PythonEnv | None = None, hardware: HardwareReport = NO_HARDWARE,
          release: str | None = "2.33.0", device: str = "auto", **given: Any) -> Facts:
    """Facts whose every probe is given: a check that asked for anything else would fail the
    test (the guard in the tests replaces each gatherer with one that raises)."""
    return Facts(python="/envs/t/bin/python", sysroot=SysRoot(Path("/nonexistent-sysroot")),
                 manifest=MANIFEST, release=release, device=device, timeout=1.0, environ={},
                 env=env or python_env(), hardware=hardware,
                 legacy=given.pop("legacy", legacy()), probe=given.pop("probe", probe()),
                 **given)


def sysroot_facts(root: Path, environ: dict[str, str] | None = None,
                  release: str | None = "2.33.0") -> Facts:
    """Facts read from a fixture sysroot (the system checks gather what they need from it)."""
    return Facts(python=sys.executable, sysroot=SysRoot(root), manifest=load_bundled_manifest(),
                 release=release, device="cpu", timeout=5.0, environ=environ or {})
