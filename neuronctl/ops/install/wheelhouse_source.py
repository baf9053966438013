"""`install --lock LOCK --find-links DIR`: the lock's files taken from a wheelhouse (made by
`neuronctl download`), each checked against the lock's sha256 and size before the engine is given
it.

A file in DIR that does not match the lock is an error naming it, always (a tampered or torn
wheelhouse is never papered over). A file missing from DIR is an error under --offline; without
--offline it comes from the lock's own URL, verified as any download is, and a note names it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from neuronctl.backend.plan import Wanted
from neuronctl.errors import InputError
from neuronctl.ops.install.source import InstallSource
from neuronctl.ops.reporter import Event, Reporter
from neuronctl.safety import contained, safe_filename

MISSING_SHOWN = 5


def _local(folder: Path, wanted: Wanted) -> Path | None:
    """The verified copy of `wanted` in `folder`; None when it is not there; InputError naming it
    when it is there but is not the locked file."""
    from neuronctl.resolvers.download import sha256_file

    name = safe_filename(wanted.filename, f"--find-links {folder}")
    path = contained(folder, name)
    if not path.exists():
        return None
    where = f"--find-links {folder}: {name}"
    if not path.is_file():
        raise InputError(f"{where} is not a file")
    try:
        size = path.stat().st_size
        if wanted.size is not None and size != wanted.size:
            raise InputError(f"{where}: {size:,} bytes, the lock says {wanted.size:,}; refusing it",
                             hint="fetch it again with neuronctl download")
        got = sha256_file(path)
    except OSError as exc:
        raise InputError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    if wanted.sha256 is None or got != wanted.sha256:
        raise InputError(f"{where}: sha256 mismatch: the lock says {wanted.sha256}, the file is "
                         f"{got}; refusing it", hint="fetch it again with neuronctl download")
    return path


def from_wheelhouse(source: InstallSource, folder: Path, *, offline: bool,
                    reporter: Reporter) -> InstallSource:
    """`source` with every file found (and verified) in `folder` given as a file:// URL."""
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
        reporter.emit(Event("note", f"{w.filename} is not in {folder}; it comes from its URL"))
    return replace(source, wanted=tuple(wanted),
                   describe=f"{source.describe} from the wheelhouse {folder}")
