"""One file a lock (or a fresh resolution) names: the wheel, the URL it is fetched from and the
sha256 it must have. The plan diffs them, the engine installs them, a wheelhouse holds them."""

from __future__ import annotations

import re

from msgspec import Struct

from neuronctl.errors import InputError
from neuronctl.safety import checked_hash, checked_url, safe_filename

NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?")
"""A package name as it may stand on an engine's argv or in its input: never an option."""
_VERSION = re.compile(r"[A-Za-z0-9.+!_-]{1,100}")


class LockedFile(Struct, frozen=True):
    """One wheel: its package, version, file name, where it is fetched, and its sha256."""

    name: str
    version: str
    filename: str
    url: str
    """Where it is fetched (an http(s) or file:// URL, without credentials)."""
    sha256: str
    size: int | None = None
    """Its size where the lock or the index says (bounds the engine's time and a download)."""
    index: str | None = None
    """The name of the index it comes from, where the lock records one."""

    def checked(self) -> LockedFile:
        """This file, each value checked again for an engine's input, whatever checked it before:
        none may start a line or an option there (a URL's "\\n-r ~/.netrc", a name's
        " --index-url ..."). InputError naming the file otherwise."""
        where = f"{str(self.name)[:80]!r} {str(self.version)[:40]}"
        if not isinstance(self.name, str) or not NAME_RE.fullmatch(self.name):
            raise InputError(f"{where}: not a valid package name for the engine")
        if not isinstance(self.version, str) or not _VERSION.fullmatch(self.version):
            raise InputError(f"{where}: not a valid version for the engine")
        safe_filename(self.filename, where)
        checked_url(self.url, where)
        checked_hash("sha256", self.sha256, where)
        return self

    def requirement(self, url: str) -> str:
        """Its requirements-file line, fetched from `url` (this file's URL as the engine or a
        person is shown it)."""
        return f"{self.name} @ {url} --hash=sha256:{self.sha256}"
