"""Read one member of a remote wheel with HTTP range requests: the zip's tail (end of central
directory and, for a wheel's usual small directory, the directory itself), the rest of a larger
directory (only the bytes the tail lacks), then the member's own bytes in one request sized to
it. For a 500 MB compiler wheel that is a few tens of kilobytes instead of the whole file, in the
sizes uv asks for (its tail is 16 KiB too).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Callable

from packaging.utils import canonicalize_name

TAIL = 16 * 1024
"""The first request: the zip's last 16 KiB, as uv asks (a wheel's end of central directory and,
but for the largest wheels, its whole directory)."""
MIN_FETCH = 4 * 1024
"""A read the fetched ranges do not hold asks for at least this much (zipfile reads a few bytes
at a time); a member's bytes are asked for in one request sized to it (`RangeFile.prefetch`)."""
LOCAL_HEADER_SLACK = 1024
"""What a member's local header may add over the central directory's name and extra field (its
own extra field is allowed to differ): asked for with the member, so one request holds it."""
MAX_METADATA = 16 << 20
"""A METADATA file may be this big uncompressed (real ones, README included, are under 1 MB):
checked against the zip directory's size and again while reading, so a zip bomb fails fast in
bounded memory."""
MAX_RANGE_BYTES = 64 << 20
"""What range requests may fetch from one wheel in all (torch's zip directory is a few MB): a
directory that claims more is refused before it is asked for."""
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")

class _Refused(ValueError):
    """A wheel neuronctl will not read (its message says why); any other ValueError out of zipfile
    is reported as "not a readable wheel"."""


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
        self._fetched = len(tail)

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

    def prefetch(self, start: int, end: int) -> None:
        """Fetch [start, end) in one request, unless the ranges fetched hold it already."""
        start, end = max(0, start), min(self._size, end)
        if start < end:
            self._range(start, end, min_fetch=0)

    def _range(self, start: int, end: int, min_fetch: int = MIN_FETCH) -> bytes:
        for chunk_start, chunk in self._chunks:
            if chunk_start <= start and end <= chunk_start + len(chunk):
                return chunk[start - chunk_start:end - chunk_start]
        # A read that runs into a fetched range (a directory bigger than the tail) asks only for
        # the bytes before it: the tail is not fetched twice.
        after = next(((s, c) for s, c in self._chunks if start < s < end <= s + len(c)), None)
        fetch_end = after[0] if after else min(self._size, max(end, start + min_fetch))
        self._fetched += fetch_end - start
        if self._fetched > MAX_RANGE_BYTES:
            raise _Refused(f"reading it would take more than {MAX_RANGE_BYTES >> 20} MiB of range "
                             "requests; its zip directory is not a wheel's")
        data = self._fetch(start, fetch_end)
        if len(data) != fetch_end - start:
            raise OSError(f"range {start}-{fetch_end}: got {len(data)} bytes")
        if after is not None:
            data += after[1][:end - after[0]]
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
    """METADATA text of a wheel; ValueError when the file is not a wheel with one, or one whose
    METADATA is bigger than MAX_METADATA. Network faults while reading a RangeFile propagate."""
    try:
        with zipfile.ZipFile(fileobj) as zf:
            member = metadata_member(zf.namelist(), project)
            if member is None:
                raise _Refused("no .dist-info/METADATA in the wheel")
            return _read_bounded(zf, member, fileobj).decode("utf-8")
    except _Refused:
        raise
    except (ValueError, zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, OSError, EOFError,
            struct.error, zlib.error, NotImplementedError, RuntimeError) as exc:
        # Bad offsets, truncated ranges, unknown compression, encryption: all say "not a wheel".
        raise ValueError(f"not a readable wheel ({type(exc).__name__}: {str(exc)[:200]})") from None


def _read_bounded(zf: zipfile.ZipFile, member: str, fileobj: object = None) -> bytes:
    info = zf.getinfo(member)
    if info.file_size > MAX_METADATA:
        raise _Refused(f"{member} is {info.file_size:,} bytes uncompressed; more than the "
                         f"{MAX_METADATA >> 20} MiB neuronctl reads")
    if isinstance(fileobj, RangeFile):  # the member in one request: header, name, extra, data
        span = (30 + len(info.orig_filename.encode()) + len(info.extra) + LOCAL_HEADER_SLACK
                + min(info.compress_size, MAX_METADATA))
        fileobj.prefetch(info.header_offset, info.header_offset + span)
    with zf.open(info) as fh:
        data = fh.read(MAX_METADATA + 1)  # the directory's size may lie; the read may not
    if len(data) > MAX_METADATA:
        raise _Refused(f"{member} is more than the {MAX_METADATA >> 20} MiB neuronctl reads")
    return data
