"""Held inspections under test: each start logged by a .pth line, waited for, fake distributions."""

from __future__ import annotations

import time
from pathlib import Path

from neuronctl.probes.held_inspection import HeldInspection, venv_site_dirs
from support.wheels import site_packages


def log_starts(venv: Path, log: Path) -> None:
    """Each start of neuronctl's inspection in the venv appends its pid to `log` (a .pth import
    line; site may read a venv's site-packages twice, through lib and its lib64 link, and an
    engine may run the interpreter to ask it things: those are not counted)."""
    (site_packages(venv) / "aa_log.pth").write_text(
        "import os; os.environ.get('LOGGED') or 'inspect_env.py' not in open('/proc/self/cmdline').read() "
        f"or (os.environ.__setitem__('LOGGED', '1'), open({str(log)!r}, 'a').write(str(os.getpid()) + chr(10)))\n")


def starts(log: Path, at_least: int = 1) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pids = [int(p) for p in log.read_text().split()] if log.exists() else []
        if len(pids) >= at_least:
            return pids
        time.sleep(0.02)
    raise AssertionError(f"fewer than {at_least} inspection starts logged")


def held_and_up(venv: Path, log: Path, dirs: list[str] | None = None) -> HeldInspection:
    """A held inspection whose interpreter has started (so has read its .pth files)."""
    log_starts(venv, log)
    held = HeldInspection(str(venv / "bin" / "python"),
                          venv_site_dirs(str(venv)) if dirs is None else dirs, timeout=30)
    held.start()
    starts(log)
    return held


def dist_folder(where: Path, name: str) -> None:
    info = where / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n")
