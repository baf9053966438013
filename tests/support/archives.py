"""What a `neuronctl bundle` archive holds, read back with tarfile."""

from __future__ import annotations

import tarfile
from pathlib import Path


def members(archive: Path) -> dict[str, str]:
    """Each member's path below the archive's top folder -> its text (every member a regular file)."""
    with tarfile.open(archive, "r:gz") as tar:
        out = {}
        for info in tar.getmembers():
            handle = tar.extractfile(info)
            assert handle is not None and info.isfile()
            out[info.name.split("/", 1)[1]] = handle.read().decode("utf-8")
        return out
