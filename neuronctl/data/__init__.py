"""The data neuronctl ships (releases.json, routing.json, prices.json), and their one reader."""

from __future__ import annotations

import os


def bundled_text(name: str) -> str:
    """A bundled data file's text, read through this package's own loader, as pkgutil.get_data
    does (for an unpacked wheel and a zip alike) without importing pkgutil (~1 ms: its
    namedtuple and generic functions), and where importlib.resources loads zipfile and tempfile
    to say the same (~5 ms of every run, which an install with nothing to do cannot spare)."""
    loader = __spec__.loader if __spec__ is not None else None
    read = getattr(loader, "get_data", None)
    if read is None:  # a loader that cannot read files: never one neuronctl installs with
        raise FileNotFoundError(f"neuronctl's bundled {name} cannot be read")
    data: bytes = read(os.path.join(os.path.dirname(__file__), *name.split("/")))
    return data.decode("utf-8")
