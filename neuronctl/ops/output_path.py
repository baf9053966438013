"""Output paths checked before any long work starts (issue 25: `smoke -o /nonexistent/dir/s.json`
ran the whole model, then failed on the path). One validator for every -o/--output/-d, asking
what neuronctl.atomic's writer will need: a temp file made in the parent directory, then renamed
over the path (a symlink at the path is replaced by the rename, never followed)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from neuronctl.errors import InputError
from neuronctl.safety import expand_user


def _parent(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def _writable_dir(directory: Path, shown: str) -> None:
    if not directory.exists():
        raise InputError(f"{shown}: directory {directory} does not exist")
    if not directory.is_dir():
        raise InputError(f"{shown}: {directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{shown}: directory {directory} is not writable")


def check_output_file(path: Path | str | None, where: str) -> Path | None:
    """A file the command will write whole (neuronctl.atomic): its directory exists and is
    writable, and the path is not a directory or a device, FIFO or socket (the rename would
    replace /dev/null itself). None passes through. Exit 2 in one line naming `where`."""
    if path is None:
        return None
    given = Path(path)
    target = expand_user(given, where)
    shown = f"{where} {given}"
    try:
        info = target.lstat()
    except (FileNotFoundError, NotADirectoryError):  # the parent's checks say which
        info = None
    except OSError as exc:
        raise InputError(f"{shown}: cannot look at it: {exc.strerror or exc}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise InputError(f"{shown}: that is a directory; name a file in it")
    if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise InputError(f"{shown}: not a regular file (a device, FIFO or socket); name a file")
    _writable_dir(_parent(target), shown)
    return given


def check_output_dir(path: Path | None, where: str) -> Path | None:
    """A directory the command fills (made if absent): an existing one must be a directory and
    writable; an absent one needs an existing, writable nearest ancestor (mkdir -p)."""
    if path is None:
        return None
    target = expand_user(path, where)
    shown = f"{where} {path}"
    if target.exists():
        _writable_dir(target, shown)
        return path
    if target.is_symlink():
        raise InputError(f"{shown}: a dangling symlink (to {os.readlink(target)})")
    ancestor = _parent(target.absolute())
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    _writable_dir(ancestor, shown)
    return path
