"""All filesystem reads of the probes go through one root, so captured trees can stand in.

A captured tree is untrusted: its links may point out of it (to this machine's ~/.netrc), its
files may be FIFOs or /dev/zero. Every read of a file under a root other than / goes through
`SysRoot.read_bytes` (or `read_text`, `read`): the path, links followed, must stay inside the
root, and the file opened must be a regular file inside it (checked again on the open
descriptor), read up to a limit."""

from __future__ import annotations

import os
import stat
from functools import cached_property
from pathlib import Path

from msgspec import Struct

from neuronctl.errors import InputError

DEFAULT_READ_LIMIT = 1024 * 1024
"""Bytes read from one sysroot file unless the caller asks for more: a captured tree may link a
file to /dev/zero or hold a FIFO where a sysfs value should be."""
ENV_VAR = "NEURONCTL_SYSROOT"


def _opened_inside(fd: int, within: Path) -> bool:
    """Whether the file behind `fd` lies under `within` (Linux names it in /proc/self/fd), so a
    link swapped in after the path was checked still cannot take the read out of the root."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return True  # no /proc here: the resolved path was checked before the open
    return Path(real).is_relative_to(within)


def read_regular_bytes(path: Path, limit: int = DEFAULT_READ_LIMIT, *, tail: bool = False,
                       within: Path | None = None) -> bytes | None:
    """At most `limit` bytes of `path` (its last ones with `tail`), or None when it is absent,
    unreadable or not a regular file. Opened non-blocking so a FIFO cannot stall the open;
    devices, FIFOs and sockets are refused after fstat, before any read. With `within` (a
    resolved directory), a file opened outside it is refused too."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (within is not None
                                              and not _opened_inside(fd, within)):
            return None
        if tail and info.st_size > limit:
            os.lseek(fd, info.st_size - limit, os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_regular_text(path: Path, limit: int = DEFAULT_READ_LIMIT) -> str | None:
    data = read_regular_bytes(path, limit)
    return None if data is None else data.decode("utf-8", errors="replace")


def check_root(root: Path, where: str) -> None:
    """InputError unless `root` can be a system root: a directory holding proc/ or sys/. A
    missing mount (a DaemonSet without /host) must not read as a healthy machine with nothing
    on it."""
    shown = "".join(c if c.isprintable() else "?" for c in str(root))[:300]
    try:
        is_dir = root.is_dir()
        system = is_dir and ((root / "proc").is_dir() or (root / "sys").is_dir())
    except (OSError, ValueError):
        is_dir = system = False
    if not is_dir:
        raise InputError(f"{where} {shown}: no such directory")
    if not system:
        raise InputError(f"{where} {shown}: neither proc/ nor sys/ in it: not a system root "
                         "(a captured tree or a host mount holds one of them)")


class SysRoot(Struct, frozen=True, dict=True):
    """The root every probe reads the filesystem through: / or a captured tree."""

    root: Path = Path("/")

    @classmethod
    def from_env(cls, explicit: str | Path | None = None,
                 environ: dict[str, str] | None = None) -> SysRoot:
        """The root `--sysroot` (`explicit`) or NEURONCTL_SYSROOT names, else /; every way of
        naming one is validated here (InputError: exit 2), so no command reads a wrong root as
        an empty machine."""
        from neuronctl.settings import Flag, flag_or_environment

        # the settings' one rule for a setting no config sets: --sysroot > NEURONCTL_SYSROOT > /
        flag = Flag(str(explicit), "--sysroot") if explicit is not None and str(explicit) else None
        found = flag_or_environment("sysroot", flag, os.environ if environ is None else environ)
        if found is None:
            return cls(Path("/"))
        value, where = found.value, found.source.name
        root = cls(Path(value))
        if not root.is_host:
            check_root(root.root, where)
        return root

    @property
    def is_host(self) -> bool:
        return self.root == Path("/")

    @cached_property
    def _real_root(self) -> Path | None:
        try:
            return self.root.resolve(strict=True)
        except (OSError, RuntimeError, ValueError):
            return None

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def _contained(self, absolute: str | Path) -> Path | None:
        """The real path of `absolute` (a path on the system, or one under the root) when it
        exists inside the root; None when it is absent or leaves it."""
        path = absolute if isinstance(absolute, Path) else self.path(absolute)
        if self.is_host:
            return path
        real_root = self._real_root
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError, ValueError):  # absent, a loop of links, a NUL
            return None
        return real if real_root is not None and real.is_relative_to(real_root) else None

    def read_bytes(self, absolute: str | Path, limit: int = DEFAULT_READ_LIMIT, *,
                   tail: bool = False) -> bytes | None:
        """At most `limit` bytes (the last ones with `tail`) of a regular file inside the root,
        or None when it is absent, unreadable, not a regular file or a link out of the root."""
        real = self._contained(absolute)
        if real is None:
            return None
        return read_regular_bytes(real, limit, tail=tail,
                                  within=None if self.is_host else self._real_root)

    def read_text(self, absolute: str | Path, limit: int = DEFAULT_READ_LIMIT) -> str | None:
        """`read_bytes` as text (undecodable bytes replaced), not stripped."""
        data = self.read_bytes(absolute, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read(self, absolute: str | Path, limit: int = DEFAULT_READ_LIMIT) -> str | None:
        """The stripped text of at most `limit` bytes of a file, or None when it is absent,
        unreadable or not a regular file (a device, a FIFO: treated as absent)."""
        text = self.read_text(absolute, limit)
        return None if text is None else text.strip()

    def exists(self, absolute: str) -> bool:
        """Whether `absolute` exists inside the root (a link out of it does not count: a
        captured /.dockerenv linked to this machine's says nothing about that system)."""
        return self.path(absolute).exists() if self.is_host else self._contained(absolute) is not None

    def inside(self, path: Path) -> bool:
        """Whether `path`, links followed, stays inside the root (always, for this host)."""
        if self.is_host:
            return True
        real_root = self._real_root
        try:
            return real_root is not None and path.resolve().is_relative_to(real_root)
        except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL
            return False

    def glob(self, absolute_dir: str, pattern: str) -> list[Path]:
        """Entries matching `pattern` in one directory under the root; a pattern or directory
        that would leave the root (`..`, a link out of it) matches nothing."""
        base = self.path(absolute_dir)
        if "/" in pattern or pattern in (".", "..") or ".." in Path(absolute_dir).parts \
                or not self.inside(base):
            return []
        try:
            return sorted(base.glob(pattern))
        except (OSError, ValueError):
            return []

    def display(self, path: Path) -> str:
        """Show a path as it is on the inspected system, not inside the captured tree."""
        try:
            return "/" + str(path.relative_to(self.root)).lstrip("/")
        except ValueError:
            return str(path)
