"""Apply the plan in one pass: the engine fetches each file from its URL and verifies it against
the lock's sha256 while it streams it, all of them before it changes anything (engine.py says why
that holds for both engines), then installs; removals follow. A new venv that fails is removed,
an existing environment that fails is reported with what changed (see failure.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronctl.backend.engine import Engine, nothing
from neuronctl.backend.engine_watch import install_limits, step_limits
from neuronctl.backend.external_tool import run_engine
from neuronctl.backend.plan import Plan
from neuronctl.errors import FaultError, InputError, Interrupted, NeuronctlError
from neuronctl.locked_file import NAME_RE, LockedFile
from neuronctl.ops.install.background import Background, OnThread
from neuronctl.ops.install.requirements import written
from neuronctl.ops.install.target import InstallTarget
from neuronctl.routing import Origin

if TYPE_CHECKING:  # only an existing environment's apply takes a snapshot (the caller's `watch`)
    from neuronctl.backend.snapshot import Snapshot

Runner = Callable[..., Any]
"""Runs an argv (run_engine's signature: `limits` by keyword)."""
STEP_LIMIT_S = 1800.0
"""The overall limit of a step that fetches nothing (a venv's creation, a removal); each also
stops after --timeout without progress."""


@dataclass(eq=False)  # not frozen: raising it sets its __traceback__
class ApplyFailure(Exception):
    """An apply that failed: the stage, the fault, and what the report of what changed needs."""

    stage: str
    error: NeuronctlError
    """A FaultError or an interrupt; an InputError for a local file that is not the locked one."""
    venv_removed: Path | None = None
    files_before: Snapshot | None = None
    """The existing environment's files just before the engine ran (None: not taken)."""


def apply_steps(plan: Plan, requirements: Path, target: InstallTarget, engine: Engine, *,
                offline: bool = False, installs: bool = True) -> list[tuple[str, list[str]]]:
    """(stage, argv) for what changes the target: install first, then remove."""
    steps = []
    # Names go on the engine's argv: none may read as an option there (`-r FILE`).
    bad = [c.name for c in plan.removals if not NAME_RE.fullmatch(c.name)]
    if bad:
        raise InputError(f"cannot remove {ascii(bad[0])[:80]}: not a valid package name")
    if installs:
        steps.append(("install", engine.install(target.final_python, requirements, offline=offline)))
    if plan.removals:
        steps.append(("remove", engine.uninstall(target.final_python, [c.name for c in plan.removals])))
    return steps


def engine_commands(plan: Plan, target: InstallTarget, engine: Engine, *, offline: bool = False,
                    installs: bool = True) -> list[list[str]]:
    """Every command an apply runs, venv creation included (what --dry-run prints); the
    engine's input is named by its file name (it is written privately when the engine runs)."""
    cmds = []
    if target.new_venv:
        assert target.venv is not None
        cmds.append(engine.create_venv(target.python, target.venv))
    steps = apply_steps(plan, Path(engine.input_name), target, engine, offline=offline, installs=installs)
    return cmds + [argv for _, argv in steps]


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


ABANDON_WAIT_S = 60.0
"""How long an abandoned install waits for its venv's creation (milliseconds, normally) before
removing what it made."""


def early_venv(target: InstallTarget, engine: Engine, run: Runner = run_engine, *,
               timeout: float = 30.0) -> OnThread[None]:
    """A new venv made while the install is still being planned (uv venv takes 40-100 ms that
    would otherwise come after the plan), started: apply() takes its result before the engine
    installs into it; cancelled where the install stops before that, the venv goes again
    (nothing changed)."""
    assert target.new_venv and target.venv is not None
    argv, limits = engine.create_venv(target.python, target.venv), step_limits(STEP_LIMIT_S, timeout)
    made = OnThread(lambda: run(argv, limits=limits), name="neuronctl-venv",
                    undo=lambda: _remove_new_venv(target), patience=ABANDON_WAIT_S)
    made.start()
    return made


def _run_steps(plan: Plan, requirements: Path, target: InstallTarget, engine: Engine, run: Runner,
               files: Sequence[LockedFile], offline: bool, timeout: float,
               before: Snapshot | None, cleanup: Callable[[], None],
               started: Callable[[], None]) -> None:
    step = step_limits(STEP_LIMIT_S, timeout)
    steps = apply_steps(plan, requirements, target, engine, offline=offline, installs=bool(files))
    for i, (stage, argv) in enumerate(steps):
        limits = install_limits((f.size for f in files), timeout) if stage == "install" else step
        try:
            run(argv, limits=limits, started=started if i == 0 else None)
        except FaultError as exc:
            cleanup()
            raise ApplyFailure(stage, exc, _remove_new_venv(target), before) from None
        except KeyboardInterrupt as signal:  # the engine may have changed things: report them
            cleanup()
            raise ApplyFailure(stage, Interrupted.caused_by(signal), _remove_new_venv(target),
                               before) from None


def apply(plan: Plan, target: InstallTarget, engine: Engine, files: Sequence[LockedFile],
          credentials: Mapping[Origin, tuple[str, str]], *, run: Runner = run_engine,
          watch: Callable[[], Snapshot] | None = None, offline: bool = False,
          early: Background[None] | None = None, engine_starting: Callable[[], None] = nothing,
          started: Callable[[], None] = nothing, timeout: float = 30.0,
          local_label: Callable[[Path], str] = str) -> None:
    """Create a new venv (at its final path; `early`: wait for the one being made) or list an
    existing environment's files (`watch`), then let the engine fetch, verify and install
    `files` (pip rolls its own upgrades back if that step fails), then remove. A new venv is
    removed again if anything fails. `engine_starting` is called once the target exists, just
    before the engine runs; `started` once the engine's first step runs (not a venv's creation).
    `timeout` (--timeout) bounds each step: no progress for that long stops it, and the install
    step also stops at a limit from its files' sizes (engine_watch). `local_label` names a local
    file in the error when it is not the locked one."""
    step = step_limits(STEP_LIMIT_S, timeout)
    try:
        if target.new_venv:
            assert target.venv is not None
            try:
                if early is not None:
                    early.result()
                else:
                    run(engine.create_venv(target.python, target.venv), limits=step)
            except FaultError as exc:
                raise ApplyFailure("create venv", exc, _remove_new_venv(target)) from None
        # Without the before-state no failure could be reported truthfully: do not start.
        before = watch() if watch is not None else None
        engine_starting()
        cleanup = nothing if target.new_venv else engine.cleanup(target.environment)
        try:
            with written(files, engine, credentials,
                         private_copies=local_label if engine.rereads_local_files else None
                         ) as requirements:
                _run_steps(plan, requirements, target, engine, run, files, offline, timeout,
                           before, cleanup, started)
        except InputError as exc:  # a local file that is not the locked one: the engine never ran
            raise ApplyFailure("install", exc, _remove_new_venv(target), before) from None
    except ApplyFailure:
        raise
    except BaseException:
        _remove_new_venv(target)
        raise
