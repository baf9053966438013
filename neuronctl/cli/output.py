"""The one place that writes results: versioned JSON for machines, rich text for people."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import click

from neuronctl.errors import FaultError

JSON_SCHEMA = 1


def to_json_text(payload: dict[str, Any]) -> str:
    return json.dumps({"schema": JSON_SCHEMA, **payload}, indent=2, sort_keys=False) + "\n"


def emit_json(payload: dict[str, Any]) -> None:
    click.echo(to_json_text(payload), nl=False)


def write_atomic(path: Path, text: str) -> None:
    """Write a file whole or not at all: a temp file beside it, fsync, then rename over."""
    path = path.expanduser()
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise FaultError(f"{path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
