"""Download and verify every artifact, then apply the plan from those local files only; a new
venv that fails is removed, an existing environment that fails is reported with what changed."""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from neuronctl.backend.engine import Engine
from neuronctl.backend.external_tool import run_engine
from neuronctl.backend.plan import Plan, Wanted
from neuronctl.backend.snapshot import Snapshot
from neuronctl.errors import FaultError, InputError, Interrupted
from neuronctl.ops.install.target import InstallTarget
from neuronctl.resolvers.download import cached_wheel_path, download_verified
from neuronctl.resolvers.http_fetch import Fetcher

Runner = Callable[[Sequence[str]], Any]


def planned_path(cache_root: Path, wanted: Wanted) -> Path:
    """Where the verified file will be: named by its checked sha256 and file name, inside the cache
    (cached_wheel_path refuses anything else); a file with no sha256 has no such place."""
    if wanted.sha256 is None:
        raise InputError(f"{wanted.filename[:80]}: no sha256; neuronctl verifies every file")
    return cached_wheel_path(cache_root, wanted.sha256, wanted.filename)


def download_all(wanted: Sequence[Wanted], fetcher: Fetcher, cache_root: Path, *, show: bool,
                 console: Callable[[], Any]) -> dict[str, Path]:
    """Every file in the cache, verified against its sha256 and size; the first failure wins and
    nothing unverified is kept. Progress bars on a terminal (console() makes the rich console
    then), a line per verified file otherwise."""
    if not wanted:
        return {}
    bars: Any = None
    if show and sys.stderr.isatty():
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        # Labelled by name and version, never markup: wheel file names run to 80 characters
        # and would push the size and speed off an 80-column terminal.
        bars = Progress(TextColumn("{task.description}", markup=False), BarColumn(bar_width=20),
                        DownloadColumn(), TransferSpeedColumn(), console=console(), transient=True)
        bars.start()

    def one(w: Wanted) -> tuple[str, Path]:
        task = bars.add_task(progress_label(w), total=w.size) if bars else None

        def progress(done: int, total: int | None) -> None:
            if bars is not None:
                bars.update(task, completed=done, total=total)

        path, _ = download_verified(fetcher, w.url, w.filename, cache_root, sha256=w.sha256,
                                    size=w.size, progress=progress, stop=abandon.is_set)
        if show and bars is None:
            click.echo(f"verified {w.filename} ({path.stat().st_size:,} bytes, sha256 ok)", err=True)
        return w.name, path

    # The first failure, or Ctrl-C, stops the other downloads too instead of waiting them out.
    abandon = threading.Event()
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="neuronctl-download")
    try:
        return dict(pool.map(one, wanted))
    except BaseException:
        abandon.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if bars is not None:
            bars.stop()


LABEL_WIDTH = 28


def progress_label(wanted: Wanted) -> str:
    """"torch 2.14.0+cpu": short enough that bar, size and speed fit beside it on 80 columns."""
    label = f"{wanted.name} {wanted.version}"
    return label if len(label) <= LABEL_WIDTH else label[:LABEL_WIDTH - 1] + "…"


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
