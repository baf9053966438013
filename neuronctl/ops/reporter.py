"""How an operation tells the outside what is happening while it runs.

Operations never print: they hand typed events and progress to a Reporter. Each event is a
small frozen record (StepStarted, StepDone, Note, Warn, Info, Waiting, Status): what it
carries is in its fields, and the CLI's reporter (cli/progress.py) renders each by its type.
A test's `CollectingReporter` keeps them, so a test can wait for an event instead of sleeping.
An operation with more to say declares its own subclass beside it (install's PlanReady carries
its plan, the doctor's DoctorStarted its checks, smoke's SmokeStarted its model): a command that
never runs that operation does not create the class.
"""

from __future__ import annotations

import threading
from typing import ClassVar, Literal, Protocol

from msgspec import Struct

EventKind = Literal["info", "note", "warning", "waiting", "step", "done", "status"]


class Line(Struct, frozen=True):
    """What every event has: one line that says it, and its kind (how a renderer files it)."""

    message: str
    kind: ClassVar[EventKind] = "info"


class StepStarted(Line, frozen=True):
    """A step of the operation begins (`step` names it, for a handler; `message` says it)."""

    step: str = ""
    kind: ClassVar[EventKind] = "step"


class StepDone(Line, frozen=True):
    """A step, or the whole operation, is done; `message` says how it ended."""

    step: str = ""
    kind: ClassVar[EventKind] = "done"


class Note(Line, frozen=True):
    """Something worth knowing that changes nothing (stderr, `note: ...`)."""

    kind: ClassVar[EventKind] = "note"


class Warn(Line, frozen=True):
    """Something that may be wrong (stderr, `warning: ...`)."""

    kind: ClassVar[EventKind] = "warning"


class Info(Line, frozen=True):
    """A plain result line ("wrote pylock.toml"), for stdout."""


class Waiting(Line, frozen=True):
    """The operation waits on something outside it (a lock, a server)."""

    kind: ClassVar[EventKind] = "waiting"


class Status(Line, frozen=True):
    """What the operation is doing right now ("checks: 3 of 16 done; running device.probe"),
    for a live status line on a terminal; each replaces the one before, and a renderer without
    a terminal drops them (they are never a result)."""

    done: int | None = None
    total: int | None = None
    running: tuple[str, ...] = ()
    kind: ClassVar[EventKind] = "status"


class Written(StepDone, frozen=True):
    """A file the operation wrote (an imported manifest, the stored release data, a config)."""

    path: str = ""
    count: int | None = None
    changed: tuple[str, ...] = ()


AnyEvent = StepStarted | StepDone | Note | Warn | Info | Waiting | Status


def status(message: str, done: int | None = None, total: int | None = None,
           running: tuple[str, ...] = ()) -> Status:
    """A Status event: what runs now, and how far along (done of total) when that is known."""
    return Status(message, done, total, running)


class Reporter(Protocol):
    def emit(self, event: AnyEvent) -> None:
        """A line-sized event (a warning, a note, a step begun or done)."""

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        """Bytes (or items) of one task so far; `key` tells tasks apart, `label` names it."""

    def finished(self, key: str, message: str) -> None:
        """Task `key` is complete; `message` says how it ended (e.g. 'verified, 1.2 MB')."""


class NullReporter:
    """Says nothing (--json, --quiet, and operations run for another operation)."""

    def emit(self, event: AnyEvent) -> None:
        pass

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        pass

    def finished(self, key: str, message: str) -> None:
        pass


class CollectingReporter:
    """Keeps every event (thread-safe) and lets a caller wait for one."""

    def __init__(self) -> None:
        self.events: list[AnyEvent] = []
        self.finished_tasks: list[tuple[str, str]] = []
        self._changed = threading.Condition()

    def emit(self, event: AnyEvent) -> None:
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

    def wait_for(self, kind: EventKind | type[object], timeout: float) -> AnyEvent | None:
        """The first event of `kind` (a kind name, or an event class), waiting up to `timeout`
        seconds for it."""
        def match(e: AnyEvent) -> bool:
            return isinstance(e, kind) if isinstance(kind, type) else e.kind == kind

        with self._changed:
            self._changed.wait_for(lambda: any(match(e) for e in self.events), timeout)
            return next((e for e in self.events if match(e)), None)
