"""How an operation tells the outside what is happening while it runs.

Operations never print: they hand events and progress to a Reporter. The CLI's reporter renders
them with rich (or one line each without a terminal); a test's `CollectingReporter` keeps them,
so a test can wait for an event instead of sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

EventKind = Literal["info", "note", "warning", "waiting", "step", "done", "status"]
"""`status`: what the operation is doing right now ("checks: 3 of 16 done; running
device.probe"), for a live status line on a terminal; each replaces the one before, and a
renderer without a terminal drops them (they are never a result)."""


def status(message: str, done: int | None = None, total: int | None = None,
           running: tuple[str, ...] = ()) -> Event:
    """A `status` event: what runs now, and how far along (done of total) when that is known."""
    return Event("status", message, {"done": done, "total": total, "running": running})


@dataclass(frozen=True)
class Event:
    """One thing an operation tells the outside while it runs (the CLI renders, tests collect)."""

    kind: EventKind
    message: str
    data: Mapping[str, object] = field(default_factory=dict)


class Reporter(Protocol):
    def emit(self, event: Event) -> None:
        """A line-sized event (a warning, a note, a step begun or done)."""

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        """Bytes (or items) of one task so far; `key` tells tasks apart, `label` names it."""

    def finished(self, key: str, message: str) -> None:
        """Task `key` is complete; `message` says how it ended (e.g. 'verified, 1.2 MB')."""


class NullReporter:
    """Says nothing (--json, --quiet, and operations run for another operation)."""

    def emit(self, event: Event) -> None:
        pass

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        pass

    def finished(self, key: str, message: str) -> None:
        pass


class CollectingReporter:
    """Keeps every event (thread-safe) and lets a caller wait for one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.finished_tasks: list[tuple[str, str]] = []
        self._changed = threading.Condition()

    def emit(self, event: Event) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        pass

    def finished(self, key: str, message: str) -> None:
        with self._changed:
            self.finished_tasks.append((key, message))
            self._changed.notify_all()

    def messages(self, kind: EventKind | None = None) -> list[str]:
        with self._changed:
            return [e.message for e in self.events if kind is None or e.kind == kind]

    def wait_for(self, kind: EventKind, timeout: float) -> Event | None:
        """The first event of `kind`, waiting up to `timeout` seconds for it."""
        with self._changed:
            self._changed.wait_for(lambda: any(e.kind == kind for e in self.events), timeout)
            return next((e for e in self.events if e.kind == kind), None)
