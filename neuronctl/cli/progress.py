"""The CLI's Reporter: renders what an operation reports while it runs.

Each event is rendered by its type (neuronctl/ops/reporter.py): notes, warnings and waits go to
stderr, plain results (Info, StepDone: "applied: ...") to stdout, steps begun to the handlers the
command gives (install prints its plan that way), Status to the live status line only. Download
progress is a set of rich bars on a terminal, labelled as the operation labels each task (name
and version, never markup), and one line per finished file otherwise (logs, CI).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

import click

from neuronctl.cli.terminal import is_tty as _is_tty
from neuronctl.cli.terminal import terminal_text
from neuronctl.ops.reporter import (
    AnyEvent,
    Info,
    Note,
    Status,
    StepDone,
    StepStarted,
    Waiting,
    Warn,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.status import Status as Spinner

StepHandler = Callable[[AnyEvent], None]
"""Given the event as the operation sent it (install's PlanReady carries its plan)."""


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

    def emit(self, event: AnyEvent) -> None:
        if isinstance(event, Status):
            # a live line where bars would be drawn, and while none is
            with self._lock:
                if self._bars is None:
                    self._line.emit(event)
            return
        self.stop_bars()  # a line is never drawn into the bars
        text = terminal_text(event.message, None, lines=True)  # files, URLs, packages: data
        if isinstance(event, StepStarted):
            handler = self._steps.get(event.step)
            if handler is not None:
                handler(event)
        elif isinstance(event, Note | Warn):
            click.echo(f"{event.kind}: {text}", err=True)
        elif isinstance(event, Waiting):
            click.echo(text, err=True)
        elif isinstance(event, Info | StepDone):
            click.echo(text)

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
        self._status: Spinner | None = None
        self._lock = threading.Lock()

    def emit(self, event: AnyEvent) -> None:
        if not self._enabled or not isinstance(event, Status):
            return
        from rich.text import Text

        text = Text(terminal_text(event.message, 200))  # data (check ids, a model's name)
        with self._lock:
            if self._status is None:
                from rich.status import Status as Spinner

                self._status = Spinner(text, console=self._console())
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


class MessageLines:
    """Every event's message as a line on stderr, as it comes (setup --yes shows each step as
    it starts and ends); `kinds`: as `kind: message` (lock's notes). Status events go to `line`
    alone (the live status line, drawn on a terminal only: status_reporter)."""

    def __init__(self, console: Callable[[], Console], *, shown: bool = True,
                 kinds: bool = False, line: StatusLine | None = None) -> None:
        self._console = console
        self._shown = shown
        self._kinds = kinds
        self._line = line

    def emit(self, event: AnyEvent) -> None:
        if not self._shown:
            return
        if isinstance(event, Status):
            if self._line is not None:
                self._line.emit(event)
            return
        if self._kinds:
            click.echo(f"{event.kind}: {event.message}", err=True)
            return
        from rich.text import Text

        self._console().print(Text(event.message))

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        pass

    def finished(self, key: str, message: str) -> None:
        pass
