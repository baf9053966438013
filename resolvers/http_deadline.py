"""Whole-request deadlines and prompt stops for requests/urllib3.

requests' `timeout` bounds each socket operation, not a request: a server that sends one byte
every second keeps a request alive for ever, and a thread blocked in a read cannot be told to
stop. Here every request runs under a Guard. The connection classes below tell the current
thread's guard which socket its request uses (and forget it when the connection goes back to the
pool), and one watchdog thread shuts that socket down when the guard's deadline passes or its
stop() turns true: the blocked read returns at once, the request fails, and the guard says why.
The connection classes are in http_adapter (they import requests, which loads on first use).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

POLL_S = 0.1
"""How often the watchdog looks at stop() callbacks: the bound on how late a stop is noticed."""

DEADLINE = "deadline"
STOPPED = "stopped"


class Guard:
    """One request's deadline (time.monotonic) and stop condition, and the socket it uses."""

    def __init__(self, deadline: float, stop: Callable[[], bool] | None = None) -> None:
        self.deadline = deadline
        self.stop = stop
        self.reason: str | None = None
        """DEADLINE or STOPPED once the guard has cut its request off."""
        self.allowance = ""
        """What the deadline grants beyond --timeout, in words (a download's size at a rate)."""
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def attach(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            if self.reason is not None and sock is not None:
                _shut(sock)

    def detach(self, sock: socket.socket | None) -> None:
        with self._lock:
            if self._sock is sock:
                self._sock = None

    def trip(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            if self._sock is not None:
                _shut(self._sock)

    def due(self, now: float) -> str | None:
        if self.stop is not None and self.stop():
            return STOPPED
        return DEADLINE if now >= self.deadline else None


def _shut(sock: socket.socket) -> None:
    # socket.socket's own shutdown (an SSLSocket's would drop its TLS state under the reader):
    # a read blocked in another thread returns at once.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watchdog:
    def __init__(self) -> None:
        self._guards: set[Guard] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, guard: Guard) -> None:
        with self._cond:
            self._guards.add(guard)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="neuronctl-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove(self, guard: Guard) -> None:
        with self._cond:
            self._guards.discard(guard)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._guards:
                    self._cond.wait()
                guards = list(self._guards)
            now = time.monotonic()
            for guard in guards:
                reason = guard.due(now)
                if reason is not None:
                    guard.trip(reason)
                    self.remove(guard)
            with self._cond:
                self._cond.wait(POLL_S)


_WATCHDOG = _Watchdog()
_current = threading.local()


@contextlib.contextmanager
def guarded(guard: Guard, *, keep: Callable[[], bool] = lambda: False) -> Iterator[Guard]:
    """Run the block's requests (in this thread) under `guard`. On leaving, the guard stops
    watching unless keep() says a streamed response still reads under it; it then ends when its
    connection goes back to the pool or its deadline passes."""
    _WATCHDOG.add(guard)
    _current.guard = guard
    try:
        yield guard
    finally:
        _current.guard = None
        if not keep():
            _WATCHDOG.remove(guard)
            guard.attach(None)


def current_guard() -> Guard | None:
    """The guard of the request this thread is making, if any."""
    guard: Guard | None = getattr(_current, "guard", None)
    return guard
