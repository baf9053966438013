"""Is there an NVIDIA GPU, and which driver runs it? Detected the way uv's `--torch-backend=auto`
does (crates/uv-torch/src/accelerator.rs), in its order:

1. `/sys/module/nvidia/version`: the loaded kernel module's version alone (`550.144.03`);
2. `/proc/driver/nvidia/version`: `NVRM version: NVIDIA UNIX ... Kernel Module  550.144.03  Release
   Build ...`, the version being the second field when split on two spaces;
3. `nvidia-smi --query-gpu=driver_version --format=csv,noheader`: the first line.

Files are read under a SysRoot, at most a few KiB each, and their text is untrusted: only a
plain dotted version is accepted, anything else is noted and the next source is asked.
`nvidia-smi` runs only when inspecting this host (a captured tree's binaries never run), from
PATH, with a time limit.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence

from msgspec import Struct

from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import Runner, run_tool

SYS_MODULE = "/sys/module/nvidia/version"
PROC_DRIVER = "/proc/driver/nvidia/version"
SMI_ARGS = ("--query-gpu=driver_version", "--format=csv,noheader")
MAX_READ = 4096
SMI_TIMEOUT = 5.0
_VERSION = re.compile(r"^\d{1,4}(?:\.\d{1,4}){0,3}$")


class NvidiaFacts(Struct, frozen=True):
    """The NVIDIA driver a CUDA fallback lock would need, and where it was read."""

    driver: str | None
    """The NVIDIA driver version (550.144.03), None when no NVIDIA driver was found."""
    source: str | None = None
    """Where it came from: /sys/module/nvidia/version, /proc/driver/nvidia/version, nvidia-smi."""
    notes: tuple[str, ...] = ()
    """Sources that answered something unusable (bad text, nvidia-smi failing or timing out)."""

    @property
    def present(self) -> bool:
        return self.driver is not None

    def to_json(self) -> dict[str, object]:
        return {"driver": self.driver, "source": self.source, "notes": list(self.notes)}


def _read_head(root: SysRoot, absolute: str) -> str | None:
    """The first MAX_READ bytes of a file as text; None when absent or unreadable."""
    return root.read_text(absolute, MAX_READ)  # kept to the root: a link out of it is absent


def _plain_version(text: str) -> str | None:
    value = text.strip()
    return value if _VERSION.match(value) else None


def parse_sys_module(text: str) -> str | None:
    """`550.144.03\\n` -> 550.144.03."""
    return _plain_version(text)


def parse_proc_driver(text: str) -> str | None:
    """The version between the first and second run of two spaces on the NVRM line."""
    fields = text.split("  ")
    return _plain_version(fields[1]) if len(fields) > 1 else None


def parse_smi(stdout: str) -> str | None:
    """The first line of `nvidia-smi --query-gpu=driver_version --format=csv,noheader`."""
    lines = stdout.splitlines()
    return _plain_version(lines[0]) if lines else None


def _shown(text: str) -> str:
    return repr(text.strip()[:60])


def _from_files(root: SysRoot, notes: list[str]) -> NvidiaFacts | None:
    for absolute, parse in ((SYS_MODULE, parse_sys_module), (PROC_DRIVER, parse_proc_driver)):
        text = _read_head(root, absolute)
        if text is None:
            continue
        version = parse(text)
        if version is not None:
            return NvidiaFacts(version, absolute, tuple(notes))
        notes.append(f"{absolute}: no driver version in {_shown(text)}")
    return None


def _from_smi(path: str | None, runner: Runner, timeout: float, notes: list[str]) -> NvidiaFacts | None:
    found = shutil.which("nvidia-smi", path=path if path is not None else os.environ.get("PATH"))
    if found is None:
        return None
    argv: Sequence[str] = (found, *SMI_ARGS)
    result = runner(argv, timeout)
    if result.error is not None or result.returncode != 0:
        why = result.error or f"exit {result.returncode}: {result.stderr.strip()[:120]}"
        notes.append(f"nvidia-smi: {why}")
        return None
    version = parse_smi(result.stdout[:MAX_READ])
    if version is None:
        notes.append(f"nvidia-smi: no driver version in {_shown(result.stdout[:MAX_READ])}")
        return None
    return NvidiaFacts(version, "nvidia-smi", tuple(notes))


def detect_nvidia(root: SysRoot, *, run_smi: bool | None = None, path: str | None = None,
                  runner: Runner = run_tool, timeout: float = SMI_TIMEOUT) -> NvidiaFacts:
    """The NVIDIA driver, from the first source that names one. `run_smi` defaults to whether
    `root` is this host; `path` is the PATH nvidia-smi is looked up on (default: this process's)."""
    notes: list[str] = []
    found = _from_files(root, notes)
    if found is None and (root.is_host if run_smi is None else run_smi):
        found = _from_smi(path, runner, timeout, notes)
    return found or NvidiaFacts(None, None, tuple(notes))
