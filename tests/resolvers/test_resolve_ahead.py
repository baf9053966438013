"""Issue 36: a lock's rounds of requests. The resolver pins one package at a time, and asks for a
package's dependencies only once it pins it; the pages of the dependencies of the candidate it is
offered first are fetched as soon as that candidate's metadata is in (as uv prefetches), so a
package whose own metadata is slow does not hold up the pages the others need. Pages only, one
level, AHEAD_MOST at the most, on a pool of their own, and cut off once the resolution is done.
On loopback indexes serving wheels this test builds, one of them holding a request open."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.index_server import IndexState, index_server
from support.loopback import closed_port
from support.wheels import build_wheel

from neuronctl.errors import Interrupted
from neuronctl.resolvers.finder import AHEAD_MOST, Finder
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.metadata_fetch import MetadataFetcher
from neuronctl.resolvers.resolve import Req, Resolution, resolve
from neuronctl.resolvers.simple_index import IndexClient
from neuronctl.resolvers.targets import PlatformTarget
from neuronctl.routing import IndexRouting

TARGET = PlatformTarget("3.12", "manylinux_2_28_x86_64")


def _index(tmp_path: Path, wheels: dict[tuple[str, str], tuple[str, ...]],
           state: IndexState | None = None) -> IndexState:
    state = state or IndexState("json")
    for (name, version), requires in wheels.items():
        state.add(build_wheel(tmp_path / "wheels", name, version, requires=requires))
    return state


@contextmanager
def _finder(url: str, cache: Path) -> Iterator[Finder]:
    fetcher = Fetcher(timeout=60, retries=0)
    with Finder(IndexClient(fetcher), IndexRouting({"pypi": url}), MetadataFetcher(fetcher, None, cache),
                ahead=IndexClient(fetcher.branch())) as finder:
        yield finder


def _resolve_on_a_thread(url: str, cache: Path, roots: Sequence[str],
                         into: list[Resolution | BaseException]) -> threading.Thread:
    def work() -> None:
        try:
            with _finder(url, cache) as finder:
                into.append(resolve(finder, TARGET, [Req.parse(r, "--with") for r in roots],
                                    version_filter=lambda name, version: None))
        except BaseException as exc:
            into.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


@contextmanager
def _held(tmp_path: Path, state: IndexState, path: str, roots: Sequence[str]
          ) -> Iterator[list[Resolution | BaseException]]:
    """A resolution of `roots` on a thread of its own, `path` left unanswered until the block
    ends; then what it gave (a Resolution or what it raised)."""
    gate = threading.Event()
    state.gates[path] = gate
    out: list[Resolution | BaseException] = []
    with index_server(state) as base:
        worker = _resolve_on_a_thread(f"{base}/simple", tmp_path, roots, out)
        try:
            yield out
        finally:
            gate.set()
            worker.join(30)


def _asked(state: IndexState, path: str, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with state.lock:
            if any(hit[1] == path for hit in state.hits):
                return True
        time.sleep(0.01)
    return False


def _resolved_pins(result: Resolution | BaseException) -> dict[str, str]:
    assert isinstance(result, Resolution), result
    return {n: str(p.version) for n, p in result.pins.items()}


def test_a_dependencys_page_is_fetched_while_another_package_waits_for_its_metadata(
        tmp_path: Path) -> None:
    """`able` sorts first, so the resolver waits for its metadata before it pins `app`: app's
    dependency `lib` has its page asked for meanwhile, and nothing more (no version guessed, so
    no metadata of lib's, and not lib's own dependency `leaf`: one level)."""
    state = _index(tmp_path, {("able", "1.0"): (), ("app", "1.0"): ("lib>=1",),
                              ("lib", "1.0"): ("leaf",), ("lib", "2.0"): ("leaf",), ("leaf", "1.0"): ()})
    with _held(tmp_path, state, "/files/able-1.0-py3-none-any.whl.metadata",
               ["able==1.0", "app==1.0"]) as out:
        assert _asked(state, "/simple/lib/"), "lib's page was not asked for while able waited"
        time.sleep(0.2)  # what else would go out ahead, would by now
        with state.lock:
            early = {hit[1] for hit in state.hits}
        assert "/simple/leaf/" not in early
        assert not any(path.startswith("/files/lib-") for path in early)
    (result,) = out
    assert _resolved_pins(result) == {"app": "1.0", "able": "1.0", "leaf": "1.0", "lib": "2.0"}


def test_a_page_fetched_ahead_that_nothing_needs_is_cut_off_not_waited_for(tmp_path: Path) -> None:
    """app 2.0, offered first, depends on `ghost`, whose page never answers; `pin==1.0` then
    asks for app<2, and the resolution, done without ghost, ends while that page still hangs.
    pin's metadata is held until ghost's page is asked for: on a loaded machine the resolution
    could otherwise end, and cut the pool off, before the request ahead went out."""
    state = _index(tmp_path, {("app", "2.0"): ("ghost",), ("app", "1.0"): (),
                              ("pin", "1.0"): ("app<2",)})
    state.hostile["/simple/ghost/"] = "hang"
    pin_metadata = state.gates["/files/pin-1.0-py3-none-any.whl.metadata"] = threading.Event()
    out: list[Resolution | BaseException] = []
    with index_server(state) as base:
        try:
            worker = _resolve_on_a_thread(f"{base}/simple", tmp_path, ["app", "pin==1.0"], out)
            asked = _asked(state, "/simple/ghost/")
            pin_metadata.set()
            assert asked, "ghost's page was never fetched ahead"
            worker.join(20)  # its timeout is 60 s: only the cut-off ends it by then
            assert not worker.is_alive(), "the resolution waited for a page it did not need"
        finally:
            state.released.set()
    (result,) = out
    assert _resolved_pins(result) == {"app": "1.0", "pin": "1.0"}


def _settled(state: IndexState, prefix: str, within: float = 20.0) -> int:
    """How many distinct paths under `prefix` were asked for, once no new one came for 0.5 s."""
    deadline, seen, quiet_since = time.monotonic() + within, -1, time.monotonic()
    while time.monotonic() < deadline:
        with state.lock:
            count = len({hit[1] for hit in state.hits if hit[1].startswith(prefix)})
        if count != seen:
            seen, quiet_since = count, time.monotonic()
        elif time.monotonic() - quiet_since > 0.5:
            break
        time.sleep(0.02)
    return seen


def test_a_guess_with_hundreds_of_dependencies_fetches_at_most_ahead_most_pages(
        tmp_path: Path) -> None:
    """app 2.0, offered first, lists 600 dependencies no index has. While the resolver waits
    for pin's metadata, AHEAD_MOST of their pages are asked for ahead and no more; pin then asks
    for app<2, the resolution pins app 1.0, never needs them, and their 404s fail nothing."""
    many = tuple(f"dep{i}" for i in range(600))
    state = _index(tmp_path, {("app", "2.0"): many, ("app", "1.0"): (), ("pin", "1.0"): ("app<2",)})
    with _held(tmp_path, state, "/files/pin-1.0-py3-none-any.whl.metadata", ["app", "pin==1.0"]) as out:
        asked = _settled(state, "/simple/dep")
    assert asked == AHEAD_MOST < len(many)
    (result,) = out
    assert _resolved_pins(result) == {"app": "1.0", "pin": "1.0"}


def test_a_page_fetched_ahead_in_a_moments_outage_is_fetched_again_when_needed(
        tmp_path: Path) -> None:
    """lib's page answers 503 once, to the fetch ahead (no retries here); the resolver, asking
    for it once `able` is in, fetches it again and resolves, as it would without fetching ahead."""
    state = _index(tmp_path, {("able", "1.0"): (), ("app", "1.0"): ("lib",), ("lib", "1.0"): ()})
    state.fail_first["/simple/lib/"] = 1
    with _held(tmp_path, state, "/files/able-1.0-py3-none-any.whl.metadata",
               ["able==1.0", "app==1.0"]) as out:
        assert _asked(state, "/simple/lib/")
    (result,) = out
    assert _resolved_pins(result) == {"able": "1.0", "app": "1.0", "lib": "1.0"}
    assert sum(hit[1] == "/simple/lib/" for hit in state.hits) == 2


def test_a_guess_never_downloads_a_whole_wheel(tmp_path: Path) -> None:
    """An index that ignores range requests and has no sidecars: the metadata of app 2.0, the
    candidate offered first but never pinned (pin asks for app<2), is not downloaded whole; app
    1.0's, which the resolver needs, is."""
    state = _index(tmp_path, {("app", "2.0"): (), ("app", "1.0"): (), ("pin", "1.0"): ("app<2",)},
                   IndexState("neuron", ranges=False))
    with index_server(state) as base, _finder(f"{base}/simple", tmp_path) as finder:
        result = resolve(finder, TARGET, [Req.parse("app", "--with"), Req.parse("pin==1.0", "--with")],
                         version_filter=lambda name, version: None)
    assert _resolved_pins(result) == {"app": "1.0", "pin": "1.0"}
    whole = {hit[1].rsplit("/", 1)[-1] for hit in state.hits
             if hit[1].startswith("/files/") and not hit[2]}
    assert "app-2.0-py3-none-any.whl" not in whole
    assert "app-1.0-py3-none-any.whl" in whole


def _stopped(fetcher: Fetcher, url: str) -> bool:
    """Whether a request through `fetcher` is refused as stopped (else it fails to connect)."""
    with pytest.raises(Exception) as raised, fetcher.attempt(url):
        pass
    return isinstance(raised.value, Interrupted)


def test_a_branch_shares_the_session_and_stops_with_its_trunk_not_the_other_way() -> None:
    url = f"http://127.0.0.1:{closed_port()}/"
    trunk = Fetcher(timeout=5)
    branch, other = trunk.branch(), trunk.branch()
    assert branch.session is trunk.session and branch.stats is trunk.stats
    branch.abort()
    assert _stopped(branch, url) and not _stopped(trunk, url) and not _stopped(other, url)
    trunk.abort()
    assert _stopped(trunk, url) and _stopped(other, url) and _stopped(trunk.branch(), url)
