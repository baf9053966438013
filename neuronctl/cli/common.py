"""Options and helpers that several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.target_env import TargetPython

__all__ = ["check_sysroot", "echo_target", "target_python"]


def target_python(python: str | None) -> TargetPython:
    """The environment this command works on (neuronctl.ops.target_env: the one rule)."""
    from neuronctl.ops.target_env import choose_target

    return choose_target(python)


def echo_target(target: TargetPython, printer: Printer) -> None:
    """A text report's first line: the target and why it was chosen (not with -q)."""
    if not printer.quiet:
        printer.say(target.line())


def check_sysroot(path: Path | None) -> Path | None:
    """--sysroot as given, after the root it or NEURONCTL_SYSROOT names is validated (exit 2
    before anything runs); SysRoot.from_env is the one place that decides what a root is."""
    from neuronctl.probes.sysroot import SysRoot
    from neuronctl.probes.tools import sysroot_tools_allowed

    root = SysRoot.from_env(path)
    if not root.is_host:  # a bad NEURONCTL_SYSROOT_TOOLS: bad input now, not each probe's failure
        sysroot_tools_allowed(root)
    return path
