"""The kernel log since boot (or within a lookback), read bounded, for `hardware.errors`.

On this host: /dev/kmsg, opened non-blocking and read record by record until the kernel says
there is no more (EAGAIN), or, where /dev/kmsg is closed to this user (dmesg_restrict),
`journalctl -k -b` with a line limit and a timeout. In a captured root: var/log/kern.log, then
var/log/dmesg, read from their end through SysRoot (contained, regular files, at most
MAX_LOG_BYTES: a 1 GB log costs one seek and MAX_LOG_BYTES of reads).

Only reading and the log formats' own framing live here; which lines are hardware errors is
decided apart from this (ops/doctor/health_rules.py).

Formats read:
- /dev/kmsg records "PRI,SEQ,TIMESTAMP_US,FLAGS[,...];MESSAGE" with continuation lines starting
  with a space (https://www.kernel.org/doc/Documentation/ABI/testing/dev-kmsg). TIMESTAMP_US is
  microseconds since boot, compared with /proc/uptime for --lookback.
- a dmesg file: "[seconds.micro] message" lines, seconds since boot.
- kern.log (rsyslog): "<RFC 3339 time or 'Mon dd hh:mm:ss'> host kernel: [seconds] message". The
  last boot in it starts at its last line carrying the kernel's banner "Linux version " (the
  kernel prints linux_banner first at every boot: init/main.c, start_kernel).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable

from msgspec import Struct

from neuronctl import proc
from neuronctl.probes.sysroot import SysRoot

MAX_LOG_BYTES = 8 * 1024 * 1024
"""The most of any kernel log read: the end of a 1 GB kern.log, never all of it."""
MAX_KMSG_RECORDS = 200_000
MAX_LINE_CHARS = 2048
JOURNAL_LINES = 20_000
JOURNAL_TIMEOUT_S = 4.0
CAPTURED_LOGS = ("/var/log/kern.log", "/var/log/dmesg")
BOOT_BANNER = "Linux version "

_DMESG_TIME = re.compile(r"\[\s*(\d{1,10})(?:\.(\d{1,9}))?\]")
# rsyslog's line head: the time (RFC 3339, or the traditional "Mmm dd hh:mm:ss"), the host, then
# the program's tag. The kernel's lines carry the tag "kernel:" there, in that place only: the
# words " kernel: " later in another program's message (an sshd "Invalid user x kernel: ...",
# the user name sent from the network) are not the kernel's.
_SYSLOG_KERNEL = re.compile(r"(?:(?:\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)|"
                            r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) )?[^\s]{1,255} kernel: ")


class LogLine(Struct, frozen=True):
    """One kernel message, with its time since boot in seconds where the format carries one."""

    text: str
    since_boot_s: float | None


class KernelLog(Struct, frozen=True):
    """What was read of the kernel log: its lines (the newest boot only), where from, how much."""

    source: str | None
    """"/dev/kmsg", "journalctl -k -b", a captured file as shown on that system, or None."""
    lines: tuple[LogLine, ...]
    bytes_read: int
    truncated: bool
    """Older messages were left unread (the log was longer than the bound)."""
    uptime_s: float | None = None
    """The system's uptime when read (for --lookback against kmsg's boot-relative times)."""
    problem: str | None = None
    """Why no log could be read (permission, no such file), for the check to say so."""


def _clean(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)[:MAX_LINE_CHARS]


def _seconds(match: re.Match[str] | None) -> float | None:
    if match is None:
        return None
    frac = str(match.group(2) or "0")
    return float(int(str(match.group(1))) + int(frac) / 10 ** len(frac))


def parse_kmsg_record(record: str) -> LogLine | None:
    """One /dev/kmsg record as a LogLine (continuation lines dropped); None when malformed or
    not the kernel's own (a facility other than 0)."""
    head, sep, message = record.partition(";")
    if not sep:
        return None
    fields = head.split(",")
    if len(fields) < 3 or not all(f.isascii() and f.isdigit() and len(f) <= 20 for f in fields[:3]):
        return None
    if int(fields[0]) >> 3 != 0:
        # facility 0 is the kernel's: what user space writes to /dev/kmsg gets another one
        # (LOG_USER when it names none or 0: kernel/printk/printk.c, devkmsg_write)
        return None
    first = message.split("\n", 1)[0]
    return LogLine(_clean(first), int(fields[2]) / 1_000_000)


def parse_text_log(text: str, *, from_last_boot: bool) -> tuple[LogLine, ...]:
    """Lines of a dmesg or kern.log file; with `from_last_boot`, only those after the last boot
    banner when one is in what was read."""
    raw = text.split("\n")
    if from_last_boot:
        starts = [i for i, line in enumerate(raw) if BOOT_BANNER in line]
        if starts:
            raw = raw[starts[-1]:]
    return tuple(LogLine(_clean(line), _seconds(_DMESG_TIME.search(line)))
                 for line in raw if line.strip())


def _read_kmsg(path: str = "/dev/kmsg") -> tuple[list[LogLine], int, bool] | str:
    """Every record /dev/kmsg holds, non-blocking (EAGAIN: the end); a reason string when it
    cannot be opened."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return f"{path}: {exc.strerror or type(exc).__name__}"
    lines: list[LogLine] = []
    total, truncated = 0, False
    try:
        while True:
            if len(lines) >= MAX_KMSG_RECORDS or total >= MAX_LOG_BYTES:
                truncated = True
                break
            try:
                chunk = os.read(fd, 8192)  # one record per read
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten while read: go on with the next
                    continue
                break  # EAGAIN: no more records; EINVAL and others: stop, keep what was read
            if not chunk:
                break
            total += len(chunk)
            line = parse_kmsg_record(chunk.decode("utf-8", errors="replace"))
            if line is not None:
                lines.append(line)
    finally:
        os.close(fd)
    if truncated:  # the ring buffer is longer than the bound: keep its newest part
        lines = lines[-MAX_KMSG_RECORDS:]
    return lines, total, truncated


Journal = Callable[[list[str], float], str | None]


def run_journal(argv: list[str], timeout: float) -> str | None:
    """journalctl's stdout, at most its last MAX_LOG_BYTES, or None when it cannot run in time."""
    try:
        done = proc.run(argv, proc.Bounds(timeout), stdout=proc.Keep(tail=MAX_LOG_BYTES),
                        stderr=proc.Keep(tail=4096))
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.text()


def _uptime(root: SysRoot) -> float | None:
    text = root.read("/proc/uptime", 256) or ""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return None


def read_kernel_log(root: SysRoot, journal: Journal = run_journal,
                    kmsg_path: str = "/dev/kmsg") -> KernelLog:
    """The kernel log of the current boot: this host's /dev/kmsg (or journalctl), a captured
    root's var/log/kern.log or var/log/dmesg."""
    if root.is_host:
        got = _read_kmsg(kmsg_path)
        if not isinstance(got, str):
            lines, total, truncated = got
            return KernelLog("/dev/kmsg", tuple(lines), total, truncated, _uptime(root))
        argv = ["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short-monotonic",
                "-n", str(JOURNAL_LINES)]
        out = journal(argv, JOURNAL_TIMEOUT_S)
        if out is not None:
            return KernelLog("journalctl -k -b", parse_text_log(out, from_last_boot=False),
                             len(out.encode()), out.count("\n") >= JOURNAL_LINES, _uptime(root))
        return KernelLog(None, (), 0, False, problem=f"{got}; journalctl -k -b: not available")
    for name in CAPTURED_LOGS:
        data = root.read_bytes(name, MAX_LOG_BYTES, tail=True)
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        truncated = len(data) >= MAX_LOG_BYTES
        if truncated:  # the first line read is likely cut in the middle
            text = text.split("\n", 1)[1] if "\n" in text else ""
        kept = parse_text_log(text, from_last_boot=True)
        if name.endswith("kern.log"):
            # syslog can hold other programs' lines (an sshd "Invalid user NEURON_HW_ERR=..."
            # from the network): only the kernel's own, tagged "kernel:" by rsyslog's imklog
            kept = tuple(line for line in kept if _SYSLOG_KERNEL.match(line.text))
        return KernelLog(name, kept, len(data), truncated, _uptime(root))
    return KernelLog(None, (), 0, False,
                     problem=f"no kernel log in the root ({', '.join(CAPTURED_LOGS)})")
