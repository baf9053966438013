"""`init` as an operation: write or update [tool.neuronctl] in a pyproject.toml with tomlkit,
leaving every byte outside that table as it was (comments, key order, formatting), and inside it
every key init does not set.

A pyproject.toml that is a symbolic link is edited at its target only where that target is a
regular file inside the project's folder (a monorepo's shared file); a link out of the project
(a dotfiles repo, someone's home, /etc), a dangling link and a link loop are refused (exit 2):
`init` never writes a file the user did not name in the project they ran it in.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.atomic import write_text_atomic
from neuronctl.config import validate
from neuronctl.errors import InputError
from neuronctl.ops.reporter import NullReporter, Reporter, StepDone, Written
from neuronctl.release.model import Manifest
from neuronctl.resolvers.stack_plan import pick_release, plan_stack
from neuronctl.resolvers.targets import parse_platform, parse_python
from neuronctl.safety import open_regular
from neuronctl.tomlfile import MAX_TOML_BYTES


class InitRequest(Struct, frozen=True):
    """What `neuronctl init` was asked: the pyproject.toml and the stack to record."""

    pyproject: Path
    manifest: Manifest
    release: str | None = None
    torch: str | None = None
    pythons: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()


class InitOutcome(Struct, frozen=True):
    """What `neuronctl init` did to the pyproject.toml: created, the keys it set."""

    path: Path
    """The file written (a link's target, where pyproject.toml is a link)."""
    created: bool
    """The file did not exist before."""
    changed: tuple[str, ...]
    """Each key set, as `key = value` (empty: the table already said all this)."""
    link: Path | None = None
    """The pyproject.toml named, where it is a link to `path`."""

    @property
    def written(self) -> bool:
        return self.created or bool(self.changed)

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "created": self.created, "written": self.written,
                "changed": list(self.changed), "link": None if self.link is None else str(self.link)}


def init_project(request: InitRequest, reporter: Reporter | None = None) -> InitOutcome:
    """Bring the pyproject's [tool.neuronctl] to the request; bad input changes nothing."""
    reporter = reporter or NullReporter()
    link = request.pyproject if request.pyproject.is_symlink() else None
    path = _destination(request.pyproject)
    doc = _load(path)
    before = doc.as_string()
    table = _table(doc, path)
    current = validate(dict(table.unwrap()), f"{path}: [tool.neuronctl]")
    # Each change as TOML spells it (a string or a list of strings is the same in JSON), never
    # a Python repr.
    changed = tuple(f"{key} = {json.dumps(value)}" for key, value in _updates(request, current).items()
                    if _set(table, key, value))
    after = doc.as_string()
    existed = os.path.lexists(path)
    if after == before and existed:
        reporter.emit(StepDone(f"{path}: [tool.neuronctl] already up to date", "init"))
        return InitOutcome(path, created=False, changed=(), link=link)
    write_text_atomic(path, after)  # a link's target, checked: the rename leaves the link a link
    outcome = InitOutcome(path, created=not existed, changed=changed, link=link)
    reporter.emit(Written(f"{'created' if outcome.created else 'updated'} {path}", "init",
                         path=str(path), changed=tuple(changed)))
    return outcome


def _updates(request: InitRequest, current: dict[str, Any]) -> dict[str, Any]:
    """The keys to set: what was asked for, else what is kept, else the release's defaults."""
    release = pick_release(request.manifest, request.release or current.get("release"))
    torch = request.torch
    if torch is None and current.get("torch") and release.framework_for_torch(current["torch"]):
        torch = current["torch"]  # keep the configured line when the release still offers it
    framework = plan_stack(release, torch, latest=False).framework
    kept = current.get("python") or []
    pythons = [parse_python(p) for p in request.pythons] \
        or ([kept] if isinstance(kept, str) else list(kept)) or list(framework.python[:1])
    for python in pythons:
        minor = ".".join(python.split(".")[:2])
        if framework.python and minor not in framework.python:
            said = "--python-version" if request.pythons else f"config python ({request.pyproject})"
            raise InputError(f"{said} {python}: Neuron {release.version} with torch "
                             f"{framework.torch} supports Python {', '.join(framework.python)}")
    platforms = [parse_platform(p) for p in request.platforms]
    updates: dict[str, Any] = {}
    if request.release or "release" not in current:
        updates["release"] = release.version
    if torch is None or torch != current.get("torch"):
        updates["torch"] = torch or _line(framework.torch)
    if request.pythons or "python" not in current:
        updates["python"] = pythons
    if platforms:
        updates["platform"] = platforms
    return updates


def _set(table: Any, key: str, value: Any) -> bool:
    if table.get(key) is not None and table[key].unwrap() == value:
        return False
    table[key] = value
    return True


def _destination(pyproject: Path) -> Path:
    """The file init writes for `pyproject`: itself, or where it is a link, the link's target,
    if that is a regular file inside the project's folder; InputError otherwise."""
    if not pyproject.is_symlink():
        return pyproject
    try:
        target = Path(os.path.realpath(pyproject, strict=True))
    except FileNotFoundError:
        raise InputError(f"{pyproject}: a symbolic link to {os.readlink(pyproject)!r}, which does not "
                         "exist; refusing to create a file through it") from None
    except OSError as exc:
        reason = "a loop of symbolic links" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise InputError(f"{pyproject}: {reason}; refusing to write through it") from None
    project = Path(os.path.realpath(pyproject.parent))
    if not target.is_relative_to(project):
        raise InputError(f"{pyproject}: a symbolic link to {target}, outside the project {project}; "
                         "refusing to write through it",
                         hint="run init where that file lives, or replace the link with a file")
    if not target.is_file():
        raise InputError(f"{pyproject}: a symbolic link to {target}, which is not a regular file")
    return target


def _load(path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import ParseError

    if not os.path.lexists(path):
        return tomlkit.document()
    try:
        with open_regular(path) as fh:  # a FIFO named pyproject.toml must not hang init
            raw = fh.read(MAX_TOML_BYTES + 1)
        if len(raw) > MAX_TOML_BYTES:
            raise InputError(f"{path}: larger than {MAX_TOML_BYTES >> 20} MiB; not a pyproject.toml")
        return tomlkit.parse(raw.decode("utf-8"))
    except ParseError as exc:
        raise InputError(f"{path}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None


def _table(doc: Any, path: Path) -> Any:
    import tomlkit

    tool = doc.get("tool")
    if tool is None:
        tool = tomlkit.table(is_super_table=True)
        doc.append("tool", tool)
    elif not isinstance(tool, dict):
        raise InputError(f"{path}: 'tool' is not a table")
    table = tool.get("neuronctl")
    if table is None:
        table = tomlkit.table()
        tool.append("neuronctl", table)
    elif not isinstance(table, dict):
        raise InputError(f"{path}: [tool.neuronctl] is not a table")
    return table


def _line(torch: str) -> str:
    return ".".join(torch.split(".")[:2])


__all__ = ["InitOutcome", "InitRequest", "init_project"]

