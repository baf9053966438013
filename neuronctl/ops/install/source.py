"""Steps 4 and 6 of an install, the stack and the source. The stack is what the install is for,
known before anything is fetched: the lock chosen for this host (PEP 751 selection by markers and
tags, ambiguity an error) or a fresh resolution's request. The source is the wheels it puts in
place: the lock's (--find-links: from a wheelhouse, find_links.py) or those the resolution finds
for the target (resolution.py), with the index routing that names each package's index."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct
from msgspec.structs import replace
from packaging.markers import Marker
from packaging.pylock import PackageWheel, Pylock, PylockSelectError
from packaging.tags import Tag
from packaging.version import Version

from neuronctl.errors import InputError
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.request import InstallRequest
from neuronctl.ops.install.source_types import InstallSource, Sourced
from neuronctl.ops.lock.choice import PickedLock
from neuronctl.ops.reporter import Reporter
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.release.model import Framework, Manifest
from neuronctl.resolvers.stack_plan import pick_release, plan_stack
from neuronctl.resolvers.targets import PlatformTarget, target_for_interpreter
from neuronctl.safety import checked_hash, safe_filename

if TYPE_CHECKING:
    from neuronctl.ops.lock.request import StackRequest


def env_tags(env: PythonEnv, target: PlatformTarget) -> list[Any]:
    tags = []
    for text in env.tags:
        parts = text.split("-")
        if len(parts) == 3:
            tags.append(Tag(*parts))
    return tags or list(target.tags)


def from_lock(path: Path, lock: Pylock, env: PythonEnv, target: PlatformTarget, manifest: Manifest,
              release_hint: str | None) -> InstallSource:
    markers = dict(env.markers) or target.markers
    full = markers.get("python_full_version", env.python)
    if lock.requires_python is not None and not lock.requires_python.contains(Version(full)):
        raise InputError(f"{path}: requires-python {lock.requires_python}, but the target is Python {full}",
                         hint="pick a matching interpreter with --venv DIR --venv-python X.Y")
    try:
        if lock.environments and not any(Marker(str(m)).evaluate(markers) for m in lock.environments):
            envs = "; ".join(str(m) for m in lock.environments)
            raise InputError(f"{path}: the target (Python {full}, {markers.get('sys_platform')} "
                             f"{markers.get('platform_machine')}) is none of the lock's environments: "
                             f"{envs}")
        selected = list(lock.select(environment=markers, tags=env_tags(env, target)))  # type: ignore[arg-type]
    except (PylockSelectError, ValueError) as exc:  # ValueError: a marker such as ~= "foo"
        raise InputError(f"{path}: {str(exc)[:300]}") from None
    wanted = [_locked(path, pkg, dist) for pkg, dist in selected]
    release, framework = _recorded_stack(path, lock, manifest, release_hint)
    tool = (lock.tool or {}).get("neuronctl")
    recorded = tool.get("indexes") if isinstance(tool, dict) else None
    indexes = {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
    return InstallSource(tuple(wanted), release, framework, f"lock {path}", path, indexes)


def _locked(path: Path, pkg: Any, dist: Any) -> LockedFile:
    """One selected wheel, its name and sha256 checked again here (this face never trusts that
    the lock came through load_pylock)."""
    where = f"{path}: {pkg.name} {pkg.version or ''}".rstrip()
    if not isinstance(dist, PackageWheel):
        raise InputError(f"{where}: neuronctl installs wheels only; the lock selects "
                         f"{type(dist).__name__}")
    if pkg.version is None:
        raise InputError(f"{where}: no version")
    if dist.url:
        url = dist.url
    elif dist.path:
        url = (path.parent / str(dist.path)).resolve().as_uri()
    else:
        raise InputError(f"{where}: wheel has neither url nor path")
    sha = (dist.hashes or {}).get("sha256")
    if not sha:
        raise InputError(f"{where}: wheel {dist.name} has no sha256; neuronctl verifies every file")
    filename = safe_filename(dist.filename, where)
    return LockedFile(str(pkg.name), str(pkg.version), filename, url, checked_hash("sha256", sha, where),
                  dist.size, pkg.index)


def _recorded_stack(path: Path, lock: Pylock, manifest: Manifest, release_hint: str | None
                    ) -> tuple[str | None, Framework | None]:
    """The release and framework the lock's [tool.neuronctl] records (else the hint), each
    checked: a release this manifest does not know is bad input naming the lock."""
    tool = (lock.tool or {}).get("neuronctl")
    tool = tool if isinstance(tool, dict) else {}
    release, torch = tool.get("release"), tool.get("torch")
    for key, value in (("release", release), ("torch", torch)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{path}: [tool.neuronctl] {key} must be a string")
    release = release or release_hint
    if not release:
        return None, None
    try:
        return release, plan_stack(manifest.get(release), torch, latest=False).framework
    except InputError as exc:
        raise InputError(f"{path}: [tool.neuronctl] release {release[:40]!r}: {exc.message}",
                         hint=exc.hint) from None


def lock_pythons(lock: Pylock) -> tuple[str, ...]:
    """Pythons a lock is for, lowest first: its recorded targets, else those its requires-python
    admits (so a new --venv gets an interpreter the lock can install into)."""
    tool = (lock.tool or {}).get("neuronctl") or {}
    targets = tool.get("targets") if isinstance(tool, dict) else None
    if isinstance(targets, list):
        found = [str(t.get("python")) for t in targets if isinstance(t, dict) and t.get("python")]
        if found:
            return tuple(dict.fromkeys(found))
    spec = lock.requires_python
    if spec is None:
        return ()
    return tuple(v for v in (f"3.{m}" for m in range(10, 16)) if spec.contains(f"{v}.0"))


def stack_pythons(manifest: Manifest, release: str | None, torch: str | None) -> tuple[str, ...]:
    """Pythons the release's PyTorch line supports, as the manifest lists them."""
    return tuple(plan_stack(pick_release(manifest, release), torch, False).framework.python)


def check_python(supported: Sequence[str], version: str) -> None:
    minor = ".".join(version.split(".")[:2])
    if supported and minor not in supported:
        raise InputError(f"the target is Python {version}; this stack needs Python "
                         f"{', '.join(supported)}",
                         hint=f"install into a new venv: --venv DIR --venv-python {supported[0]}")


class Stack(Struct, frozen=True):
    """Step 4 of an install: what it is for, known before anything is fetched. A lock's
    selection for the target (read from the lock, no network), or a fresh resolution's request
    (the release and PyTorch line, planned from the manifest) for the target's platform."""

    platform: PlatformTarget
    locked: InstallSource | None = None
    """A lock's selection (None: a fresh resolution)."""
    wanted: StackRequest | None = None
    """A fresh resolution's request (None: a lock)."""

    @property
    def release(self) -> str | None:
        if self.locked is not None:
            return self.locked.release
        return self.wanted.plan.release.version if self.wanted is not None else None

    @property
    def framework(self) -> Framework | None:
        """The torch-neuronx line the preflight fits to the chip (None: a fallback lock, no
        Neuron package, so no chip to fit)."""
        if self.locked is not None:
            return self.locked.framework
        return self.wanted.plan.framework if self.wanted is not None else None


def stack_for(request: InstallRequest, env: PythonEnv, picked: PickedLock | None,
              manifest: Manifest) -> Stack:
    """The stack for the target `env`: `picked`'s lock (--lock, or its fallback beside it),
    else a fresh resolution's request, whose Python the target must be one of."""
    target = target_for_interpreter(env.python, env.libc, env.machine)
    if picked is None:
        check_python(_preferred(request, manifest), env.python)
        wanted = request.stack(target.python_minor, target.platform)
        return Stack(target, wanted=wanted)
    found = from_lock(picked.choice.path, picked.lock, env, target, manifest, request.release)
    if picked.is_fallback:
        found = replace(found, framework=None)  # no torch-neuronx: no chip to fit
    return Stack(target, locked=found)


def source(request: InstallRequest, stack: Stack, reporter: Reporter) -> Sourced:
    """Step 6, the source: the lock's selection (from the wheelhouse with --find-links), or the
    fresh resolution (every index checked at once first, then resolved: the network)."""
    found = stack.locked
    if found is None:
        from neuronctl.ops.install.resolution import resolve  # only a resolution loads HTTP

        assert stack.wanted is not None  # a Stack is a lock's or a resolution's
        return resolve(request, stack.platform, stack.wanted)
    if request.find_links is not None:
        from neuronctl.ops.install.find_links import from_wheelhouse  # --find-links runs only

        found = from_wheelhouse(found, request.find_links, offline=request.offline,
                                reporter=reporter)
    routing = request.routing(found.indexes)
    for file in found.wanted:  # a lock's file URLs, held to its indexes' rule
        routing.check_lock_url(file.url, f"{found.describe}: {file.name}")
    return Sourced(found, routing)


def pythons(request: InstallRequest, picked: PickedLock | None, manifest: Manifest
            ) -> tuple[str, ...]:
    """The Pythons the stack supports, lowest first (a new venv's base, the preflight)."""
    return lock_pythons(picked.lock) if picked is not None else _preferred(request, manifest)


def _preferred(request: InstallRequest, manifest: Manifest) -> tuple[str, ...]:
    return stack_pythons(manifest, request.release, request.torch)
