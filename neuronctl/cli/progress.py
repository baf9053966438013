"""The CLI's Reporter: renders what an operation reports while it runs.

Notes, warnings and waits go to stderr, plain results ("applied: ...") to stdout, steps to the
handlers the command gives (install prints its plan that way). Download progress is a set of
rich bars on a terminal, labelled as the operation labels each task (name and version, never
markup), and one line per finished file otherwise (logs, CI).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

import click

from neuronctl.cli.app import _is_tty, terminal_text
from neuronctl.ops.reporter import Event

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.status import Status

StepHandler = Callable[[Event], None]


class CliReporter:
    def __init__(self, console: Callable[[], Console], *,
                 steps: Mapping[str, StepHandler] | None = None, bars: bool | None = None) -> None:
        """console: makes the console the bars draw on (stderr), when the first bar appears;
        steps: step name -> handler; bars: draw bars (default: when stderr is a terminal)."""
        self._console = console
        self._steps = dict(steps or {})
        self._bars_wanted = sys.stderr.isatty() if bars is None else bars
        self._bars: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._lock = threading.Lock()
        self._line = StatusLine(console, enabled=self._bars_wanted)

    def emit(self, event: Event) -> None:
        if event.kind == "status":  # a live line where bars would be drawn, and while none is
            with self._lock:
                if self._bars is None:
                    self._line.emit(event)
            return
        self.stop_bars()  # a line is never drawn into the bars
        if event.kind == "step":
            handler = self._steps.get(str(event.data.get("step", "")))
            if handler is not None:
                handler(event)
        elif event.kind in ("note", "warning"):  # messages name files, URLs, packages: data
            click.echo(f"{event.kind}: {terminal_text(event.message, None, lines=True)}", err=True)
        elif event.kind == "waiting":
            click.echo(terminal_text(event.message, None, lines=True), err=True)
        else:
            click.echo(terminal_text(event.message, None, lines=True))

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        if not self._bars_wanted:
            return
        with self._lock:
            if self._bars is None:
                self._line.stop()  # one live display at a time: the bars take over
            bars = self._bars or self._start_bars()
            task = self._tasks.get(key)
            if task is None:
                self._tasks[key] = bars.add_task(label, total=total, completed=done)
            else:
                bars.update(task, completed=done, total=total)

    def finished(self, key: str, message: str) -> None:
        if not self._bars_wanted:
            click.echo(terminal_text(message, None, lines=True), err=True)

    def _start_bars(self) -> Progress:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        # markup=False: a label is data (a package name), never rich markup.
        bars = Progress(TextColumn("{task.description}", markup=False), BarColumn(bar_width=20),
                        DownloadColumn(), TransferSpeedColumn(), console=self._console(),
                        transient=True)
        bars.start()
        self._bars = bars
        return bars

    def stop_bars(self) -> None:
        self._line.stop()
        with self._lock:
            bars, self._bars = self._bars, None
            self._tasks.clear()
        if bars is not None:
            bars.stop()

    def __enter__(self) -> CliReporter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop_bars()  # before the error boundary prints, however the operation ended


def preload(*modules: str) -> None:
    """Import modules on a thread while the main one mostly waits (on the target interpreter, the
    download, the engine), so the step that needs them starts at once."""
    import importlib

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the real import later reports any failure
                return

    threading.Thread(target=load, name="neuronctl-preload", daemon=True).start()


class StatusLine:
    """A Reporter that shows what an operation is doing right now (its `status` events) as one
    live line on stderr (rich's status spinner), and nothing else: never on a pipe, and the
    command makes none with --json or -q (`status_reporter`). The line goes when the work ends
    (transient), so the report that follows is all that stays on screen."""

    def __init__(self, console: Callable[[], Console], *, enabled: bool = True) -> None:
        self._console = console
        self._enabled = enabled
        self._status: Status | None = None
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        if event.kind != "status" or not self._enabled:
            return
        from rich.text import Text

        text = Text(terminal_text(event.message, 200))  # data (check ids, a model's name)
        with self._lock:
            if self._status is None:
                from rich.status import Status

                self._status = Status(text, console=self._console())
                self._status.start()
            else:
                self._status.update(text)

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        pass

    def finished(self, key: str, message: str) -> None:
        pass

    def stop(self) -> None:
        with self._lock:
            status, self._status = self._status, None
        if status is not None:
            status.stop()

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()  # before the report, or the error boundary, prints


def status_reporter(console: Callable[[], Console], *, shown: bool) -> StatusLine:
    """The live status line for work that takes a while: drawn only when `shown` (text output,
    no -q) and stderr is a terminal."""
    return StatusLine(console, enabled=shown and _is_tty(sys.stderr))
