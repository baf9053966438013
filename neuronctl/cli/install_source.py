"""What `neuronctl install` puts in place: the wheels a pylock.toml selects for the target (PEP 751
selection by markers and tags, ambiguity an error), or a fresh resolution's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronctl.backend.plan import Wanted
from neuronctl.errors import InputError
from neuronctl.manifest import Framework, Manifest
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.resolvers.targets import Target

if TYPE_CHECKING:
    from packaging.pylock import Pylock


@dataclass(frozen=True)
class InstallSource:
    wanted: tuple[Wanted, ...]
    release: str | None
    framework: Framework | None
    describe: str
    lock: Path | None = None
    indexes: Mapping[str, str] = field(default_factory=dict)
    """Index name -> URL as the lock recorded them."""


def env_tags(env: PythonEnv, target: Target) -> list[Any]:
    from packaging.tags import Tag

    tags = []
    for text in env.tags:
        parts = text.split("-")
        if len(parts) == 3:
            tags.append(Tag(*parts))
    return tags or list(target.tags)


def from_lock(path: Path, lock: Pylock, env: PythonEnv, target: Target, manifest: Manifest,
              release_hint: str | None) -> InstallSource:
    from packaging.markers import Marker
    from packaging.pylock import PackageWheel, PylockSelectError
    from packaging.version import Version

    from neuronctl.resolvers.stack_plan import plan_stack

    markers = dict(env.markers) or target.markers
    full = markers.get("python_full_version", env.python)
    if lock.requires_python is not None and not lock.requires_python.contains(Version(full)):
        raise InputError(f"{path}: requires-python {lock.requires_python}, but the target is Python {full}",
                         hint="pick a matching interpreter with --venv DIR --venv-python X.Y")
    if lock.environments and not any(Marker(str(m)).evaluate(markers) for m in lock.environments):
        envs = "; ".join(str(m) for m in lock.environments)
        raise InputError(f"{path}: the target (Python {full}, {markers.get('sys_platform')} "
                         f"{markers.get('platform_machine')}) is none of the lock's environments: {envs}")
    try:
        selected = list(lock.select(environment=markers, tags=env_tags(env, target)))  # type: ignore[arg-type]
    except PylockSelectError as exc:
        raise InputError(f"{path}: {exc}") from None
    wanted = []
    for pkg, dist in selected:
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
        filename = dist.name or url.rsplit("/", 1)[-1]
        wanted.append(Wanted(str(pkg.name), str(pkg.version), filename, url, sha, dist.size,
                             pkg.index))
    tool = (lock.tool or {}).get("neuronctl") or {}
    release = tool.get("release") if isinstance(tool, dict) else None
    release = release or release_hint
    framework = None
    if release:
        torch = tool.get("torch") if isinstance(tool, dict) else None
        framework = plan_stack(manifest.get(str(release)), torch, latest=False).framework
    recorded = tool.get("indexes") if isinstance(tool, dict) else None
    indexes = {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
    return InstallSource(tuple(wanted), str(release) if release else None, framework,
                         f"lock {path}", path, indexes)


def wanted_from_resolution(packages: Sequence[Any], target: Target, hash_of: Any) -> tuple[Wanted, ...]:
    out = []
    for pkg in packages:
        dist = pkg.best[target]
        out.append(Wanted(str(pkg.name), str(pkg.version), dist.filename, dist.url, hash_of(dist),
                          dist.size, pkg.index_url))
    return tuple(out)
