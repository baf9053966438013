"""All filesystem reads of the probes go through one root, so captured trees can stand in."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

DEFAULT_READ_LIMIT = 1024 * 1024
"""Bytes read from one sysroot file unless the caller asks for more: a captured tree may link a
file to /dev/zero or hold a FIFO where a sysfs value should be."""


def read_regular_bytes(path: Path, limit: int = DEFAULT_READ_LIMIT, *, tail: bool = False
                       ) -> bytes | None:
    """At most `limit` bytes of `path` (its last ones with `tail`), or None when it is absent,
    unreadable or not a regular file. Opened non-blocking so a FIFO cannot stall the open;
    devices, FIFOs and sockets are refused after fstat, before any read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
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


@dataclass(frozen=True)
class SysRoot:
    """The root every probe reads the filesystem through: / or a captured tree."""

    root: Path = Path("/")

    @classmethod
    def from_env(cls, explicit: str | Path | None = None) -> SysRoot:
        value = explicit or os.environ.get("NEURONCTL_SYSROOT") or "/"
        return cls(Path(value))

    @property
    def is_host(self) -> bool:
        return self.root == Path("/")

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def read(self, absolute: str | Path, limit: int = DEFAULT_READ_LIMIT) -> str | None:
        """The stripped text of at most `limit` bytes of a file, or None when it is absent,
        unreadable or not a regular file (a device, a FIFO: treated as absent)."""
        path = absolute if isinstance(absolute, Path) else self.path(absolute)
        if not self.inside(path):
            return None  # a link in a captured tree pointing out of it: not that system's file
        text = read_regular_text(path, limit)
        return None if text is None else text.strip()

    def exists(self, absolute: str) -> bool:
        return self.path(absolute).exists()

    def inside(self, path: Path) -> bool:
        """Whether `path`, links followed, stays inside the root (always, for this host)."""
        if self.is_host:
            return True
        try:
            return path.resolve().is_relative_to(self.root.resolve())
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
