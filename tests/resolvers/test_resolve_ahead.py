"""Issue 36: a lock's rounds of requests. The resolver pins one package at a time, and a package
asks for its dependencies only once it is pinned; each dependency's page and likely metadata are
fetched as soon as its parent's metadata is in (as uv prefetches), so that a package still waiting
for its own metadata does not hold up the rest of the tree. On loopback indexes this package
builds, one of them holding a request open."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from support.index_server import IndexState, index_server
from support.wheels import build_wheel

from neuronctl.resolvers.finder import Finder
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.metadata_fetch import MetadataFetcher
from neuronctl.resolvers.resolve import Req, Resolution, resolve
from neuronctl.resolvers.simple_index import IndexClient
from neuronctl.resolvers.targets import PlatformTarget
from neuronctl.routing import IndexRouting

TARGET = PlatformTarget("3.12", "manylinux_2_28_x86_64")
WHEELS = {  # (name, version): its dependencies
    ("held", "1.0"): (),
    ("app", "1.0"): ("lib>=1",),
    ("lib", "1.0"): ("leaf",),
    ("lib", "2.0"): ("leaf",),
    ("leaf", "1.0"): (),
    ("unused", "1.0"): (),
}


def _state(tmp_path: Path) -> IndexState:
    state = IndexState("json")
    for (name, version), requires in WHEELS.items():
        state.add(build_wheel(tmp_path / "wheels", name, version, requires=requires))
    return state


def _resolve(url: str, cache: Path, into: list[Resolution | BaseException]) -> None:
    fetcher = Fetcher(timeout=10, retries=0)
    try:
        with Finder(IndexClient(fetcher), IndexRouting({"pypi": url}),
                    MetadataFetcher(fetcher, None, cache)) as finder:
            roots = [Req.parse("held==1.0", "--with"), Req.parse("app==1.0", "--with")]
            into.append(resolve(finder, TARGET, roots, version_filter=lambda name, version: None))
    except BaseException as exc:
        into.append(exc)


def _asked(state: IndexState, path: str, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with state.lock:
            if any(hit[1] == path for hit in state.hits):
                return True
        time.sleep(0.01)
    return False


def test_the_tree_below_a_package_is_fetched_while_another_waits_for_its_metadata(
        tmp_path: Path) -> None:
    """`held` sorts first, so the resolver waits on its metadata before it pins `app`: the
    pages and metadata of app's dependency `lib` (the newest that fits, 2.0) and of lib's own
    `leaf` are all asked for while held's metadata is still held back."""
    state = _state(tmp_path)
    gate = threading.Event()
    state.gates["/files/held-1.0-py3-none-any.whl.metadata"] = gate
    out: list[Resolution | BaseException] = []
    with index_server(state) as base:
        worker = threading.Thread(target=_resolve, args=(f"{base}/simple", tmp_path, out), daemon=True)
        worker.start()
        try:
            for path in ("/simple/lib/", "/files/lib-2.0-py3-none-any.whl.metadata",
                         "/simple/leaf/", "/files/leaf-1.0-py3-none-any.whl.metadata"):
                assert _asked(state, path), f"{path} not asked for while held's metadata was held"
            assert not gate.is_set()
        finally:
            gate.set()
            worker.join(30)
    (result,) = out
    assert isinstance(result, Resolution), result
    assert {n: str(p.version) for n, p in result.pins.items()} == {
        "app": "1.0", "held": "1.0", "leaf": "1.0", "lib": "2.0"}
    assert not any("unused" in hit[1] for hit in state.hits)  # nobody asked for it


def test_a_guess_the_resolution_does_not_take_costs_a_fetch_and_nothing_else(tmp_path: Path) -> None:
    """`lib<2` from a second root: the guess from app's `lib>=1` alone (2.0) is asked for
    ahead, and its metadata never comes (the connection closes unanswered); the resolution
    still pins 1.0 and fails nothing, since it never needs 2.0's metadata."""
    state = _state(tmp_path)
    state.add(build_wheel(tmp_path / "wheels", "pin", "1.0", requires=("lib<2",)))
    state.hostile["/files/lib-2.0-py3-none-any.whl.metadata"] = "hang"
    state.released.set()  # the hostile 'hang' reply ends at once: no answer, a closed connection
    fetcher = Fetcher(timeout=10, retries=0)
    with index_server(state) as base, Finder(IndexClient(fetcher), IndexRouting({"pypi": f"{base}/simple"}),
                                             MetadataFetcher(fetcher, None, tmp_path)) as finder:
        roots = [Req.parse("app==1.0", "--with"), Req.parse("pin==1.0", "--with")]
        result = resolve(finder, TARGET, roots, version_filter=lambda name, version: None)
    assert {n: str(p.version) for n, p in result.pins.items()} == {
        "app": "1.0", "leaf": "1.0", "lib": "1.0", "pin": "1.0"}

