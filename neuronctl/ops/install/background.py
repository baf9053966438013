"""The work an install does beside its main line, behind one small interface: the new venv made
while the install is planned, the doctor's inspection held open while the engine runs
(probes/held_inspection.py), the doctor's modules loaded meanwhile. Each is started, then either
its result is taken (which waits for it) or it is cancelled (which stops it and undoes what it
did, unless its result was taken: then what it made is the taker's)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Background(Protocol[T_co]):
    def start(self) -> None: ...

    def result(self) -> T_co: ...

    def cancel(self) -> None: ...


def _nothing() -> None:
    pass


class OnThread(Generic[T]):
    """`work` on a daemon thread of its own. cancel() waits up to `patience` seconds for it (a
    thread cannot be stopped), then runs `undo`, even when a second Ctrl-C cuts the wait short."""

    def __init__(self, work: Callable[[], T], *, name: str, undo: Callable[[], object] = _nothing,
                 patience: float = 60.0) -> None:
        self._work, self._undo, self._patience = work, undo, patience
        self._value: T | None = None
        self._error: BaseException | None = None
        self._taken = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to result(), in the thread that takes it
            self._error = exc

    def start(self) -> None:
        self._thread.start()

    def result(self) -> T:
        self._taken = True
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set: the work returned

    def cancel(self) -> None:
        if self._taken:
            return
        self._taken = True
        try:
            if self._thread.is_alive():
                self._thread.join(self._patience)
        finally:
            self._undo()
