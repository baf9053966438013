"""Writing a rewritten file back: only a regular file inside the scanned tree, reached through
no link, unchanged since it was read; atomically (neuronctl.atomic)."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

from neuronctl.atomic import write_bytes_atomic
from neuronctl.errors import FaultError


def diff_text(shown: str, old: str, new: str) -> str:
    # A file name is data: one line of printable characters in the headers (a newline in it
    # would start a line of its own, such as a GitHub `::error` workflow command).
    name = "".join(c if c.isprintable() else "?" for c in shown)
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))


def write_back(root: Path, path: Path, read: bytes, new: str) -> None:
    """Replace `path` (under `root`) with `new`, refusing a path that now leads through a link,
    out of the tree, or to a file changed since it was read."""
    real = Path(os.path.realpath(path))
    if real != path or not real.is_relative_to(root):
        raise FaultError(f"migrate --fix: {path}: reached through a link or outside "
                         f"{root}; left as it was")
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise FaultError(f"migrate --fix: {path}: no longer a regular file; left as it was")
    with open(path, "rb") as fh:
        if fh.read(len(read) + 1) != read:
            raise FaultError(f"migrate --fix: {path}: changed while it was scanned; left as it was")
    try:
        write_bytes_atomic(path, new.encode("utf-8"))
    except OSError as exc:
        raise FaultError(f"migrate --fix: cannot write {path}: {exc.strerror or exc}; "
                         "it was left as it was") from None
