"""Reading TOML files (config, pylock.toml) with errors that name the file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from neuronctl.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The parsed file; `what` names it in the error ("config file", "lock file")."""
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None


def loads_toml(text: str, what: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{what}: invalid TOML: {exc}") from None
