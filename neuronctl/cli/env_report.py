"""Renderers of `neuronctl env`: the bug-report markdown (PyTorch's collect_env layout) and JSON
(registered in cli/render.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl.redact import redact

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.target_env import TargetPython


class EnvView(Struct, frozen=True):
    """`neuronctl env`: the report's JSON form, and the target it describes."""

    data: dict[str, Any]
    target: TargetPython


def env_json(view: EnvView, printer: Printer) -> None:
    printer.json({"env": view.data, "target": view.target.to_json()})


def print_env(view: EnvView, printer: Printer) -> None:
    # The target line first; the variables are redacted, paths and versions too.
    printer.echo(redact(f"{view.target.line()}\n\n{to_markdown(view.data)}"))


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
