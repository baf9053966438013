"""Running external tools (neuron-ls and the like) with a timeout and an output cap; injectable
for tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from neuronctl import proc
from neuronctl.probes.sysroot import SysRoot

MAX_TOOL_OUTPUT = 8 * 1024 * 1024
"""Bytes kept per stream of a probed tool (neuron-ls JSON is a few KB)."""
SYSROOT_TOOLS_ENV = "NEURONCTL_SYSROOT_TOOLS"
SYSROOT_TOOLS_REFUSED = f"not run: tools inside --sysroot run only with {SYSROOT_TOOLS_ENV}=1"


class ToolResult(Struct, frozen=True):
    """How an external tool (neuron-ls, dpkg-query, ...) ended, its output decoded."""

    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None
    """Set when the tool could not run at all or timed out."""


Runner = Callable[[Sequence[str], float], ToolResult]


class CappedRun(Struct, frozen=True):
    """How a command ended under a deadline and an output cap, its output as bytes."""

    returncode: int | None
    """None when it was killed (at the deadline or the cap)."""
    stdout: bytes
    stderr: bytes
    timed_out: bool
    over_cap: bool
    """A stream passed `cap` bytes: the process group was killed there."""


def run_capped(argv: Sequence[str], timeout: float, cap: int = MAX_TOOL_OUTPUT, *,
               env: Mapping[str, str] | None = None, term_grace: float = 0.0) -> CappedRun:
    """Run argv (neuronctl.proc), keeping at most `cap` bytes of each stream. At the cap or the
    deadline the whole process group is killed (at the deadline after SIGTERM and `term_grace`
    seconds: srun cancels its step on SIGTERM), so neither a flood of output nor a hung tool
    (or a grandchild holding its pipes) can hold memory or time. OSError when it cannot start."""
    keep = proc.Keep(cap, stop_over=True)
    done = proc.run(argv, proc.Bounds(timeout, term_grace), env=env, stdout=keep, stderr=keep)
    return CappedRun(done.returncode, done.stdout.data, done.stderr.data, done.timed_out,
                     done.over_cap)


def run_tool(argv: Sequence[str], timeout: float) -> ToolResult:
    try:
        done = run_capped(argv, timeout)
    except OSError as exc:
        return ToolResult(None, "", "", f"could not run: {exc.strerror or exc}")
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    if done.timed_out:
        return ToolResult(None, out, err, f"timed out after {timeout:g}s")
    if done.over_cap:
        return ToolResult(None, out, err, f"output over {MAX_TOOL_OUTPUT} bytes: stopped")
    return ToolResult(done.returncode, out, err)


def sysroot_tools_allowed(root: SysRoot, environ: Mapping[str, str] | None = None) -> bool:
    """Programs found under a captured tree are code from that tree: run them only when the
    tree is this host or the user said so (a host mounted at /host, for example)."""
    from neuronctl.settings_table import from_environment

    return root.is_host or bool(from_environment("sysroot_tools", environ))


def find_neuron_tool(root: SysRoot, name: str) -> Path | None:
    """Look under the root's /opt/aws/neuron/bin first; PATH only when inspecting this host."""
    candidate = root.path(f"/opt/aws/neuron/bin/{name}")
    if candidate.is_file():
        return candidate
    if root.is_host:
        found = shutil.which(name)
        return Path(found) if found else None
    return None
