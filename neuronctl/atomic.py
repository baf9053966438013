"""Replace a file whole or not at all: the one temp-file-then-rename writer every part uses."""

from __future__ import annotations

import os
from pathlib import Path


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write a temp file beside `path`, fsync it when `durable`, then rename it over `path`:
    readers see the old file or the new one, never half of either. An existing file keeps its
    permissions; a new one gets 0644. Nothing is left behind when writing fails."""
    import tempfile  # not at import: most runs write nothing, and it brings shutil and random

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write a text file (UTF-8) whole or not at all; a missing directory or a failed write is a
    FaultError saying the file was left as it was."""
    from neuronctl.errors import FaultError

    path = path.expanduser()
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise FaultError(f"{path}: directory {directory} does not exist")
    try:
        write_bytes_atomic(path, text.encode("utf-8"))  # the temp file is removed if this fails
    except OSError as exc:  # a full disk (ENOSPC, EFBIG), a read-only or vanished directory
        raise FaultError(f"cannot write {path}: {exc.strerror or exc}; it was left as it was",
                         hint="free some space there, or write somewhere else") from None
