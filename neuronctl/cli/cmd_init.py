"""`neuronctl init`: write or update [tool.neuronctl] in ./pyproject.toml with tomlkit, leaving
every byte outside that table as it was (comments, key order, formatting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.output import write_atomic
from neuronctl.config import validate
from neuronctl.errors import InputError
from neuronctl.resolvers.stack_plan import pick_release, plan_stack
from neuronctl.resolvers.targets import parse_python


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


@click.command("init")
@click.option("--release", help="Neuron release (default: kept, else the newest native one).")
@click.option("--torch", help="PyTorch line, e.g. 2.14 (default: kept, else the release's own).")
@click.option("--python", "pythons", multiple=True, metavar="X.Y", help="Target Python (repeatable).")
@click.option("--platform", "platforms", multiple=True, metavar="TAG", help="Target platform (repeatable).")
def init(release: str | None, torch: str | None, pythons: tuple[str, ...], platforms: tuple[str, ...]) -> int:
    """Write or update [tool.neuronctl] in ./pyproject.toml (created if absent)."""
    app = get_app()
    path = Path.cwd() / "pyproject.toml"
    doc = _load(path)
    before = doc.as_string()
    table = _table(doc, path)
    current = validate(dict(table.unwrap()), f"{path}: [tool.neuronctl]")
    manifest = app.manifest()
    rel = pick_release(manifest, release or current.get("release"))
    if torch is None and current.get("torch") and rel.framework_for_torch(current["torch"]):
        torch = current["torch"]  # keep the configured line when the release still offers it
    fw = plan_stack(rel, torch, latest=False).framework
    kept = current.get("python") or []
    py = [parse_python(p) for p in pythons] or ([kept] if isinstance(kept, str) else list(kept)) \
        or list(fw.python[:1])
    for p in py:
        minor = ".".join(p.split(".")[:2])
        if fw.python and minor not in fw.python:
            raise InputError(f"--python {p}: Neuron {rel.version} with torch {fw.torch} supports Python "
                             f"{', '.join(fw.python)}")
    updates: dict[str, Any] = {}
    if release or "release" not in current:
        updates["release"] = rel.version
    if torch is None or torch != current.get("torch"):
        updates["torch"] = torch or _short(fw.torch)
    if pythons or "python" not in current:
        updates["python"] = py
    changed = []
    for key, value in updates.items():
        if table.get(key) is None or table[key].unwrap() != value:
            table[key] = value
            changed.append(f"{key} = {value!r}")
    after = doc.as_string()
    if after == before and path.exists():
        click.echo(f"{path}: [tool.neuronctl] already up to date")
        return 0
    # A symlinked pyproject.toml (a shared one, a dotfiles repo) is edited where it lives; the
    # atomic rename would otherwise replace the link with a copy.
    write_atomic(path.resolve() if path.is_symlink() else path, after)
    if not app.quiet:
        click.echo(f"{'updated' if before else 'created'} {path}: [tool.neuronctl] "
                   + ", ".join(changed))
    return 0


def _short(torch: str) -> str:
    return ".".join(torch.split(".")[:2])
