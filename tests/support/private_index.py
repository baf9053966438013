"""A private index behind HTTP Basic auth, and the check that its credentials appear nowhere."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from urllib.parse import quote

from support.index_server import IndexHandler, IndexState
from support.loopback import serving
from support.universe import Universe

USER, PASSWORD = "alice", "pa:ss@w0rd/HUSH"

ENCODED = f"{USER}:{quote(PASSWORD, safe='')}"
GOOD = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert "HUSH" not in text and quote(PASSWORD, safe="") not in text, text
        assert GOOD.split()[1] not in text


@contextmanager
def private_universe(wheels: dict) -> Iterator[tuple[Universe, list[str | None], list[str | None]]]:
    """The test universe with its PyPI-like index behind Basic auth; returns the Authorization
    headers the private index and the other two indexes received."""
    private_seen: list[str | None] = []
    others_seen: list[str | None] = []

    class Private(IndexHandler):
        def _get(self) -> None:
            private_seen.append(self.headers.get("Authorization"))
            if self.headers.get("Authorization") != GOOD:
                self._send(401, b"who are you", "text/plain", {"WWW-Authenticate": 'Basic realm="x"'})
                return
            super()._get()

    class Public(IndexHandler):
        def _get(self) -> None:
            others_seen.append(self.headers.get("Authorization"))
            super()._get()

    states = {"json": IndexState("json"), "html": IndexState("html"), "neuron": IndexState("neuron")}
    for kind, entries in wheels.items():
        for wheel, opts in entries:
            states[kind].add(wheel, **opts)
    with ExitStack() as stack:
        urls = {}
        for name, kind, base in (("pypi", "json", Private), ("pytorch-cpu", "html", Public),
                                 ("neuron", "neuron", Public)):
            handler = type("Handler", (base,), {"state": states[kind]})
            urls[name] = stack.enter_context(serving(handler)) + "/simple"
        yield Universe(states["json"], states["html"], states["neuron"], urls), private_seen, others_seen
