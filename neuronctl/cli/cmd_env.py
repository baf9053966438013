"""`neuronctl env`: the bug-report dump (markdown by default), secrets never printed."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from neuronctl._version import __version__
from neuronctl.cli.common import check_sysroot, python_option, sysroot_option
from neuronctl.cli.output import emit_json
from neuronctl.probes.hardware import detect_hardware
from neuronctl.probes.pyenv import PythonEnv, inspect_python, torch_build
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


def _cpu_model(root: SysRoot) -> str | None:
    text = root.read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def collect(env: PythonEnv, root: SysRoot) -> dict[str, Any]:
    hw = detect_hardware(root)
    packages = {d.name: d.version for d in sorted(env.distributions.values(),
                                                  key=lambda d: d.name.lower())
                if PACKAGE_PATTERN.match(d.name.lower().replace("_", "-"))}
    torch = env.get("torch")
    build = torch_build(torch) if torch is not None else None
    return {
        "neuronctl": __version__,
        "os": {"system": platform.system(), "release": platform.release(),
               "machine": platform.machine(), "libc": " ".join(env.libc).strip() or None,
               "cpu": _cpu_model(root)},
        "python": {"version": env.python, "implementation": env.implementation,
                   "executable": env.executable, "venv": env.in_venv, "platform": env.platform,
                   "best_wheel_tag": env.tags[0] if env.tags else None},
        "torch": {"version": torch.version if torch else None, "build": build},
        "packages": packages,
        "hardware": {"chip": hw.chip, "devices": hw.device_count, "neuron_cores": hw.neuron_cores,
                     "instance_type": hw.instance_type, "driver": hw.driver_version,
                     "runtime": hw.runtime_version, "tools": hw.tools_version,
                     "system_packages": dict(hw.system_packages)},
        "environment": relevant_environ(os.environ),
    }


def to_markdown(data: dict[str, Any]) -> str:
    lines = [f"## Environment (neuronctl {data['neuronctl']} env)", ""]
    sections = [("OS", data["os"]), ("Python", data["python"]), ("PyTorch", data["torch"]),
                ("Python packages", data["packages"]), ("Neuron hardware and system",
                                                          data["hardware"]),
                ("Environment variables", data["environment"])]
    for title, table in sections:
        lines += [f"### {title}", ""]
        if not table:
            lines += ["(none)", ""]
            continue
        lines += ["| key | value |", "| --- | --- |"]
        for key, value in table.items():
            shown = value
            if isinstance(value, dict):
                shown = ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
            text = "-" if shown is None else str(shown)
            lines.append(f"| {key} | {text.replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines)


@click.command()
@python_option
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@sysroot_option
def env(python: str | None, as_json: bool, sysroot: Path | None) -> int:
    """Dump everything a Neuron bug report needs, as markdown (or JSON)."""
    data = collect(inspect_python(python), SysRoot.from_env(check_sysroot(sysroot)))
    if as_json:
        emit_json({"env": data})
    else:
        click.echo(redact(to_markdown(data)))  # the variables are redacted; paths and versions too
    return 0
