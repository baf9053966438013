"""Running external tools (neuron-ls and the like) with a timeout; injectable for tests."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from neuronctl.probes.sysroot import SysRoot


@dataclass(frozen=True)
class ToolResult:
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None
    """Set when the tool could not run at all or timed out."""


Runner = Callable[[Sequence[str], float], ToolResult]


def run_tool(argv: Sequence[str], timeout: float) -> ToolResult:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return ToolResult(None, "", "", f"timed out after {timeout:g}s")
    except OSError as exc:
        return ToolResult(None, "", "", f"could not run: {exc.strerror or exc}")
    return ToolResult(proc.returncode, proc.stdout, proc.stderr)


def find_neuron_tool(root: SysRoot, name: str) -> Path | None:
    """Look under the root's /opt/aws/neuron/bin first; PATH only when inspecting this host."""
    candidate = root.path(f"/opt/aws/neuron/bin/{name}")
    if candidate.is_file():
        return candidate
    if root.is_host:
        found = shutil.which(name)
        return Path(found) if found else None
    return None
