"""`neuronctl env`: everything a Neuron bug report needs, gathered once, secrets never kept."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuronctl._version import __version__
from neuronctl.errors import InputError
from neuronctl.probes.hardware import HardwareReport, detect_hardware
from neuronctl.probes.pyenv import Inspection, PythonEnv, torch_build
from neuronctl.probes.sysroot import SysRoot
from neuronctl.redact import is_secret_name, redact

ENV_PREFIXES = ("NEURON_", "PJRT_", "TORCH_", "XLA_", "NEURONCTL_", "FI_", "CCOM_")
ENV_NAMES = ("PYTORCH_ENABLE_MPS_FALLBACK", "CUDA_VISIBLE_DEVICES", "PIP_INDEX_URL",
             "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "VIRTUAL_ENV")
REDACTED = "<redacted>"
PACKAGE_PATTERN = re.compile(r"^(torch.*|.*neuron.*|nki|libneuronxla|nrtpy|numpy|transformers|"
                             r"accelerate|jax.*|triton|pytorch-triton|nvidia-.*|optimum.*)$")


def relevant_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a Neuron bug report needs; a value whose name says it is a secret is
    replaced whole, every other value loses URL credentials and authorization tokens."""
    out = {}
    for key in sorted(environ):
        if not (key.startswith(ENV_PREFIXES) or key in ENV_NAMES):
            continue
        out[key] = REDACTED if is_secret_name(key) else redact(environ[key])
    return out


@dataclass(frozen=True)
class EnvReport:
    """The bug-report sections, in the order they are shown."""

    neuronctl: str
    os: Mapping[str, Any]
    python: Mapping[str, Any]
    torch: Mapping[str, Any]
    packages: Mapping[str, str]
    hardware: Mapping[str, Any]
    environment: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"neuronctl": self.neuronctl, "os": dict(self.os), "python": dict(self.python),
                "torch": dict(self.torch), "packages": dict(self.packages),
                "hardware": dict(self.hardware), "environment": dict(self.environment)}


def _cpu_model(root: SysRoot) -> str | None:
    text = root.read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def _hardware_section(hw: HardwareReport) -> dict[str, Any]:
    return {"chip": hw.chip, "devices": hw.device_count, "neuron_cores": hw.neuron_cores,
            "instance_type": hw.instance_type, "driver": hw.driver_version,
            "runtime": hw.runtime_version, "tools": hw.tools_version,
            "system_packages": dict(hw.system_packages)}


def build_env_report(env: PythonEnv, hw: HardwareReport, root: SysRoot,
                     environ: Mapping[str, str]) -> EnvReport:
    """The report from facts already gathered (the interpreter's inspection, the hardware)."""
    packages = {d.name: d.version for d in sorted(env.distributions.values(),
                                                  key=lambda d: d.name.lower())
                if PACKAGE_PATTERN.match(d.name.lower().replace("_", "-"))}
    torch = env.get("torch")
    return EnvReport(
        neuronctl=__version__,
        os={"system": platform.system(), "release": platform.release(),
            "machine": platform.machine(), "libc": " ".join(env.libc).strip() or None,
            "cpu": _cpu_model(root)},
        python={"version": env.python, "implementation": env.implementation,
                "executable": env.executable, "venv": env.in_venv, "platform": env.platform,
                "best_wheel_tag": env.tags[0] if env.tags else None},
        torch={"version": torch.version if torch else None,
               "build": torch_build(torch) if torch is not None else None},
        packages=packages, hardware=_hardware_section(hw), environment=relevant_environ(environ))


def collect_env(python: str | None, sysroot: Path | None,
                environ: Mapping[str, str] | None = None) -> EnvReport:
    """Inspect the interpreter and the machine, each once, and build the report."""
    if sysroot is not None and not sysroot.is_dir():
        raise InputError(f"--sysroot {sysroot}: no such directory")
    root = SysRoot.from_env(sysroot)
    environ = os.environ if environ is None else environ
    inspection = Inspection(python)  # the interpreter starts while the machine is read
    hardware = detect_hardware(root, environ)
    return build_env_report(inspection.result(), hardware, root, environ)
