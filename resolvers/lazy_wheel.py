"""Read one member of a remote wheel with HTTP range requests: the zip's tail (end of central
directory and the directory itself), then just the bytes of that member. For a 500 MB compiler
wheel that is tens of kilobytes instead of the whole file.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

from packaging.utils import canonicalize_name

TAIL = 64 * 1024
MIN_FETCH = 16 * 1024
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")

FetchRange = Callable[[int, int], bytes]
"""(start, end) -> the bytes [start, end) of the remote file."""


def parse_content_range(value: str | None) -> tuple[int, int, int] | None:
    """'bytes 10-19/100' -> (10, 20, 100): the served half-open range and the total size."""
    m = _CONTENT_RANGE.match((value or "").strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)) + 1, int(m.group(3))


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file that fetches missing ranges on demand."""

    def __init__(self, size: int, fetch: FetchRange, tail: bytes = b"") -> None:
        super().__init__()
        self._size = size
        self._fetch = fetch
        self._pos = 0
        self._chunks: list[tuple[int, bytes]] = [(size - len(tail), tail)] if tail else []

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, n: int | None = -1) -> bytes:
        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        data = self._range(self._pos, end)
        self._pos = end
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _range(self, start: int, end: int) -> bytes:
        for chunk_start, chunk in self._chunks:
            if chunk_start <= start and end <= chunk_start + len(chunk):
                return chunk[start - chunk_start:end - chunk_start]
        fetch_end = min(self._size, max(end, start + MIN_FETCH))
        data = self._fetch(start, fetch_end)
        if len(data) != fetch_end - start:
            raise OSError(f"range {start}-{fetch_end}: got {len(data)} bytes")
        self._chunks.append((start, data))
        return data[: end - start]


def metadata_member(names: list[str], project: str) -> str | None:
    """The top-level `*.dist-info/METADATA` of a wheel, preferring the project's own."""
    candidates = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    want = canonicalize_name(project)
    for name in candidates:
        dist = name.split("/", 1)[0][: -len(".dist-info")].rsplit("-", 1)[0]
        if canonicalize_name(dist) == want:
            return name
    return candidates[0] if len(candidates) == 1 else None


def read_metadata_from_zip(fileobj: io.RawIOBase | io.BufferedIOBase | str, project: str) -> str:
    """METADATA text of a wheel; ValueError when the file is not a wheel with one."""
    try:
        with zipfile.ZipFile(fileobj) as zf:
            member = metadata_member(zf.namelist(), project)
            if member is None:
                raise ValueError("no .dist-info/METADATA in the wheel")
            return zf.read(member).decode("utf-8")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, UnicodeDecodeError, KeyError) as exc:
        raise ValueError(f"not a readable wheel ({exc})") from None
