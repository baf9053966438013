"""`neuronctl env`: everything a Neuron bug report needs, gathered once, secrets never kept.

A superset of `python -m torch.utils.collect_env`: where the target has torch, torch's own
get_env_info() runs in the target (probes/torch_env.py, with a deadline); the OS distribution,
compilers and CPU are also read here (probes/host_facts.py), so a target without torch, or whose
torch hangs, still gets them; then the Neuron facts collect_env misses (every Neuron package, the
driver, runtime and chip). The target's scripts, the host's tools and the hardware are gathered
concurrently.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from neuronctl._version import __version__
from neuronctl.probes.hardware import HardwareReport, detect_hardware
from neuronctl.probes.host_facts import HostFacts, gather_host_facts
from neuronctl.probes.pyenv import Inspection, PythonEnv, torch_build
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.torch_env import TorchEnvFacts, TorchEnvRun
from neuronctl.redact import is_secret_name, redact

ENV_PREFIXES = ("NEURON_", "PJRT_", "TORCH_", "XLA_", "NEURONCTL_", "FI_", "CCOM_", "PYTORCH_",
                "TORCHINDUCTOR_", "TORCHDYNAMO_")
ENV_NAMES = ("PYTORCH_ENABLE_MPS_FALLBACK", "CUDA_VISIBLE_DEVICES", "PIP_INDEX_URL",
             "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "VIRTUAL_ENV",
             "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LD_LIBRARY_PATH", "LD_PRELOAD",
             "CUDA_MODULE_LOADING")
REDACTED = "<redacted>"
PACKAGE_PATTERN = re.compile(r"^(torch.*|.*neuron.*|nki|libneuronxla|nrtpy|numpy|transformers|"
                             r"accelerate|jax.*|triton|pytorch-triton|nvidia-.*|optimum.*)$")
# collect_env's "Versions of relevant libraries": its patterns, matched as it matches them (a
# substring of the `name==version` line), plus the Neuron packages it misses.
LIBRARY_PATTERNS = (
    "mypy", "flake8", "onnx", "torch", "numpy", "triton", "optree", "cuda-cudart", "cuda-cupti",
    "cuda-libraries", "cuda-opencl", "cuda-nvrtc", "cuda-runtime", "cublas", "cudnn", "cufft",
    "curand", "cusolver", "cusparse", "nccl", "nvjitlink", "nvtx", "dpcpp-cpp-rt", "intel-cmplr",
    "intel-opencl-rt", "intel-sycl-rt", "mkl", "onemkl", "intel-openmp", "tbb", "impi-",
    "oneccl", "intel-pti", "umf", "tcmlib",
    "neuron", "nki", "libneuronxla", "nrtpy", "torch-xla", "torch_xla")
TORCH_TIMEOUT_S = 60.0
"""importing torch and its collect_env (which runs pip, nvidia-smi, lscpu) takes seconds."""


def relevant_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a Neuron bug report needs; a value whose name says it is a secret is
    replaced whole, every other value loses URL credentials and authorization tokens."""
    out = {}
    for key in sorted(environ):
        if not (key.startswith(ENV_PREFIXES) or key in ENV_NAMES):
            continue
        out[key] = REDACTED if is_secret_name(key) else redact(environ[key])
    return out


class EnvReport(Struct, frozen=True):
    """The bug-report sections, in the order they are shown."""

    neuronctl: str
    os: Mapping[str, Any]
    python: Mapping[str, Any]
    torch: Mapping[str, Any]
    packages: Mapping[str, str]
    hardware: Mapping[str, Any]
    environment: Mapping[str, str] = field(default_factory=dict)
    summary: str = ""
    compilers: Mapping[str, str | None] = field(default_factory=dict)
    cpu: Mapping[str, Any] = field(default_factory=dict)
    torch_build: Mapping[str, Any] = field(default_factory=dict)
    libraries: Mapping[str, list[str]] = field(default_factory=dict)
    collect_env: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"neuronctl": self.neuronctl, "os": dict(self.os), "python": dict(self.python),
                "torch": dict(self.torch), "packages": dict(self.packages),
                "hardware": dict(self.hardware), "environment": dict(self.environment),
                "summary": self.summary, "compilers": dict(self.compilers), "cpu": dict(self.cpu),
                "torch_build": dict(self.torch_build),
                "libraries": {k: list(v) for k, v in self.libraries.items()},
                "collect_env": dict(self.collect_env), "notes": list(self.notes)}


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


def _cpu_section(host: HostFacts, root: SysRoot) -> dict[str, Any]:
    cpu = host.cpu
    return {"model": cpu.model or _cpu_model(root), "cpus": cpu.cpus, "sockets": cpu.sockets,
            "cores_per_socket": cpu.cores_per_socket, "threads_per_core": cpu.threads_per_core,
            "flags": list(cpu.flags), "source": cpu.source, "lscpu": cpu.lscpu}


def _libraries(env: PythonEnv, facts: TorchEnvFacts) -> dict[str, list[str]]:
    """Our own list (read without pip, so it works in a venv without one), then any line torch's
    `pip list` saw that ours did not, then torch's conda lines."""
    pip = [f"{d.name}=={d.version}" for d in sorted(env.distributions.values(),
                                                   key=lambda d: d.name.lower())]
    pip = [line for line in pip if any(p in line for p in LIBRARY_PATTERNS)]
    pip += [line for line in _lines(facts.fields.get("pip_packages")) if line not in pip]
    return {"pip": pip, "conda": _lines(facts.fields.get("conda_packages"))}


def _lines(text: object) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()] if isinstance(text, str) else []


def _torch_build_section(env: PythonEnv, facts: TorchEnvFacts) -> dict[str, Any]:
    torch = env.get("torch")
    local = torch.version.partition("+")[2] if torch is not None else ""
    got = facts.fields
    keys = {"debug_build": "is_debug_build", "cuda_compiled": "cuda_compiled_version",
            "hip_compiled": "hip_compiled_version", "cuda_available": "is_cuda_available",
            "cuda_runtime": "cuda_runtime_version", "cudnn": "cudnn_version",
            "nvidia_driver": "nvidia_driver_version", "gpus": "nvidia_gpu_models",
            "xpu_available": "is_xpu_available", "xnnpack_available": "is_xnnpack_available"}
    return {"local_label": local or None, **{ours: got.get(theirs) for ours, theirs in keys.items()}}


def _summary(env: PythonEnv, host: HostFacts, hw: HardwareReport) -> str:
    torch, tnx = env.get("torch"), env.get("torch-neuronx")
    shown_torch = (f"torch {torch.version} ({torch_build(torch)} build)" if torch is not None
                   else "torch not installed")
    return " · ".join([
        f"neuronctl {__version__}", host.distribution or platform.system(),
        f"Python {env.python} ({env.implementation})", shown_torch,
        f"torch-neuronx {tnx.version}" if tnx is not None else "torch-neuronx not installed",
        f"chip {hw.chip}" if hw.chip else "no Neuron chip found"])


def _collect_env_section(facts: TorchEnvFacts) -> dict[str, Any]:
    return {"status": facts.status, "detail": facts.detail, "fields": dict(facts.fields),
            "wall_ms": facts.wall_ms}


def build_env_report(env: PythonEnv, hw: HardwareReport, root: SysRoot,
                     environ: Mapping[str, str], host: HostFacts | None = None,
                     torch_env: TorchEnvFacts | None = None) -> EnvReport:
    """The report from facts already gathered (the interpreter's inspection, the hardware, the
    host's tools, torch's collect_env in the target)."""
    host = host or HostFacts()
    facts = torch_env or TorchEnvFacts("error", "not gathered")
    packages = {d.name: d.version for d in sorted(env.distributions.values(),
                                                  key=lambda d: d.name.lower())
                if PACKAGE_PATTERN.match(d.name.lower().replace("_", "-"))}
    torch = env.get("torch")
    notes = list(host.notes)
    if facts.status != "ok":
        notes.append(f"torch.utils.collect_env: {facts.status}: {facts.detail}")
    return EnvReport(
        neuronctl=__version__,
        os={"system": platform.system(), "release": platform.release(),
            "machine": platform.machine(), "libc": " ".join(env.libc).strip() or None,
            "cpu": host.cpu.model or _cpu_model(root), "distribution": host.distribution,
            "distribution_id": host.distribution_id,
            "distribution_version": host.distribution_version, "kernel": host.kernel,
            "libc_version": "-".join(env.libc) if any(env.libc) else None},
        python={"version": env.python, "implementation": env.implementation,
                "executable": env.executable, "venv": env.in_venv, "platform": env.platform,
                "best_wheel_tag": env.tags[0] if env.tags else None, "build": facts.python_build,
                "bits": facts.python_bits, "python_platform": facts.python_platform},
        torch={"version": torch.version if torch else None,
               "build": torch_build(torch) if torch is not None else None},
        packages=packages, hardware=_hardware_section(hw), environment=relevant_environ(environ),
        summary=_summary(env, host, hw), compilers=dict(host.compilers),
        cpu=_cpu_section(host, root), torch_build=_torch_build_section(env, facts),
        libraries=_libraries(env, facts), collect_env=_collect_env_section(facts),
        notes=tuple(notes))


def collect_env(python: str | None, sysroot: Path | None, environ: Mapping[str, str] | None = None,
                timeout: float = TORCH_TIMEOUT_S) -> EnvReport:
    """Inspect the interpreter, run torch's collect_env in it, read the host and the machine,
    all at once, each once; `timeout` bounds the torch script (from its start)."""
    root = SysRoot.from_env(sysroot)  # validates --sysroot and NEURONCTL_SYSROOT (exit 2)
    given = environ is not None
    environ = os.environ if environ is None else environ
    inspection = Inspection(python)  # the interpreters start while the machine is read
    torch_run = TorchEnvRun(inspection.exe, timeout, env=environ if given else None,
                            cwd=os.path.dirname(inspection.exe) or None)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            host = pool.submit(gather_host_facts, root)
            hardware = detect_hardware(root, environ)
            env = inspection.result()
            facts = torch_run.result()
            return build_env_report(env, hardware, root, environ, host.result(), facts)
    finally:
        torch_run.kill()  # on every path: a bad interpreter, Ctrl-C, an error elsewhere
