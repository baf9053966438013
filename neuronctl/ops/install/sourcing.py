"""Where an install's wheels come from: the lock (already read) or a fresh resolution for the
target, the index routing that names each package's index, and the command's one Fetcher, which
the resolution and the downloads share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuronctl.backend.plan import Wanted
from neuronctl.manifest import Framework, Manifest
from neuronctl.ops.install.downloads import download_all, planned_path
from neuronctl.ops.install.preflight import check_chip, check_python, release_note
from neuronctl.ops.install.request import InstallRequest
from neuronctl.ops.install.source import InstallSource, from_lock, from_resolution
from neuronctl.ops.reporter import Event, Reporter
from neuronctl.probes.hardware import HardwareReport
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.resolvers.http_fetch import Fetcher, cached_fetcher
from neuronctl.resolvers.targets import Target, target_for_interpreter
from neuronctl.routing import IndexRouting

if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.ops.lock.request import StackRequest
    from neuronctl.ops.lock.resolve import Resolved


@dataclass(frozen=True)
class Sourced:
    source: InstallSource
    routing: IndexRouting
    fetcher: Fetcher
    cache_root: Path
    resolved: Resolved | None = None
    """The fresh resolution (None for a lock), with the request it answered."""
    stack: StackRequest | None = None

    def planned_paths(self) -> dict[str, Path]:
        """name -> where each verified file will be in the cache."""
        return {w.name: planned_path(self.cache_root, w) for w in self.source.wanted}

    def download(self, wanted: Sequence[Wanted], reporter: Reporter) -> dict[str, Path]:
        return download_all(wanted, self.fetcher, self.cache_root, reporter)

    def write_lock(self, path: Path | None) -> Path | None:
        """The fresh resolution as a pylock.toml at `path` (--write-lock), if both are there."""
        if path is None or self.resolved is None or self.stack is None:
            return None
        from neuronctl.atomic import write_text_atomic
        from neuronctl.resolvers.pylock import build_pylock, render_pylock

        doc = build_pylock(self.resolved.packages, self.stack.inputs(), self.resolved.hash_of)
        write_text_atomic(path, render_pylock(doc))
        return path


def _fetcher(request: InstallRequest, routing: IndexRouting) -> tuple[Fetcher, Path]:
    return cached_fetcher(offline=request.offline, timeout=request.timeout,
                          credentials=routing.credentials())


def _preflight(manifest: Manifest, release: str | None, framework: Framework | None,
               hardware: HardwareReport, reporter: Reporter) -> None:
    note = release_note(manifest, release)
    if note is not None:
        reporter.emit(Event("note", note))
    warning = check_chip(hardware, framework)
    if warning is not None:
        reporter.emit(Event("warning", warning))


def source_for(request: InstallRequest, env: PythonEnv, hardware: HardwareReport,
               manifest: Manifest, pylock: Pylock | None, preferred: Sequence[str],
               reporter: Reporter) -> Sourced:
    """The source for the target `env`, after the preflight that needs it (Python, chip)."""
    target = target_for_interpreter(env.python, env.libc, env.machine)
    if request.lock is not None and pylock is not None:
        return _from_lock(request, pylock, env, target, manifest, hardware, reporter)
    check_python(preferred, env.python)
    return _resolved(request, target, manifest, hardware, reporter)


def _from_lock(request: InstallRequest, pylock: Pylock, env: PythonEnv, target: Target,
               manifest: Manifest, hardware: HardwareReport, reporter: Reporter) -> Sourced:
    from neuronctl.ops.index_routing import build_routing

    assert request.lock is not None
    source = from_lock(request.lock, pylock, env, target, manifest,
                       request.release or request.config.get("release"))
    if request.find_links is not None:
        from neuronctl.ops.install.wheelhouse_source import from_wheelhouse

        source = from_wheelhouse(source, request.find_links, offline=request.offline,
                                 reporter=reporter)
    _preflight(manifest, source.release, source.framework, hardware, reporter)
    routing = build_routing(request.config, request.indexes, request.routes, recorded=source.indexes)
    fetcher, cache_root = _fetcher(request, routing)
    return Sourced(source, routing, fetcher, cache_root)


def _resolved(request: InstallRequest, target: Target, manifest: Manifest,
              hardware: HardwareReport, reporter: Reporter) -> Sourced:
    from neuronctl.ops.lock.request import build_request
    from neuronctl.ops.lock.resolve import resolve_request

    stack = build_request(request.config, manifest, release=request.release, torch=request.torch,
                          pythons=(target.python_minor,), platforms=(target.platform,),
                          requirements=request.with_, index_flags=request.indexes,
                          route_flags=request.routes, latest=request.latest)
    plan = stack.plan
    _preflight(manifest, plan.release.version, plan.framework, hardware, reporter)
    fetcher, cache_root = _fetcher(request, stack.routing)
    resolved = resolve_request(stack, offline=request.offline, timeout=request.timeout,
                               fetcher=fetcher, cache_root=cache_root)
    source = from_resolution(resolved.packages, target, resolved.hash_of, plan)
    return Sourced(source, stack.routing, fetcher, cache_root, resolved, stack)
