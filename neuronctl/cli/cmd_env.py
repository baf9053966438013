"""`neuronctl env`: the bug-report dump (markdown by default), secrets never printed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from neuronctl.cli.common import target_python
from neuronctl.cli.options import python_option, resolver, sysroot_option, typed
from neuronctl.cli.output import emit_json
from neuronctl.ops.env import REDACTED, TORCH_TIMEOUT_S, relevant_environ
from neuronctl.ops.env import collect_env as collect
from neuronctl.redact import redact

__all__ = ["REDACTED", "collect", "env", "relevant_environ", "to_markdown"]

# collect_env's own labels for its fields (its env_info_fmt), so a report reads like the one
# PyTorch's issue template asks for; a field a newer torch adds is shown under its own name.
COLLECT_ENV_LABELS = {
    "torch_version": "PyTorch version", "is_debug_build": "Is debug build",
    "cuda_compiled_version": "CUDA used to build PyTorch",
    "hip_compiled_version": "ROCM used to build PyTorch", "os": "OS", "gcc_version": "GCC version",
    "clang_version": "Clang version", "cmake_version": "CMake version",
    "libc_version": "Libc version", "python_version": "Python version",
    "python_platform": "Python platform", "is_cuda_available": "Is CUDA available",
    "cuda_runtime_version": "CUDA runtime version",
    "cuda_module_loading": "CUDA_MODULE_LOADING set to",
    "nvidia_gpu_models": "GPU models and configuration",
    "nvidia_driver_version": "Nvidia driver version", "cudnn_version": "cuDNN version",
    "is_xpu_available": "Is XPU available", "hip_runtime_version": "HIP runtime version",
    "miopen_runtime_version": "MIOpen runtime version",
    "is_xnnpack_available": "Is XNNPACK available",
    "caching_allocator_config": "Caching allocator config",
}
SHOWN_ELSEWHERE = ("cpu_info", "pip_packages", "conda_packages", "pip_version")


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        value = ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
    elif isinstance(value, list):
        value = " ".join(str(v) for v in value) or "-"
    text = "-" if value is None else str(value)
    return "; ".join(part.strip() for part in text.splitlines() if part.strip()).replace("|", "/")


def _table(title: str, table: Mapping[str, Any]) -> list[str]:
    lines = [f"### {title}", ""]
    if not table:
        return [*lines, "(none)", ""]
    lines += ["| key | value |", "| --- | --- |"]
    lines += [f"| {key} | {_cell(value) or '-'} |" for key, value in table.items()]
    return [*lines, ""]


def _block(title: str, text_lines: Iterable[str]) -> list[str]:
    # The text is the target's or a tool's: a fence inside it must not end ours.
    body = [line.replace("```", "'''") for line in text_lines]
    return [f"### {title}", "", "```", *(body or ["(none)"]), "```", ""]


STATUS_WORDS = {"absent": "no torch in the target", "timeout": "timed out", "error": "it failed"}


def _collect_env_lines(section: Mapping[str, Any]) -> list[str]:
    title = "PyTorch's collect_env (torch.utils.collect_env, run in the target)"
    if section.get("status") != "ok":
        why = STATUS_WORDS.get(str(section.get("status")), "it failed")
        return [f"### {title}", "", f"Not available ({why}): "
                f"{section.get('detail') or '-'}", ""]
    fields = section.get("fields") or {}
    # A table (the allocator config) as collect_env prints it: the dict itself.
    shown = {COLLECT_ENV_LABELS.get(k, k): str(v) if isinstance(v, dict) and v else v
             for k, v in fields.items() if k not in SHOWN_ELSEWHERE}
    return _table(title, shown)


def _cpu_lines(data: Mapping[str, Any]) -> list[str]:
    cpu = dict(data.get("cpu") or {})
    raw = str(cpu.pop("lscpu", "") or "")
    torch_cpu = ((data.get("collect_env") or {}).get("fields") or {}).get("cpu_info")
    if isinstance(torch_cpu, str) and torch_cpu.strip():
        raw = torch_cpu  # what collect_env itself shows, as it shows it
    return [*_table("CPU", cpu), *(_block("CPU (lscpu)", raw.splitlines()) if raw.strip() else [])]


def _library_lines(data: Mapping[str, Any]) -> list[str]:
    libraries = data.get("libraries") or {}
    fields = (data.get("collect_env") or {}).get("fields") or {}
    pip = str(fields.get("pip_version") or "pip3")
    lines = [f"[{pip}] {line}" for line in libraries.get("pip", [])]
    lines += [f"[conda] {line}" for line in libraries.get("conda", [])]
    return _block("Versions of relevant libraries", lines)


def to_markdown(data: dict[str, Any]) -> str:
    lines = [f"## Environment (neuronctl {data['neuronctl']} env)", ""]
    if data.get("summary"):
        lines += [f"**Summary:** {data['summary']}", ""]
    lines += _table("OS", data["os"])
    if "compilers" in data:
        lines += _table("Compilers and build tools", data["compilers"])
    lines += _table("Python", data["python"])
    lines += _table("PyTorch", {**data["torch"], **(data.get("torch_build") or {})})
    if "collect_env" in data:
        lines += _collect_env_lines(data["collect_env"])
    if "cpu" in data:
        lines += _cpu_lines(data)
    if "libraries" in data:
        lines += _library_lines(data)
    lines += _table("Python packages", data["packages"])
    lines += _table("Neuron hardware and system", data["hardware"])
    lines += _table("Environment variables", data["environment"])
    if data.get("notes"):
        lines += ["### Not gathered", "", *(f"- {_cell(note)}" for note in data["notes"]), ""]
    return "\n".join(lines)


@click.command()
@python_option
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@sysroot_option
@click.option("--timeout", type=float, default=None,
              help="Seconds for torch's collect_env in the target [config check_timeout, else "
                   f"{TORCH_TIMEOUT_S:g}].")
def env(python: str | None, as_json: bool, sysroot: Path | None, timeout: float | None) -> int:
    """Dump everything a Neuron bug report needs, as markdown (or JSON): a superset of
    `python -m torch.utils.collect_env`, plus every Neuron package, the driver, runtime and chip."""
    # collect_env is bounded like a check: config `check_timeout`, which a flag beats.
    limit = resolver().resolve("check_timeout", typed("timeout")).value or TORCH_TIMEOUT_S
    target = target_python(python)
    data = collect(target.python, sysroot, None, limit).to_json()
    if as_json:
        emit_json({"env": data, "target": target.to_json()})
    else:  # the target line first; the variables are redacted, paths and versions too
        click.echo(redact(f"{target.line()}\n\n{to_markdown(data)}"))
    return 0
