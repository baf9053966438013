"""The one place that writes results: versioned JSON for machines, rich text for people."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from neuronctl.atomic import write_bytes_atomic
from neuronctl.errors import FaultError

JSON_SCHEMA = 1


def to_json_text(payload: dict[str, Any]) -> str:
    return json.dumps({"schema": JSON_SCHEMA, **payload}, indent=2, sort_keys=False) + "\n"


def emit_json(payload: dict[str, Any]) -> None:
    click.echo(to_json_text(payload), nl=False)


def write_atomic(path: Path, text: str) -> None:
    """Write a text file whole or not at all (temp file beside it, fsync, rename over)."""
    path = path.expanduser()
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise FaultError(f"{path}: directory {directory} does not exist")
    try:
        write_bytes_atomic(path, text.encode("utf-8"))  # the temp file is removed if this fails
    except OSError as exc:  # a full disk (ENOSPC, EFBIG), a read-only or vanished directory
        raise FaultError(f"cannot write {path}: {exc.strerror or exc}; it was left as it was",
                         hint="free some space there, or write somewhere else") from None
