"""Real package indexes on 127.0.0.1 for the resolver, lock and install tests.

Three kinds, like the real ones:
- "json": PyPI-like PEP 691 JSON with PEP 658 sidecars, sizes, upload times;
- "html": PyTorch-like PEP 503 HTML, root-relative links with #sha256= fragments, no sidecars;
- "neuron": Neuron-repo-like HTML with no sidecars, honouring (or, with ranges=False, ignoring)
  HTTP range requests.
Every request and every byte served is counted, so tests and benchmarks can compare peers.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote, unquote

from packaging.utils import canonicalize_name, parse_wheel_filename

from support.loopback import QuietHandler, serving


@dataclass
class Entry:
    path: Path
    yanked: str | bool = False
    requires_python: str | None = None
    wrong_hash: bool = False

    @property
    def filename(self) -> str:
        return self.path.name

    @functools.cached_property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        with self.path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    @functools.cached_property
    def metadata(self) -> bytes:
        with zipfile.ZipFile(self.path) as zf:
            name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            return zf.read(name)

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        with self.path.open("rb") as fh:
            fh.seek(start)
            return fh.read() if end is None else fh.read(end - start)


@dataclass
class IndexState:
    kind: str
    ranges: bool = True
    projects: dict[str, list[Entry]] = field(default_factory=dict)
    hits: list[tuple[str, str, str]] = field(default_factory=list)
    """(method, path, Range header)."""
    bytes_sent: int = 0
    fail_first: dict[str, int] = field(default_factory=dict)
    stall: dict[str, tuple[float, int]] = field(default_factory=dict)
    """path -> (seconds to sleep before answering, how many requests to stall)."""
    gates: dict[str, threading.Event] = field(default_factory=dict)
    """path -> an Event its replies wait for (30 s at most): a test holds a request open."""
    cut_after: dict[str, int] = field(default_factory=dict)
    """file name -> close the connection after this many bytes of it."""
    trickle: dict[str, tuple[int, float]] = field(default_factory=dict)
    """file name -> (bytes per write, seconds between writes): a slow download."""
    trickling: threading.Event = field(default_factory=threading.Event)
    """Set once a trickled file has started going out."""
    corrupt_page: dict[str, str] = field(default_factory=dict)
    hostile: dict[str, str] = field(default_factory=dict)
    """request path -> one of HOSTILE_MODES: how this server attacks the client there."""
    hash_override: dict[str, str] = field(default_factory=dict)
    """file name -> the sha256 text its index page shows (e.g. a path, to try a traversal)."""
    loris_interval: float = 1.5
    """Seconds between the bytes of a slow-loris reply."""
    released: threading.Event = field(default_factory=threading.Event)
    """Set to let 'hang' replies end (the tests set it when done)."""
    corrupt_sidecar: bool = False
    latency: float = 0.0
    """Seconds every request (GET and HEAD) waits before it is read on: the round trip to a real
    index, for the benchmarks (connection set-up is not delayed)."""
    in_flight: int = 0
    max_in_flight: int = 0
    """The most requests this server was answering at once."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, wheel: Path, **kw: object) -> None:
        name = str(parse_wheel_filename(wheel.name)[0])
        self.projects.setdefault(name, []).append(Entry(wheel, **kw))  # type: ignore[arg-type]

    def reset_counts(self) -> None:
        with self.lock:
            self.hits.clear()
            self.bytes_sent = 0


def _shown_hash(state: IndexState, e: Entry) -> str:
    return state.hash_override.get(e.filename) or ("0" * 64 if e.wrong_hash else e.sha256)


def _project_page(state: IndexState, project: str, base: str) -> tuple[str, str]:
    entries = state.projects[project]
    if state.kind == "json":
        files = []
        for e in entries:
            item = {"filename": e.filename, "url": f"/files/{quote(e.filename)}",
                    "hashes": {"sha256": _shown_hash(state, e)},
                    "size": e.path.stat().st_size, "upload-time": "2026-10-19T12:00:00.123456Z",
                    "core-metadata": {"sha256": hashlib.sha256(e.metadata).hexdigest()}}
            if e.requires_python:
                item["requires-python"] = e.requires_python
            if e.yanked:
                item["yanked"] = e.yanked
            files.append(item)
        return "application/vnd.pypi.simple.v1+json", json.dumps(
            {"meta": {"api-version": "1.1"}, "name": project, "files": files})
    links = []
    for e in entries:
        digest = _shown_hash(state, e)
        attrs = f'href="{base}/files/{quote(e.filename)}#sha256={digest}"'
        if e.requires_python:
            attrs += f' data-requires-python="{html.escape(e.requires_python)}"'
        if e.yanked:
            attrs += f' data-yanked="{html.escape(e.yanked if isinstance(e.yanked, str) else "")}"'
        links.append(f"<a {attrs}>{html.escape(e.filename)}</a><br/>")
    return "text/html", f"<!DOCTYPE html><html><body><h1>Links for {project}</h1>\n" \
        + "\n".join(links) + "\n</body></html>\n"


class IndexHandler(QuietHandler):
    state: ClassVar[IndexState]
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do; else delayed ACKs add 40 ms a request

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        with self.state.lock:
            self.state.bytes_sent += len(body)

    def parse_request(self) -> bool:
        if self.state.latency:
            time.sleep(self.state.latency)
        return super().parse_request()

    def do_GET(self) -> None:
        st = self.state
        with st.lock:
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            self._get()
        finally:
            with st.lock:
                st.in_flight -= 1

    def _get(self) -> None:
        st = self.state
        path = unquote(self.path.split("?", 1)[0])
        with st.lock:
            st.hits.append((self.command, path, self.headers.get("Range", "")))
            remaining = st.fail_first.get(path, 0)
            if remaining:
                st.fail_first[path] = remaining - 1
        if remaining:
            self._send(503, b"busy", "text/plain")
            return
        with st.lock:
            seconds, times = st.stall.get(path, (0.0, 0))
            if times:
                st.stall[path] = (seconds, times - 1)
        if times:
            time.sleep(seconds)
        if path in st.gates:
            st.gates[path].wait(30)
        if path in st.hostile:
            HOSTILE_MODES[st.hostile[path]](self)
            return
        if path.startswith("/simple/"):
            project = str(canonicalize_name(path[len("/simple/"):].strip("/")))
            if project not in st.projects:
                self._send(404, b"not found", "text/plain")
                return
            if project in st.corrupt_page:
                body = st.corrupt_page[project]
                ctype = "text/html" if body.lstrip().startswith("<") else \
                    "application/vnd.pypi.simple.v1+json"
                self._send(200, body.encode(), ctype)
                return
            ctype, body = _project_page(st, project, "")
            etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:16] + '"'
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._send(200, body.encode(), ctype, {"ETag": etag})
            return
        if path.startswith("/files/"):
            self._file(path[len("/files/"):])
            return
        self._send(404, b"not found", "text/plain")

    def _entry(self, filename: str) -> Entry | None:
        name = filename[:-len(".metadata")] if filename.endswith(".metadata") else filename
        for entries in self.state.projects.values():
            for e in entries:
                if e.filename == name:
                    return e
        return None

    def _file(self, filename: str) -> None:
        st = self.state
        entry = self._entry(filename)
        if entry is None:
            self._send(404, b"not found", "text/plain")
            return
        if filename.endswith(".metadata"):
            if st.kind != "json":
                self._send(404, b"not found", "text/plain")
                return
            body = entry.metadata + (b"Requires-Dist: evil\n" if st.corrupt_sidecar else b"")
            self._send(200, body, "application/octet-stream")
            return
        size = entry.path.stat().st_size
        rng = self.headers.get("Range", "")
        if st.ranges and rng.startswith("bytes="):
            spec = rng[len("bytes="):]
            start_s, _, end_s = spec.partition("-")
            if not start_s:
                start, end = max(0, size - int(end_s)), size
            else:
                start, end = int(start_s), min(size, int(end_s) + 1 if end_s else size)
            self._send(206, entry.read(start, end), "application/octet-stream",
                       {"Content-Range": f"bytes {start}-{end - 1}/{size}", "Accept-Ranges": "bytes"})
            return
        data = entry.read()
        if self.command == "HEAD":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            if st.ranges:
                self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            return
        pace, cut = st.trickle.get(filename), st.cut_after.get(filename)
        if pace is None and cut is None:
            self._send(200, data, "application/octet-stream")
            return
        # The whole length announced, then less of it (cut), or all of it slowly (trickle).
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.close_connection = True
        if cut is not None:
            self.wfile.write(data[:cut])
            with st.lock:
                st.bytes_sent += cut
            return
        assert pace is not None
        st.trickling.set()
        try:
            for start in range(0, len(data), pace[0]):
                self.wfile.write(data[start:start + pace[0]])
                time.sleep(pace[1])
        except OSError:  # the client went away
            pass

    do_HEAD = do_GET


@contextmanager
def index_server(state: IndexState) -> Iterator[str]:
    handler = type("Handler", (IndexHandler,), {"state": state})
    with serving(handler) as url:
        yield url


# Hostile replies: each takes the handler and answers (or does not) the way an attacker would.

def _loris(h: IndexHandler) -> None:
    """A whole reply promised, then one byte every loris_interval seconds."""
    body = b'{"meta": {"api-version": "1.1"}, "name": "x", "files": []}' + b" " * 10_000
    h.send_response(200)
    h.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.close_connection = True
    try:
        for i in range(len(body)):
            h.wfile.write(body[i:i + 1])
            h.wfile.flush()
            if h.state.released.wait(h.state.loris_interval):
                return
    except OSError:
        pass


def _hang(h: IndexHandler) -> None:
    """The connection accepted, the request read, and never a byte back."""
    h.close_connection = True
    h.state.released.wait(120)


def _endless(h: IndexHandler) -> None:
    """200 with no length, then zeros until the client goes away."""
    h.send_response(200)
    h.send_header("Content-Type", "application/octet-stream")
    h.end_headers()
    h.close_connection = True
    block = b"\0" * (1 << 16)
    try:
        while not h.state.released.is_set():
            h.wfile.write(block)
            with h.state.lock:
                h.state.bytes_sent += len(block)
    except OSError:
        pass


def _short(h: IndexHandler) -> None:
    """Content-Length 100000, then 10 bytes and the connection closed."""
    h.send_response(200)
    h.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
    h.send_header("Content-Length", "100000")
    h.end_headers()
    h.wfile.write(b'{"meta": {')
    h.close_connection = True


def _bad_gzip(h: IndexHandler) -> None:
    body = b"this is not gzip at all" * 10
    h._send(200, body, "application/vnd.pypi.simple.v1+json", {"Content-Encoding": "gzip"})


def _redirect(location: str) -> Callable[[IndexHandler], None]:
    def reply(h: IndexHandler) -> None:
        h.send_response(302)
        h.send_header("Location", location if location else h.path)
        h.send_header("Content-Length", "0")
        h.end_headers()
    return reply


def _bad_url(h: IndexHandler) -> None:
    """A page whose only file has a URL no client can fetch."""
    name = h.path.rstrip("/").rsplit("/", 1)[-1]
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": [
        {"filename": f"{name}-1.0-py3-none-any.whl", "url": "http://127.0.0.1:99999999/x.whl",
         "hashes": {"sha256": "a" * 64}}]})
    h._send(200, body.encode(), "application/vnd.pypi.simple.v1+json")


HOSTILE_MODES: dict[str, Callable[[IndexHandler], None]] = {
    "slow-loris": _loris, "hang": _hang, "endless": _endless, "short": _short,
    "bad-gzip": _bad_gzip, "redirect-loop": _redirect(""),
    "redirect-file": _redirect("file:///etc/passwd"), "redirect-ftp": _redirect("ftp://127.0.0.1/x"),
    "bad-url": _bad_url,
}


def zip_bomb_wheel(outdir: Path, name: str = "bomb", version: str = "1.0", mb: int = 200) -> Path:
    """A small wheel whose METADATA inflates to `mb` MB (the zip directory says so honestly)."""
    outdir.mkdir(parents=True, exist_ok=True)
    wheel = outdir / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open(f"{info}/METADATA", "w", force_zip64=True) as fh:
            fh.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: ".encode())
            block = b"A" * (1 << 20)
            for _ in range(mb):
                fh.write(block)
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return wheel
