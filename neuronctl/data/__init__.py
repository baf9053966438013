"""The data neuronctl ships (releases.json, routing.json, prices.json), and their one reader."""

from __future__ import annotations

import pkgutil


def bundled_text(name: str) -> str:
    """A bundled data file's text, read through this package's loader: pkgutil does that for an
    unpacked wheel and a zip alike, where importlib.resources loads zipfile and tempfile to say
    the same (~5 ms of every run, which an install with nothing to do cannot spare)."""
    data = pkgutil.get_data(__name__, name)
    if data is None:  # a loader that cannot read files: never one neuronctl installs with
        raise FileNotFoundError(f"neuronctl's bundled {name} cannot be read")
    return data.decode("utf-8")
