"""Local files handed to pip as private, verified copies.

pip checks a local file's sha256 and then opens it again to install it: a file replaced in the
wheelhouse between the two would be installed unchecked. So each local (file:) file pip is given
is first copied into the engine's private folder (a 0700 directory of neuronctl's own, the file
0600), hashed while it is copied, in one read of the original; a copy that is not the locked file
is refused before the engine runs, and pip installs the copy, which nobody else can change. uv
hashes a local wheel as it unpacks it, from one open file, so it is given the file itself.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from msgspec.structs import replace

from neuronctl.errors import FaultError, InputError
from neuronctl.locked_file import LockedFile
from neuronctl.routing import file_url_path

CHUNK = 1 << 20
MAX_UNDECLARED = 4 << 30
"""A local file whose size the lock does not give may be at most this big (as a download)."""
REFETCH = "fetch it again with neuronctl download"


def _copy(src: int, dest: Path, limit: int, where: str) -> tuple[str, int]:
    """Copy the open file `src` to the new file `dest`, hashing it; (sha256, size)."""
    import hashlib

    digest, total = hashlib.sha256(), 0
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        while block := os.read(src, CHUNK):
            total += len(block)
            if total > limit:
                raise InputError(f"{where}: more than the {limit:,} bytes the lock allows; refusing it",
                                 hint=REFETCH)
            digest.update(block)
            out.write(block)
    return digest.hexdigest(), total


def private_copy(file: LockedFile, folder: Path, label: Callable[[Path], str] = str) -> LockedFile:
    """`file` as a verified copy in `folder` (which must be private and empty) when its URL is a
    local file; unchanged otherwise. InputError naming the file (by `label`) when it is not the
    locked one."""
    path = file_url_path(file.url)
    if path is None:
        return file
    where = label(path)
    try:  # O_NONBLOCK: a FIFO put in its place must not hang the open
        src = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{where}: cannot read it: {exc.strerror or exc}", hint=REFETCH) from None
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            raise InputError(f"{where}: not a regular file", hint=REFETCH)
        folder.mkdir(mode=0o700, parents=True)
        dest = folder / file.filename
        limit = file.size if file.size is not None else MAX_UNDECLARED
        got, size = _copy(src, dest, limit, where)
    except OSError as exc:
        raise FaultError(f"{where}: cannot copy it for the engine: {exc.strerror or exc}") from None
    finally:
        os.close(src)
    if got != file.sha256:
        raise InputError(f"{where}: sha256 mismatch: the lock says {file.sha256}, the file is {got}; "
                         "refusing it", hint=REFETCH)
    if file.size is not None and size != file.size:
        raise InputError(f"{where}: {size:,} bytes, the lock says {file.size:,}; refusing it",
                         hint=REFETCH)
    return replace(file, url=dest.as_uri())


def private_copies(files: Sequence[LockedFile], folder: Path,
                   label: Callable[[Path], str] = str) -> list[LockedFile]:
    """Every local file of `files` as a verified copy under `folder`, each in a folder of its own
    (two files may share a name)."""
    return [private_copy(f, folder / str(i), label) for i, f in enumerate(files)]
