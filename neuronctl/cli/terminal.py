"""What reaches a terminal: the one sanitiser (safe_chars, terminal_text), the guarded streams
(TerminalStream) and rich's console made safe segment by segment (safe_console)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment


PIPE_WIDTH = 10_000
"""The console's width on a pipe: wide enough that rich wraps no line."""


_PLAIN = re.compile(r"[\x20-\x7e]*")
_PLAIN_LINES = re.compile(r"[\x20-\x7e\n]*")
_PLAIN_STREAM = re.compile(r"[\x20-\x7e\n\t]*")  # what the stream passes untouched (JSON, tables)


def safe_chars(text: str, *, lines: bool = False, keep_width: bool = False,
               tabs: bool = False) -> str:
    """The one terminal sanitiser's character rule: every character a terminal acts on rather
    than shows (C0 and C1 controls, ESC and so every escape sequence's start: OSC 52 clipboard
    writes, screen clears, cursor moves, colours; DEL; bidi overrides and other format
    characters; line and paragraph separators; lone surrogates) becomes a space; newlines stay
    when `lines`, tabs when `tabs`. `keep_width`: drop the ones a terminal gives no width
    instead (rich's layout has measured the text already)."""
    if (_PLAIN_LINES if lines else _PLAIN).fullmatch(text) or text.isprintable():
        return text
    kept = ("\n" if lines else "") + ("\t" if tabs else "")
    if keep_width:
        from rich.cells import cell_len

        return "".join(ch if ch.isprintable() or ch in kept else " " * min(cell_len(ch), 1)
                       for ch in text)
    return "".join(ch if ch.isprintable() or ch in kept else " " for ch in text)


def terminal_text(text: str, limit: int | None = 300, *, lines: bool = False) -> str:
    """Text that came from elsewhere (a check's message, a node's answer, an error) as it may be
    printed: control characters and escape sequences made spaces (newlines too, unless `lines`),
    credentials redacted, cut at `limit`."""
    from neuronctl.redact import redact  # its patterns compile as it loads: not at start-up

    return redact(safe_chars(str(text), lines=lines))[:limit]


@functools.cache
def safe_console() -> type[Console]:
    """rich's Console with every text segment it renders passed through safe_chars: a Text
    cell, a table title, a markup string's data. Control segments (rich's own cursor moves for
    progress bars) pass as they are."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def render(self, renderable: RenderableType,
                   options: ConsoleOptions | None = None) -> Iterable[Segment]:
            for segment in super().render(renderable, options):
                if segment.control or not segment.text or _PLAIN_LINES.fullmatch(segment.text):
                    yield segment
                else:
                    yield Segment(safe_chars(segment.text, lines=True, keep_width=True),
                                  segment.style)

    return SafeConsole


# What click.style writes for neuronctl (a reset, bold, dim, a foreground colour): the only
# escape sequences the stream passes, so data that slipped past a renderer can at most colour
# text, never hide it (conceal, reverse, background), blink it or move anything.
_SGR = re.compile(r"\x1b\[(?:0|1|2|22|3[0-79]|9[0-7])?m")


class _PipeState:
    closed = False


class TerminalStream:
    """stdout or stderr as the CLI writes to them (main.run installs it for one invocation).

    Two guarantees, whatever a command prints: (1) a reader that went away (`neuronctl doctor |
    head -3`) never fails the command: the first EPIPE points the file descriptor at /dev/null
    and the rest is dropped quietly, so the exit code stays the command's own; (2) nothing
    written through it can act on a terminal: only colour codes (SGR) pass, on a terminal; every
    other control character or escape sequence becomes a space (a backstop under the sanitising
    each renderer does: terminal_text, the safe console). `unfiltered` is the same stream with
    (1) only, for rich, whose segments are made safe before it writes them."""

    def __init__(self, stream: IO[str], *, filtered: bool = True,
                 state: _PipeState | None = None) -> None:
        self._stream = stream
        self._filtered = filtered
        self._state = state or _PipeState()

    @property
    def unfiltered(self) -> TerminalStream:
        return TerminalStream(self._stream, filtered=False, state=self._state)

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # bytes: the TypeError a text stream raises
            return self._stream.write(text)
        if self._state.closed:
            return len(text)
        shown = self._safe(text) if self._filtered else text
        try:
            self._stream.write(shown)
        except BrokenPipeError:
            self._closed()
        return len(text)

    def flush(self) -> None:
        if self._state.closed:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed()

    def _safe(self, text: str) -> str:
        if _PLAIN_STREAM.fullmatch(text):
            return text
        if not is_tty(self._stream):
            return safe_chars(text, lines=True, tabs=True)
        out, done = [], 0
        for code in _SGR.finditer(text):
            out += [safe_chars(text[done:code.start()], lines=True, tabs=True), code[0]]
            done = code.end()
        out.append(safe_chars(text[done:], lines=True, tabs=True))
        return "".join(out)

    def _closed(self) -> None:
        # What is still buffered, and anything written later (the interpreter's last flush, a
        # child started after this), goes to /dev/null instead of raising EPIPE again.
        self._state.closed = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError, AttributeError):  # not a real file (pytest's capture)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
