"""`neuronctl download`: a wheelhouse, every file a pylock.toml selects for its targets, fetched
once into a directory (shared storage, an air-gapped host's disk) and verified against the lock.

Which files: with no target given, every wheel of every package whose marker holds in one of the
targets the lock records ([tool.neuronctl] targets; a lock without them: every package), so
whatever host the lock fits finds its own pick there; with targets (Python, platform), the wheels
of the packages for those targets whose tags fit one of them (every fitting wheel, not only the
best, since a host's own tags choose among them at install time).

How: each file is streamed into a hidden staging folder inside DIR (`.neuronctl-partial`, a real
folder: a link there is refused),
verified against the lock's sha256 and size, and only then renamed to DIR/<file name> (same file
system: atomic). A file already at its final name is verified and skipped; one that fails
verification is replaced by a verified download. Nothing unverified ever has a final name, so a
run stopped by Ctrl-C or SIGTERM leaves DIR usable and the next run resumes where it stopped.
File names come from the lock: each is checked by safe_filename (one plain component). A file
name in DIR that is a symbolic link is never followed: unverified, it is replaced by the verified
file (a rename replaces the link, not its target).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl.errors import FaultError, InputError
from neuronctl.locked_file import LockedFile
from neuronctl.ops.reporter import Info, Reporter, status
from neuronctl.routing import IndexRouting
from neuronctl.safety import checked_hash, safe_filename

if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.resolvers.targets import PlatformTarget

STAGING = ".neuronctl-partial"
WORKERS = 4
LABEL_WIDTH = 28


class DownloadRequest(Struct, frozen=True):
    """What `neuronctl download` was asked: the lock, the wheelhouse folder, the targets."""

    lock: Path
    dest: Path
    routing: Callable[[Mapping[str, str]], IndexRouting]
    """The index routing (bundled, config, NEURONCTL_INDEX_*) over the indexes the lock records:
    the credentials each file's origin is fetched with."""
    targets: tuple[PlatformTarget, ...] = ()
    """Empty: every target the lock records (see the module's docstring)."""
    timeout: float = 30.0


class FileOutcome(Struct, frozen=True):
    """What `neuronctl download` did with one wheel: downloaded, already present, replaced."""

    file: LockedFile
    status: str
    """"downloaded", "present" (already there and verified) or "replaced" (there, unverified)."""

    def to_json(self) -> dict[str, object]:
        return {"name": self.file.name, "version": self.file.version,
                "file": self.file.filename, "sha256": self.file.sha256, "size": self.file.size,
                "status": self.status}


class DownloadOutcome(Struct, frozen=True):
    """The wheelhouse filled, and what happened to each file."""

    dest: Path
    files: tuple[FileOutcome, ...]

    def to_json(self) -> dict[str, object]:
        return {"kind": "download", "dest": str(self.dest),
                "files": [f.to_json() for f in self.files]}


def recorded_targets(lock: Pylock) -> tuple[PlatformTarget, ...]:
    """The (python, platform) targets the lock's [tool.neuronctl] records; each checked, a forged
    entry is skipped rather than trusted."""
    from neuronctl.resolvers.pylock import neuronctl_table
    from neuronctl.resolvers.targets import make_targets

    recorded = (neuronctl_table(lock) or {}).get("targets")
    found: list[PlatformTarget] = []
    for entry in recorded if isinstance(recorded, list) else ():
        if isinstance(entry, dict):
            try:
                found.extend(make_targets([str(entry.get("python"))], [str(entry.get("platform"))]))
            except InputError:
                continue
    return tuple(found)


def _marker_holds(pkg: Any, targets: Sequence[PlatformTarget], where: str) -> bool:
    """Whether the package's marker holds in one of the targets (no marker, or no target known:
    it does)."""
    from packaging.markers import Marker

    if pkg.marker is None or not targets:
        return True
    try:
        marker = Marker(str(pkg.marker))
        return any(marker.evaluate(dict(t.markers)) for t in targets)  # type: ignore[arg-type,unused-ignore]
    except ValueError as exc:  # a marker such as ~= "foo"
        raise InputError(f"{where}: marker {str(pkg.marker)[:120]!r} cannot be evaluated "
                         f"({str(exc)[:120]})") from None


def _fits(wheel: Any, targets: Sequence[PlatformTarget]) -> bool:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        tags = parse_wheel_filename(wheel.filename)[3]
    except InvalidWheelFilename:
        return False
    return any(t.wheel_rank(tags) is not None for t in targets)


def selected_files(path: Path, lock: Pylock, targets: Sequence[PlatformTarget]) -> list[LockedFile]:
    """The lock's files for `targets` (empty: the lock's recorded ones, every wheel), each file
    name and sha256 checked; the same file name with two hashes is bad input naming both."""
    by_tag = bool(targets)
    targets = targets or recorded_targets(lock)
    out: dict[str, LockedFile] = {}
    for pkg in lock.packages:
        where = f"{path}: {pkg.name} {pkg.version or ''}".rstrip()
        if not _marker_holds(pkg, targets, where):
            continue
        if pkg.sdist is not None and not pkg.wheels:
            raise InputError(f"{where}: an sdist only; neuronctl installs wheels only")
        for wheel in pkg.wheels or ():
            if by_tag and not _fits(wheel, targets):
                continue
            found = _locked_file(path, pkg, wheel, where)
            seen = out.setdefault(found.filename, found)
            if seen.sha256 != found.sha256:
                raise InputError(f"{where}: {found.filename} is locked with two sha256 hashes "
                                 f"({seen.sha256[:12]}…, {found.sha256[:12]}…)")
    return sorted(out.values(), key=lambda f: f.filename)


def _locked_file(path: Path, pkg: Any, wheel: Any, where: str) -> LockedFile:
    filename = safe_filename(wheel.filename, where)
    sha = (wheel.hashes or {}).get("sha256")
    if not sha:
        raise InputError(f"{where}: {filename} has no sha256; neuronctl verifies every file")
    if wheel.url:
        url = str(wheel.url)
    elif wheel.path:
        url = (path.parent / str(wheel.path)).resolve().as_uri()
    else:
        raise InputError(f"{where}: {filename} has neither url nor path")
    size = wheel.size if isinstance(wheel.size, int) and wheel.size >= 0 else None
    return LockedFile(str(pkg.name), str(pkg.version or ""), filename, url,
                      checked_hash("sha256", sha, where), size)


def verified(file: LockedFile, path: Path) -> bool:
    """Whether `path` holds exactly the locked file (size first: cheap; then its sha256)."""
    from neuronctl.resolvers.download import sha256_file

    try:
        if not path.is_file() or path.is_symlink():
            return False
        if file.size is not None and path.stat().st_size != file.size:
            return False
        return sha256_file(path) == file.sha256
    except OSError:
        return False


def label(file: LockedFile) -> str:
    text = f"{file.name} {file.version}"
    return text if len(text) <= LABEL_WIDTH else text[:LABEL_WIDTH - 1] + "…"


def download(request: DownloadRequest, reporter: Reporter) -> DownloadOutcome:
    """Every selected file into request.dest, verified; the first failure (or Ctrl-C, SIGTERM)
    stops the others, and what completed stays (a re-run skips it)."""
    from neuronctl.ops.lock.net_preflight import file_hosts, preflight
    from neuronctl.resolvers.http_fetch import Fetcher
    from neuronctl.resolvers.pylock import load_pylock, neuronctl_table

    lock = load_pylock(request.lock)
    files = selected_files(request.lock, lock, request.targets)
    recorded = (neuronctl_table(lock) or {}).get("indexes")
    indexes = {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
    routing = request.routing(indexes)
    for file in files:  # a lock's file URLs, held to its indexes' rule, before anything is made
        routing.check_lock_url(file.url, f"{request.lock}: {file.name}")
    dest = _prepare(request.dest)
    fetcher = Fetcher(cache=None, offline=False, timeout=request.timeout,
                      credentials=routing.credentials())
    hosts = file_hosts(f.url for f in files  # the hosts of what is not there yet, at once
                       if not (dest / safe_filename(f.filename, f.name)).is_file())
    if hosts:
        reporter.emit(status(f"checking {len(hosts)} host(s) before downloading"))
    preflight(hosts, fetcher)
    reporter.emit(Info(f"{len(files)} files for {dest}"))
    abandon = threading.Event()
    mode = shared_file_mode()
    tell = _files_status(reporter, len(files))

    def one(file: LockedFile) -> FileOutcome:
        tell(file, 0)
        outcome = _fetch_one(file, dest, fetcher, reporter, abandon, mode)
        tell(file, 1)
        return outcome

    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="neuronctl-wheelhouse")
    try:
        done = tuple(pool.map(one, files))
    except BaseException:
        abandon.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _prune(dest / STAGING)  # once no download is in flight (see _prune)
    fetched = sum(1 for f in done if f.status != "present")
    reporter.emit(Info(f"{dest}: {len(done)} files verified against {request.lock} "
                       f"({fetched} fetched, {len(done) - fetched} already there)"))
    return DownloadOutcome(dest, done)


def _files_status(reporter: Reporter, total: int) -> Any:
    """`status` events as files start and end ("files: 3 of 40 done (torch)"): on a terminal,
    what a re-run is doing while it checks the sha256 of files already there."""
    lock = threading.Lock()
    done = [0]

    def tell(file: LockedFile, finished: int) -> None:
        with lock:
            done[0] += finished
            count = done[0]
        reporter.emit(status(f"files: {count} of {total} done ({label(file)})", count, total,
                             (file.name,)))

    return tell


def _prepare(dest: Path) -> Path:
    """DIR, made if absent (a link to a folder is followed: the user named it), and its staging
    folder, a real one: a link there would put every download, and the sweep of stale partial
    files, outside DIR."""
    from neuronctl.resolvers.download import real_folder

    try:
        dest.mkdir(parents=True, exist_ok=True)
        resolved = dest.resolve()
    except OSError as exc:
        raise InputError(f"-d {dest}: cannot make it a directory: {exc.strerror or exc}") from None
    try:
        real_folder(resolved, resolved / STAGING)
    except OSError as exc:
        raise InputError(f"-d {dest}: cannot make {STAGING} in it: {exc.strerror or exc}") from None
    return resolved


def shared_file_mode() -> int:
    """The mode a new file gets under this process's umask (0o644 under the usual 022): a
    wheelhouse is read by other users and hosts, while a staged download is made 0600 like any
    temporary file. The umask is read from /proc where it can be, not set and reset, which would
    briefly change it for every thread."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            umask = next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask


def _fetch_one(file: LockedFile, dest: Path, fetcher: Any, reporter: Reporter,
               abandon: threading.Event, mode: int) -> FileOutcome:
    from neuronctl.resolvers.download import download_verified

    final = dest / safe_filename(file.filename, file.name)  # not resolved: a link there is
    present = os.path.lexists(final)  # replaced by the verified file, never written through
    if present and verified(file, final):
        reporter.finished(file.filename, f"{file.filename}: already there, sha256 ok")
        return FileOutcome(file, "present")

    def progress(done: int, total: int | None) -> None:
        reporter.progress(file.filename, label(file), done, total)

    progress(0, file.size)
    staged, _ = download_verified(fetcher, file.url, file.filename, dest / STAGING,
                                  sha256=file.sha256, size=file.size, progress=progress,
                                  stop=abandon.is_set)
    try:
        os.chmod(staged, mode)
        os.replace(staged, final)
    except OSError as exc:
        raise FaultError(f"cannot write {final}: {exc.strerror or exc}") from None
    reporter.finished(file.filename, f"verified {file.filename} ({final.stat().st_size:,} bytes, "
                                     "sha256 ok)")
    return FileOutcome(file, "replaced" if present else "downloaded")


def _prune(root: Path) -> None:
    """The staging's now empty folders, below its root, once every download has ended: pruned
    while others ran, a folder another download had just made (`wheels/`, a per-hash one) went
    before it could write there (a flaky "No such file or directory" in CI)."""
    for folder, _subfolders, names in os.walk(root, topdown=False):
        if Path(folder) != root and not names:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
