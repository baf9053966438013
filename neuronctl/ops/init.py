"""`init` as an operation: write or update [tool.neuronctl] in a pyproject.toml with tomlkit,
leaving every byte outside that table as it was (comments, key order, formatting), and inside it
every key init does not set."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuronctl.atomic import write_text_atomic
from neuronctl.config import validate
from neuronctl.errors import InputError
from neuronctl.manifest import Manifest
from neuronctl.ops.reporter import Event, NullReporter, Reporter
from neuronctl.resolvers.stack_plan import pick_release, plan_stack
from neuronctl.resolvers.targets import parse_platform, parse_python


@dataclass(frozen=True)
class InitRequest:
    """What `neuronctl init` was asked: the pyproject.toml and the stack to record."""

    pyproject: Path
    manifest: Manifest
    release: str | None = None
    torch: str | None = None
    pythons: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True)
class InitOutcome:
    """What `neuronctl init` did to the pyproject.toml: created, the keys it set."""

    path: Path
    created: bool
    """The file did not exist before."""
    changed: tuple[str, ...]
    """Each key set, as `key = value` (empty: the table already said all this)."""

    @property
    def written(self) -> bool:
        return self.created or bool(self.changed)

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "created": self.created, "written": self.written,
                "changed": list(self.changed)}


def init_project(request: InitRequest, reporter: Reporter | None = None) -> InitOutcome:
    """Bring the pyproject's [tool.neuronctl] to the request; bad input changes nothing."""
    reporter = reporter or NullReporter()
    path = request.pyproject
    doc = _load(path)
    before = doc.as_string()
    table = _table(doc, path)
    current = validate(dict(table.unwrap()), f"{path}: [tool.neuronctl]")
    changed = tuple(f"{key} = {value!r}" for key, value in _updates(request, current).items()
                    if _set(table, key, value))
    after = doc.as_string()
    existed = path.exists()
    if after == before and existed:
        reporter.emit(Event("done", f"{path}: [tool.neuronctl] already up to date"))
        return InitOutcome(path, created=False, changed=())
    # A symlinked pyproject.toml (a shared one, a dotfiles repo) is edited where it lives; the
    # atomic rename would otherwise replace the link with a copy.
    write_text_atomic(path.resolve() if path.is_symlink() else path, after)
    outcome = InitOutcome(path, created=not existed, changed=changed)
    reporter.emit(Event("done", f"{'created' if outcome.created else 'updated'} {path}",
                        {"changed": list(changed)}))
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
            raise InputError(f"--python {python}: Neuron {release.version} with torch "
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


def _load(path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import ParseError

    if not path.exists():
        return tomlkit.document()
    try:
        return tomlkit.parse(path.read_text("utf-8"))
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

