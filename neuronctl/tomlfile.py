"""Reading TOML files (config, pylock.toml) with errors that name the file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from neuronctl.errors import InputError
from neuronctl.safety import open_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

MAX_TOML_BYTES = 64 << 20
"""A lock for the largest stack is well under 1 MB; a bigger file is not one of ours."""
MAX_CONFIG_BYTES = 1 << 20
"""A config file (a pyproject.toml, the user's config): every command reads one, and TOML parses
at about a second a megabyte here, so a checkout's 64 MiB pyproject.toml would stall each command
for a minute; a real one is a few kilobytes."""


def read_toml(path: Path, what: str, limit: int = MAX_TOML_BYTES) -> dict[str, Any]:
    """The parsed file; `what` names it in the error ("config file", "lock file"). A FIFO, a
    device or /dev/stdin is refused unread (see safety.open_regular)."""
    return loads_toml(read_text(path, what, limit), str(path))


def read_text(path: Path, what: str, limit: int = MAX_TOML_BYTES) -> str:
    """A lock or config file's text, read as read_toml reads it: a regular file, at most `limit`
    bytes, UTF-8; each failure an error naming the file as `what`."""
    try:
        with open_regular(path) as fh:
            raw = fh.read(limit + 1)
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise InputError(f"{path}: {what} larger than {limit >> 20} MiB; refusing to read it")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None


def loads_toml(text: str, what: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{what}: invalid TOML: {exc}") from None
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise InputError(f"{what}: invalid TOML: nested too deeply") from None
