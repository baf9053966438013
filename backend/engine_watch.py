"""How long an engine may run, and whether it is getting anywhere.

An engine's own timeouts bound each read, not a download: a server that trickles a byte every
second keeps pip or uv fetching for ever. So neuronctl bounds every engine it runs two ways:
`total`, an overall limit (for an install, --timeout plus the files' sizes at a floor rate, as
`download` allows each file, plus time to unpack them), and `idle`, a stretch with no progress.
The engines' own per-read timeout is set to --timeout too (`read`): a silent connection is theirs
to report, naming the file; `idle` is twice that, so it stops what their timeout never sees (a
read that never returns, a retry loop) without racing their clearer message.
Progress is what the engine's processes read and write (/proc/PID/io, summed over its process
tree): a download writes what it receives, an install unpacks and writes files; or CPU time at
more than CPU_SHARE of the time since the last progress (uv linking files from its cache, pip
moving an old version aside, write nothing). The output neuronctl itself reads from it is taken
off, so a spinner redrawn on a stalled download is no progress (nor is the CPU it takes, far
under CPU_SHARE). Where /proc tells nothing (no task I/O accounting), only `total` holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from msgspec import Struct

MIN_RATE = 128 * 1024
"""Bytes a second a file may not fall below on average (as `download`'s MIN_RATE)."""
UNPACK_RATE = 8 << 20
"""Bytes a second of the files installed, for unpacking and writing them after the last byte."""
MAX_UNDECLARED = 4 << 30
"""A file of no declared size counts as this big (as `download`'s limit for one)."""
SLACK = 16 << 10
"""Bytes of I/O that count as progress: more than a progress bar's redraw left unread."""
CPU_SHARE = 0.05
"""CPU time, as a share of the time since the last progress, that counts as progress."""
CPU_MIN_S = 0.05
SAMPLE_S = 0.25
MAX_PROCESSES = 256


class Limits(Struct, frozen=True):
    """How long an engine run may take (`total`) and go without progress (`idle`, None: no such
    limit), what `total` allows, in words, for the message when it is reached, and the engines'
    own per-read timeout (`read`, None: theirs)."""

    total: float
    idle: float | None = None
    why: str = ""
    read: float | None = None


def step_limits(total: float, timeout: float) -> Limits:
    """A step of `total` seconds at most, stopped after twice --timeout without progress."""
    return Limits(total, 2 * timeout, read=timeout)


def install_limits(sizes: Iterable[int | None], timeout: float) -> Limits:
    """An install of files of these sizes: --timeout to start, each file at MIN_RATE, their
    unpacking at UNPACK_RATE, and --timeout again to finish; no progress for twice --timeout
    stops it (a read silent for --timeout is the engine's own error)."""
    known = [max(s, 0) if s is not None else MAX_UNDECLARED for s in sizes]
    total = sum(known)
    limit = 2 * timeout + total / MIN_RATE + total / UNPACK_RATE
    return Limits(limit, 2 * timeout, f"--timeout {timeout:g}s twice, plus {len(known)} file(s) "
                                      f"of {total:,} bytes at {MIN_RATE // 1024} KiB/s", timeout)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read(4096)
    except OSError:
        return None


def _tree(pid: int) -> list[int]:
    """pid and its descendants now (their threads' children files), at most MAX_PROCESSES."""
    found, i = [pid], 0
    while i < len(found) and len(found) < MAX_PROCESSES:
        tasks = _listdir(f"/proc/{found[i]}/task")
        for tid in tasks:
            text = _read(f"/proc/{found[i]}/task/{tid}/children") or ""
            found += [int(c) for c in text.split() if c.isdigit() and int(c) not in found]
        i += 1
    return found[:MAX_PROCESSES]


def _listdir(path: str) -> list[str]:
    import os

    try:
        return os.listdir(path)
    except OSError:
        return []


def _io(pid: int) -> int | None:
    text = _read(f"/proc/{pid}/io")
    if text is None:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    try:
        return int(fields["rchar"]) + int(fields["wchar"])
    except (KeyError, ValueError):
        return None


def _cpu(pid: int) -> float:
    """CPU seconds of pid and of its children it has waited for (utime, stime, cutime, cstime)."""
    import os

    text = _read(f"/proc/{pid}/stat") or ""
    fields = text.rpartition(")")[2].split()  # after the command name, which may hold anything
    try:
        ticks = sum(int(f) for f in fields[11:15])
    except ValueError:
        return 0.0
    return ticks / os.sysconf("SC_CLK_TCK")


Sample = tuple[int, float]
"""(bytes read and written, CPU seconds) of an engine's process tree."""


def sample_tree(pid: int) -> Sample | None:
    """What the process tree under pid has read, written and computed (its reaped children
    included); None when /proc does not say for pid itself."""
    first = _io(pid)
    if first is None:
        return None
    children = _tree(pid)[1:]
    io = first + sum(_io(child) or 0 for child in children)
    return io, _cpu(pid) + sum(_cpu(child) for child in children)


class Watch:
    """One engine run's limits, checked as it runs: due() says why it must stop, if it must."""

    def __init__(self, pid: int, limits: Limits, clock: Callable[[], float] = time.monotonic,
                 sample: Callable[[int], Sample | None] = sample_tree) -> None:
        self.pid, self.limits, self.clock, self.sample = pid, limits, clock, sample
        now = clock()
        self.deadline = now + limits.total
        self.shown = 0
        first = sample(pid) if limits.idle is not None else None
        self.idle_on = first is not None
        self.mark, self.cpu_mark = first or (0, 0.0)
        self.last, self.next = now, now + SAMPLE_S

    def output(self, count: int) -> None:
        """`count` bytes of the engine's output were read (its writes of them are no progress)."""
        self.shown += count

    def left(self) -> float:
        return self.deadline - self.clock()

    def due(self) -> str | None:
        now = self.clock()
        if now >= self.deadline:
            why = f" ({self.limits.why})" if self.limits.why else ""
            return f"stopped: still running after {self.limits.total:,.1f}s, its time limit{why}"
        if not self.idle_on or now < self.next:
            return None
        self.next = now + SAMPLE_S
        got = self.sample(self.pid)
        if got is None:  # gone, or no longer readable: its exit is reaped next
            return None
        level, cpu = got[0] - self.shown, got[1]
        # A child's counts that left the tree before its parent reaped it: a new baseline.
        self.mark, self.cpu_mark = min(self.mark, level), min(self.cpu_mark, cpu)
        busy = cpu - self.cpu_mark >= max(CPU_MIN_S, CPU_SHARE * (now - self.last))
        if level - self.mark >= SLACK or busy:
            self.mark, self.cpu_mark, self.last = level, cpu, now
        idle = self.limits.idle
        assert idle is not None
        if now - self.last >= idle:
            return (f"stopped: no progress for {idle:g}s (twice --timeout): nothing read, written or "
                    "computed")
        return None
