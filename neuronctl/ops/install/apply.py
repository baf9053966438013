"""Apply the plan from verified local files only (the download runs alongside a new venv's
creation or the existing environment's file listing); a new venv that fails is removed, an
existing environment that fails is reported with what changed (see failure.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuronctl.backend.engine import Engine
from neuronctl.backend.external_tool import run_engine
from neuronctl.backend.plan import Plan
from neuronctl.backend.snapshot import Snapshot
from neuronctl.errors import FaultError, Interrupted
from neuronctl.ops.install.target import InstallTarget

Runner = Callable[[Sequence[str]], Any]


@dataclass(frozen=True)
class ApplyFailure(Exception):
    stage: str
    error: FaultError
    venv_removed: Path | None = None
    files_before: Snapshot | None = None
    """The existing environment's files just before the engine ran (None: not taken)."""


def apply_steps(plan: Plan, files: dict[str, Path], target: InstallTarget,
                engine: Engine) -> list[tuple[str, list[str]]]:
    """(stage, argv) for what changes the target: install first, then remove."""
    steps = []
    installs = [files[c.name] for c in plan.applies]
    if target.seed_pip is not None:  # with the stack: one uv pass unpacks both in parallel
        installs.append(target.seed_pip)
    if installs:
        steps.append(("install", engine.install(target.final_python, installs)))
    if plan.removals:
        steps.append(("remove", engine.uninstall(target.final_python, [c.name for c in plan.removals])))
    return steps


def engine_commands(plan: Plan, files: dict[str, Path], target: InstallTarget,
                    engine: Engine) -> list[list[str]]:
    """Every command an apply runs, venv creation included (what --dry-run prints)."""
    cmds = []
    if target.new_venv:
        assert target.venv is not None
        cmds.append(engine.create_venv(target.python, target.venv))
    return cmds + [argv for _, argv in apply_steps(plan, files, target, engine)]


def _remove_new_venv(target: InstallTarget) -> Path | None:
    if not (target.new_venv and target.venv is not None and target.venv.exists()):
        return None
    if not target.keep_dir:
        shutil.rmtree(target.venv, ignore_errors=True)
        return target.venv
    for child in target.venv.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    return target.venv


def fetch_and_apply(plan: Plan, target: InstallTarget, engine: Engine,
                    download: Callable[[], dict[str, Path]], run: Runner = run_engine,
                    watch: Callable[[], Snapshot] | None = None) -> None:
    """Download and verify (while a new venv is being created at its final path, or an existing
    environment's files are listed by `watch`), then install (pip rolls its own upgrades back if
    that step fails), then remove. A new venv is removed again if anything fails; an existing
    environment is untouched until every file is verified."""
    pool = ThreadPoolExecutor(max_workers=1) if target.new_venv or watch is not None else None
    creating = listing = None
    if pool is not None and target.new_venv:
        assert target.venv is not None
        creating = pool.submit(run, engine.create_venv(target.python, target.venv))
    elif pool is not None and watch is not None:
        listing = pool.submit(watch)
    try:
        try:
            files = download()
        finally:
            wait([f for f in (creating, listing) if f is not None])
        if creating is not None and creating.exception() is not None:
            error = creating.exception()
            assert isinstance(error, FaultError)
            raise ApplyFailure("create venv", error, _remove_new_venv(target))
        # Without the before-state no failure could be reported truthfully: do not start.
        before = listing.result() if listing is not None else None
        for stage, argv in apply_steps(plan, files, target, engine):
            try:
                run(argv)
            except FaultError as exc:
                raise ApplyFailure(stage, exc, _remove_new_venv(target), before) from None
            except KeyboardInterrupt as signal:  # the engine may have changed things: report them
                raise ApplyFailure(stage, Interrupted.caused_by(signal), _remove_new_venv(target),
                                   before) from None
    except ApplyFailure:
        raise
    except BaseException:
        _remove_new_venv(target)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
