"""`neuronctl bundle`: one archive a support case can act on, like nvidia-bug-report.sh.

Every item is gathered concurrently with its own time limit and size cap; what could not be
gathered is listed with its reason in the archive's index. Nothing is fatal but failing to write
the archive, which is written whole or not at all. Every member passes through redact(), and
with `redact_hostnames` the host name and FQDN are replaced too.

The `env` and `doctor` items run this neuronctl as subprocesses (`python -m neuronctl ...`) rather
than calling the operations in-process: a hung or crashing probe is then one failed item, killed
at its limit with its whole process group, and never the bundle."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from neuronctl._version import __version__
from neuronctl.errors import FaultError
from neuronctl.ops.bundle_items import ITEMS, Context, Gathered, Item, Unavailable, this_neuronctl
from neuronctl.ops.reporter import NullReporter, Reporter, StepDone, Warn
from neuronctl.probes.sysroot import SysRoot
from neuronctl.redact import redact

HOST_MASK = "<host>"
_HOST_CHARS = re.compile(r"[^A-Za-z0-9.-]+")


class BundleRequest(Struct, frozen=True):
    """What `neuronctl bundle` was asked: the archive, the interpreter and root to describe."""

    output: Path | None
    python: str
    sysroot: SysRoot = field(default_factory=SysRoot)
    redact_hostnames: bool = False
    config: Path = Path("pyproject.toml")
    global_args: tuple[str, ...] = ()
    """Global neuronctl options to hand on to `env` and `doctor` (--manifest, --config)."""
    environ: Mapping[str, str] | None = None
    items: Sequence[Item] = ITEMS


class ItemRecord(Struct, frozen=True):
    """How one member of a bundle was gathered, as its index records it."""

    file: str
    title: str
    status: str
    """"collected", "partial" (cut at its cap or a non-zero exit), "unavailable", "failed"."""
    reason: str | None
    source: str | None
    bytes: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "title": self.title, "status": self.status,
                "reason": self.reason, "source": self.source, "bytes": self.bytes,
                "seconds": self.seconds}


class BundleOutcome(Struct, frozen=True):
    """The bundle written: its path, size, and each member's record."""

    path: Path
    size: int
    items: tuple[ItemRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "size": self.size,
                "items": [i.to_json() for i in self.items]}


def host_names(root: SysRoot) -> list[str]:
    """The names this host goes by, longest first (an FQDN before the name it starts with)."""
    names = {socket.gethostname(), socket.getfqdn(), root.read("/etc/hostname") or ""}
    names = {n.strip() for n in names} - {"", "localhost", "localhost.localdomain"}
    return sorted((n for n in names if len(n) > 1), key=len, reverse=True)


# redact()'s patterns cost time quadratic in the length of one unbroken word (measured: a
# 10,000-character run takes tens of seconds, and holds the GIL while it does, so no time limit
# can stop it). Runs that long are blobs, not text anyone reads: they are dropped first, which
# also drops any secret inside them.
_LONG_WORD = re.compile(r"[\w.\-]{161,}")
_LONG_TOKEN = re.compile(r"\S{1025,}")


def _dropped(match: re.Match[str]) -> str:
    return f"[neuronctl: {len(match[0])} characters dropped]"


MAX_HOST_NAME = 253
"""A DNS name's longest form. Only such names go into the host pattern: matching a name costs
up to its length at every position of the text, so a 400 KB "hostname" from a captured
/etc/hostname made the pattern quadratic, holding the GIL for minutes past every item's limit."""
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


class Scrubber:
    """redact() plus, when asked, the host's names; blobs dropped first."""

    def __init__(self, names: Sequence[str]) -> None:
        # A name takes the domain after it along: the short name from a captured /etc/hostname
        # must not leave the FQDN's domain behind.
        hosts = [n for n in names if _HOST_NAME.fullmatch(n)]
        self.pattern = (re.compile("|".join(rf"(?<![A-Za-z0-9-]){re.escape(n)}"
                                            r"(?:\.[A-Za-z0-9-]+)*(?![A-Za-z0-9-])"
                                            for n in hosts), re.IGNORECASE) if hosts else None)
        # Anything else named as this host (too long, or not a DNS name) is masked as it is, by
        # str.replace: linear in the text and the name whatever they hold.
        self.literals = sorted({n for n in names if n and n not in hosts}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        text = redact(_LONG_WORD.sub(_dropped, _LONG_TOKEN.sub(_dropped, text)))
        for name in self.literals:
            text = text.replace(name, HOST_MASK)
        return self.pattern.sub(HOST_MASK, text) if self.pattern else text


Collected = tuple[ItemRecord, bytes | None]


def _capped(text: str, cap: int) -> tuple[str, bool]:
    """The first `cap` bytes (cut before redaction, which then has a bounded amount to read)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= cap:
        return text, False
    kept = data[:cap].decode("utf-8", "ignore")
    return kept + f"\n[neuronctl: cut at {cap} bytes of {len(data)}]\n", True


def _record(item: Item, result: Gathered | Unavailable, started: float,
            scrub: Scrubber) -> Collected:
    if isinstance(result, Unavailable):
        return ItemRecord(item.name, item.title, result.status, scrub(result.reason), None, 0,
                          round(time.monotonic() - started, 2)), None
    text, cut = _capped(result.text, item.cap)
    data = scrub(text).encode("utf-8", "replace")
    notes = [n for n in (result.note, f"cut at {item.cap} bytes" if cut else None) if n]
    status = "partial" if result.partial or cut else "collected"
    return ItemRecord(item.name, item.title, status, scrub("; ".join(notes)) or None,
                      scrub(result.source), len(data), round(time.monotonic() - started, 2)), data


def _gather_one(item: Item, ctx: Context, scrub: Scrubber, slot: list[Collected]) -> None:
    """Gather and redact one item; both count against its time limit."""
    started = time.monotonic()
    result: Gathered | Unavailable
    try:
        result = item.gather(ctx, item.timeout)
    except Unavailable as exc:
        result = exc
    except Exception as exc:  # one broken item is one line in the index, not a lost bundle
        result = Unavailable(f"{type(exc).__name__}: {exc}", "failed")
    slot.append(_record(item, result, started, scrub))


def gather(request: BundleRequest, reporter: Reporter) -> list[Collected]:
    ctx = Context(request.sysroot, request.python, this_neuronctl(request.global_args),
                  dict(os.environ if request.environ is None else request.environ),
                  request.config, Path.cwd())
    scrub = Scrubber(host_names(request.sysroot) if request.redact_hostnames else ())
    slots: list[list[Collected]] = [[] for _ in request.items]
    threads, start = [], time.monotonic()
    for item, slot in zip(request.items, slots, strict=True):
        # Daemon threads: an item stuck in a read past its limit must not keep neuronctl alive.
        thread = threading.Thread(target=_gather_one, args=(item, ctx, scrub, slot), daemon=True,
                                  name=f"bundle-{item.name}")
        thread.start()
        threads.append(thread)
    records = []
    for item, slot, thread in zip(request.items, slots, threads, strict=True):
        # Subprocess items stop themselves at the limit; the grace covers killing and reaping.
        thread.join(max(item.timeout + 5 - (time.monotonic() - start), 0.0))
        record, data = slot[0] if slot else (
            ItemRecord(item.name, item.title, "failed", f"timed out after {item.timeout:g}s",
                       None, 0, round(time.monotonic() - start, 2)), None)
        said = f"{item.name}: {record.status}" + (f" ({record.reason})" if record.reason else "")
        reporter.emit(StepDone(said, item.name) if data is not None else Warn(said))
        records.append((record, data))
    return records


def _index(request: BundleRequest, records: Sequence[ItemRecord], scrub: Scrubber,
           created: datetime) -> tuple[bytes, bytes]:
    document = {"schema": 1, "neuronctl": __version__, "created": created.isoformat(),
                "host": scrub(socket.gethostname()), "sysroot": str(request.sysroot.root),
                "python": scrub(request.python), "items": [r.to_json() for r in records]}
    lines = ["# neuronctl support bundle", "",
             f"neuronctl {__version__}, created {created.isoformat()} on {document['host']}.",
             "Secrets (tokens, passwords, URL credentials) are masked as `***`.", "",
             "| file | status | what | reason / note |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.file} | {r.status} | {r.title} | {(r.reason or '').replace('|', '/')} |"
              for r in records]
    return (scrub(json.dumps(document, indent=2) + "\n").encode(),
            scrub("\n".join(lines) + "\n").encode())


def _archive(top: str, members: Sequence[tuple[str, bytes]], mtime: float) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), int(mtime), 0o600
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write_private_atomic(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all, readable by its owner only (a bundle describes the
    machine); FaultError when it cannot be written, with nothing left behind."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise FaultError(f"cannot write {path}: {exc.strerror or exc}",
                         hint="write it somewhere else with -o") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FaultError(f"cannot write {path}: {exc.strerror or exc}; nothing was written",
                         hint="free some space there, or write somewhere else with -o") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def default_name(redact_hostnames: bool, created: datetime) -> str:
    host = "redacted" if redact_hostnames else _HOST_CHARS.sub("_", socket.gethostname())[:64]
    return f"neuronctl-bundle-{host or 'host'}-{created.strftime('%Y%m%d-%H%M%S')}.tar.gz"


def make_bundle(request: BundleRequest, reporter: Reporter | None = None) -> BundleOutcome:
    reporter = reporter or NullReporter()
    created = datetime.now(timezone.utc).replace(microsecond=0)
    name = default_name(request.redact_hostnames, created)
    path = request.output or Path(name)
    scrub = Scrubber(host_names(request.sysroot) if request.redact_hostnames else ())
    gathered = gather(request, reporter)
    records = [r for r, _ in gathered]
    index_json, index_md = _index(request, records, scrub, created)
    members = [("index.json", index_json), ("README.md", index_md)]
    members += [(r.file, data) for r, data in gathered if data is not None]
    data = _archive(name.removesuffix(".tar.gz"), members, created.timestamp())
    write_private_atomic(path, data)
    return BundleOutcome(path, len(data), tuple(records))
