"""What neuronctl keeps of a child's output (neuronctl.proc reads it): a head and a tail of each
stream, the bytes between counted, each chunk handed to a sink as it comes."""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct

Sink = Callable[[bytes], None]


class Keep(Struct, frozen=True):
    """What is kept of one output stream: its first `head` bytes and the last `tail` bytes of
    what follows them (the bytes between are counted, not kept). `stop_over`: more than `head`
    bytes stops the run there (Result.over_cap). `sink` sees every chunk as it comes."""

    head: int = 0
    tail: int = 0
    stop_over: bool = False
    sink: Sink | None = None


class Captured(Struct, frozen=True):
    """What was kept of one stream, and how many bytes it said in all (`seen`)."""

    head: bytes = b""
    tail: bytes = b""
    seen: int = 0

    @property
    def dropped(self) -> int:
        return self.seen - len(self.head) - len(self.tail)

    @property
    def data(self) -> bytes:
        return self.head + self.tail

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


class Buffer:
    """One stream as it is read: kept as its Keep says, handed to its sink."""

    def __init__(self, keep: Keep) -> None:
        self.keep, self.head, self.tail, self.seen = keep, bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> bool:
        """Keep what the caps allow; False once a stop_over cap is passed."""
        self.seen += len(chunk)
        rest = chunk
        room = self.keep.head - len(self.head)
        if room > 0:
            self.head += rest[:room]
            rest = rest[room:]
        if rest and self.keep.tail > 0:
            self.tail += rest[-self.keep.tail:]
            del self.tail[:-self.keep.tail]
        if self.keep.sink is not None:
            self.keep.sink(chunk)
        return not (self.keep.stop_over and self.seen > self.keep.head)

    def captured(self) -> Captured:
        return Captured(bytes(self.head), bytes(self.tail), self.seen)


def by_line(callback: Callable[[bytes], None], limit: int = 1 << 16) -> Sink:
    """A chunk sink that calls `callback` once per line (without its newline); a line longer
    than `limit` bytes is cut there. What follows the last newline is never passed on."""
    partial = bytearray()

    def feed(chunk: bytes) -> None:
        *lines, rest = chunk.split(b"\n")
        for line in lines:
            partial.extend(line[:max(limit - len(partial), 0)])
            callback(bytes(partial))
            partial.clear()
        partial.extend(rest[:max(limit - len(partial), 0)])

    return feed
