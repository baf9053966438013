"""Where an install's wheels come from: the lock (already read) or a fresh resolution for the
target, the index routing that names each package's index, the command's one Fetcher (index pages
and metadata for a resolution; wheels are fetched by the engine, not by neuronctl), and the URL
the engine fetches each file from (`Sourced.file_url`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from neuronctl.locked_file import LockedFile
from neuronctl.manifest import Framework, Manifest
from neuronctl.ops.install.preflight import check_chip, check_python, release_note
from neuronctl.ops.install.request import InstallRequest
from neuronctl.ops.install.source import InstallSource, from_lock, from_resolution
from neuronctl.ops.reporter import Event, Reporter
from neuronctl.probes.hardware import HardwareReport
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.resolvers.targets import Target, target_for_interpreter
from neuronctl.routing import IndexRouting

if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.ops.lock.request import StackRequest
    from neuronctl.ops.lock.resolve import Resolved
    from neuronctl.resolvers.http_fetch import Fetcher


@dataclass(frozen=True)
class Sourced:
    """An install's source with what fetching its files needs: the routing, the Fetcher, caches."""

    source: InstallSource
    routing: IndexRouting
    fetcher: Fetcher | None
    """The resolution's Fetcher (None for a lock: the engine fetches every file itself)."""
    cache_root: Path
    resolved: Resolved | None = None
    """The fresh resolution (None for a lock), with the request it answered."""
    stack: StackRequest | None = None

    def file_url(self, wanted: LockedFile) -> str:
        """The one place where the URL the engine fetches a file from is chosen: the lock's (or
        the resolution's) URL, so each package comes from its own index."""
        return wanted.url

    def engine_files(self, wanted: Sequence[LockedFile]) -> list[LockedFile]:
        """What the engine is given for `wanted`: each file's URL and its checked sha256."""
        return [replace(w, url=self.file_url(w)).checked() for w in wanted]

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
    # Only a resolution fetches (index pages, metadata): a lock install never loads the HTTP stack.
    from neuronctl.resolvers.http_fetch import cached_fetcher

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
               reporter: Reporter, *, lock_path: Path | None = None,
               fallback: bool = False) -> Sourced:
    """The source for the target `env`, after the preflight that needs it (Python, chip).
    `lock_path`: the lock chosen for this host (--lock or its fallback beside it); `fallback`:
    it is a GPU/CPU fallback lock, with no Neuron package, so the Neuron preflight is skipped."""
    target = target_for_interpreter(env.python, env.libc, env.machine)
    if pylock is not None:
        path = lock_path or request.lock
        assert path is not None
        return _from_lock(request, path, pylock, env, target, manifest, hardware, reporter, fallback)
    check_python(preferred, env.python)
    return _resolved(request, target, manifest, hardware, reporter)


def _from_lock(request: InstallRequest, path: Path, pylock: Pylock, env: PythonEnv, target: Target,
               manifest: Manifest, hardware: HardwareReport, reporter: Reporter,
               fallback: bool) -> Sourced:
    from neuronctl.cache_dir import user_cache_dir
    from neuronctl.ops.index_routing import build_routing

    source = from_lock(path, pylock, env, target, manifest,
                       request.release or request.config.get("release"))
    if fallback:
        source = replace(source, framework=None)  # no torch-neuronx: no chip to fit
    else:
        _preflight(manifest, source.release, source.framework, hardware, reporter)
    if request.find_links is not None:
        from neuronctl.ops.install.wheelhouse_source import from_wheelhouse

        source = from_wheelhouse(source, request.find_links, offline=request.offline,
                                 reporter=reporter)
    routing = build_routing(request.config, request.indexes, request.routes, recorded=source.indexes)
    return Sourced(source, routing, None, user_cache_dir())


def _resolved(request: InstallRequest, target: Target, manifest: Manifest,
              hardware: HardwareReport, reporter: Reporter) -> Sourced:
    from neuronctl.ops.lock.request import build_request
    from neuronctl.ops.lock.resolve import resolve_request
    from neuronctl.ops.net_preflight import preflight_stack

    stack = build_request(request.config, manifest, release=request.release, torch=request.torch,
                          pythons=(target.python_minor,), platforms=(target.platform,),
                          requirements=request.with_, index_flags=request.indexes,
                          route_flags=request.routes, latest=request.latest)
    plan = stack.plan
    _preflight(manifest, plan.release.version, plan.framework, hardware, reporter)
    fetcher, cache_root = _fetcher(request, stack.routing)
    preflight_stack(stack, fetcher)  # every index at once, before resolving
    resolved = resolve_request(stack, offline=request.offline, timeout=request.timeout,
                               fetcher=fetcher, cache_root=cache_root)
    source = from_resolution(resolved.packages, target, resolved.hash_of, plan)
    return Sourced(source, stack.routing, fetcher, cache_root, resolved, stack)
