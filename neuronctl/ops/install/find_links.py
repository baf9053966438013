"""`install --lock LOCK --find-links DIR` (part of the source step): the lock's files taken from
a wheelhouse (made by `neuronctl download`) and handed to the engine as file:// URLs with the
lock's sha256.

Each local file is checked by the engine against the lock's sha256 as it reads it, the same
check as a download (both engines run with --require-hashes and check every file before they
change the environment), so its bytes are read once. Here only what costs nothing is checked
first: a safe name inside DIR, a regular readable file, the lock's size. When the engine then
fails, the wheelhouse files it was given are hashed (only then), and one that does not match the
lock is the error, naming it: a tampered or torn wheelhouse is never papered over. A file missing
from DIR is an error under --offline; without --offline it comes from the lock's own URL,
verified as any download is, and a note names it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from neuronctl.errors import InputError
from neuronctl.locked_file import LockedFile
from neuronctl.ops.reporter import Note, Reporter
from neuronctl.safety import contained, safe_filename

if TYPE_CHECKING:  # the source step hands its source here
    from neuronctl.ops.install.source_types import InstallSource

MISSING_SHOWN = 5
REFETCH = "fetch it again with neuronctl download"


def _where(folder: Path, name: str) -> str:
    return f"--find-links {folder}: {name}"


def local_label(folder: Path | None, path: Path) -> str:
    """How a local file is named in an error: `--find-links DIR: NAME` for one of the
    wheelhouse's, else its path."""
    if folder is not None and path.parent == folder.resolve():
        return _where(folder, path.name)
    return str(path)


def _path(folder: Path, filename: str) -> Path:
    return contained(folder, safe_filename(filename, f"--find-links {folder}"))


def _local(folder: Path, wanted: LockedFile) -> Path | None:
    """The copy of `wanted` in `folder` (its bytes are the engine's to check); None when it is
    not there; InputError naming it when it cannot be the locked file: not a regular readable
    file, or not the lock's size."""
    path = _path(folder, wanted.filename)
    if not path.exists():
        return None
    where = _where(folder, path.name)
    if not path.is_file():
        raise InputError(f"{where} is not a file")
    try:
        size = path.stat().st_size
        if wanted.size is not None and size != wanted.size:
            raise InputError(f"{where}: {size:,} bytes, the lock says {wanted.size:,}; refusing it",
                             hint=REFETCH)
        os.close(os.open(path, os.O_RDONLY))
    except OSError as exc:
        raise InputError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    return path


def from_wheelhouse(source: InstallSource, folder: Path, *, offline: bool,
                    reporter: Reporter) -> InstallSource:
    """`source` with every file found in `folder` given as a file:// URL."""
    if not folder.is_dir():
        raise InputError(f"--find-links {folder}: not a directory")
    wanted, missing = [], []
    for w in source.wanted:
        path = _local(folder, w)
        if path is None:
            missing.append(w)
            wanted.append(w)
        else:
            wanted.append(replace(w, url=path.as_uri()))
    if missing and offline:
        names = ", ".join(w.filename for w in missing[:MISSING_SHOWN])
        more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
        raise InputError(f"--find-links {folder}: {len(missing)} locked files missing: {names}{more}",
                         hint=f"fetch them with neuronctl download --lock {source.lock} -d {folder}")
    for w in missing:
        reporter.emit(Note(f"{w.filename} is not in {folder}; it comes from its URL"))
    return replace(source, wanted=tuple(wanted),
                   describe=f"{source.describe} from the wheelhouse {folder}")


class NotRegularError(OSError):
    """A wheelhouse path that is no longer a regular file (a FIFO would block its reader)."""


def _sha256_regular(path: Path) -> str:
    import hashlib  # only after the engine failed: OpenSSL is not loaded on the way in

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularError(path)
        digest = hashlib.sha256()
        while block := os.read(fd, 1 << 20):
            digest.update(block)
        return digest.hexdigest()
    finally:
        os.close(fd)


def mismatched(folder: Path, files: Sequence[LockedFile]) -> InputError | None:
    """After the engine failed: the first of `files` that came from the wheelhouse `folder` and
    is not the file the lock names (hashed now, only on this path), as the error naming it; None
    when each is the locked file (the engine failed for another reason)."""
    for file in files:
        try:
            path = _path(folder, file.filename)
        except InputError:
            continue  # not a name from the wheelhouse
        if file.url != path.as_uri():
            continue
        where = _where(folder, path.name)
        try:
            got = _sha256_regular(path)
        except NotRegularError:
            return InputError(f"{where} is not a file", hint=REFETCH)
        except OSError as exc:
            return InputError(f"{where}: cannot read it: {exc.strerror or exc}", hint=REFETCH)
        if got != file.sha256:
            return InputError(f"{where}: sha256 mismatch: the lock says {file.sha256}, the file is "
                              f"{got}; refusing it", hint=REFETCH)
    return None
