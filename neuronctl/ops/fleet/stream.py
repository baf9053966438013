"""The fleet step's output, read as it streams: each srun task's lines are kept up to a cap, so
one node printing without end costs that node its answer, never the others theirs, nor memory.

`srun --label` prefixes every line a task prints with its task id; each task prints a begin
marker naming its node, the doctor's document, then an end marker with the doctor's exit code
(srun.wrapped). Markers are matched at line starts only: a JSON document has no raw newline
inside a string, so nothing a node's document says can pass for a marker. A task is one node:
a task that names a second node, or a node named by two tasks, is someone printing another
node's markers, and neither result is believed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from msgspec import Struct, field

from neuronctl import proc

MARK = "@@neuronctl-fleet"
MIB = 1024 * 1024
MAX_DOC_BYTES = 4 * MIB  # a doctor document is ~10-30 KB; anything far bigger is not one
MAX_KEPT_BYTES = 256 * MIB  # kept over the whole step (1,000+ nodes' documents)
MAX_STDERR_BYTES = 1 * MIB  # srun's own messages; the last ones are kept
MAX_MARKER_CHARS = 300  # "@@neuronctl-fleet begin NODE" / "end NODE RC": short lines
MAX_CLAIMS = 64  # nodes one task may name before the rest of its claims are ignored
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
LABEL = re.compile(rb" *([0-9]{1,9}): ?")
BEGIN = f"{MARK} begin "
END = f"{MARK} end "

# node -> (the text between its markers, the doctor's exit code or None if it never ended, an
# error when the output for that node cannot be trusted or was not kept)
Parsed = dict[str, tuple[str, "int | None", "str | None"]]


def _exit_code(code_text: str) -> int | None:
    # str.isdigit() is true for "²" and other non-ASCII digits that int() refuses.
    ok = code_text.isascii() and code_text.isdigit() and len(code_text) <= 3
    return int(code_text) if ok else None


class _Task(Struct):
    """One srun task's output so far: the node it is printing for and that node's lines."""

    node: str | None = None
    lines: list[str] = field(default_factory=list)
    kept: int = 0
    over: str | None = None  # why this task's output is no longer kept
    claims: list[str] = field(default_factory=list)
    found: dict[str, tuple[str, int | None]] = field(default_factory=dict)


class StepReader:
    """Feed it srun's stdout in chunks of any size; `result()` says what each node answered.
    Memory is bounded by `per_task` per task and `total` over all of them."""

    def __init__(self, per_task: int = MAX_DOC_BYTES, total: int = MAX_KEPT_BYTES) -> None:
        self.per_task = per_task
        self.total = total
        self.kept = 0
        self.tasks: dict[str, _Task] = {}
        self._partial = bytearray()
        self._discarding = False  # inside a line already too long to keep

    def feed(self, data: bytes) -> None:
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            if not self._discarding:
                self._partial += data[start:end]
                if len(self._partial) > self.per_task + MAX_MARKER_CHARS:
                    self._overlong(bytes(self._partial[:32]))
            if newline < 0:
                return
            if not self._discarding:
                self._line(bytes(self._partial))
            self._partial.clear()
            self._discarding = False
            start = newline + 1

    def _overlong(self, head: bytes) -> None:
        """A line longer than any task may keep: its task is over, the rest of the line skipped."""
        label = LABEL.match(head)
        if label is not None:
            self._task(label.group(1).decode()).over = self._over_text()
        self._partial.clear()
        self._discarding = True

    def _over_text(self) -> str:
        return f"output over {self.per_task / MIB:g} MiB"

    def _task(self, task_id: str) -> _Task:
        task = self.tasks.get(task_id)
        if task is None:
            task = self.tasks[task_id] = _Task()
        return task

    def _line(self, raw: bytes) -> None:
        label = LABEL.match(raw)
        if label is None:  # not a task's line (srun writes its own to stderr)
            return
        task = self._task(label.group(1).decode())
        text = raw[label.end():].decode("utf-8", "replace")
        if len(text) <= MAX_MARKER_CHARS and text.startswith(BEGIN):
            self._begin(task, text[len(BEGIN):].strip())
        elif (task.node is not None and len(text) <= MAX_MARKER_CHARS
              and text.startswith(f"{END}{task.node} ")):
            self._finish(task, _exit_code(text[len(END) + len(task.node) + 1:].strip()))
        elif task.node is not None and task.over is None:
            self._keep(task, text)

    def _begin(self, task: _Task, node: str) -> None:
        if task.node is not None:
            self._finish(task, None)
        if not NODE_NAME.fullmatch(node):
            return
        if node not in task.claims and len(task.claims) < MAX_CLAIMS:
            task.claims.append(node)
        task.node = node if node in task.claims else None

    def _keep(self, task: _Task, text: str) -> None:
        size = len(text) + 1
        if task.kept + size > self.per_task:
            task.over = self._over_text()
        elif self.kept + size > self.total:
            task.over = f"output not kept: the step's output over {self.total / MIB:g} MiB in all"
        else:
            task.lines.append(text)
            task.kept += size
            self.kept += size
            return
        task.lines.clear()

    def _finish(self, task: _Task, code: int | None) -> None:
        assert task.node is not None
        if task.over is None:
            task.found[task.node] = ("\n".join(task.lines).strip("\n"), code)
        task.lines = []
        task.node = None

    def result(self) -> Parsed:
        """What each node answered; call once, after the last chunk."""
        if self._partial and not self._discarding:
            self._line(bytes(self._partial))
        self._partial.clear()
        found: Parsed = {}
        claimed_by: dict[str, set[str]] = defaultdict(set)
        conflicting: set[str] = set()
        for task_id, task in self.tasks.items():
            if task.node is not None:
                self._finish(task, None)
            for node in task.claims:
                claimed_by[node].add(task_id)
                if task.over is not None:
                    found[node] = ("", None, task.over)
                elif node in task.found:
                    text, code = task.found[node]
                    found[node] = (text, code, None)
            if len(task.claims) > 1:
                conflicting |= set(task.claims)
        conflicting |= {node for node, tasks in claimed_by.items() if len(tasks) > 1}
        for node in conflicting:
            tasks = ", ".join(sorted(claimed_by[node], key=int))
            found[node] = ("", None, f"conflicting output for node {node} (srun tasks {tasks})")
        return found


def parse_step(out: str, per_task: int = MAX_DOC_BYTES, total: int = MAX_KEPT_BYTES) -> Parsed:
    """The same reading for output already in memory (tests, a runner that returns text)."""
    reader = StepReader(per_task, total)
    reader.feed(out.encode("utf-8", "replace"))
    return reader.result()


class Streamed(Struct, frozen=True):
    """How the srun step ended: its exit code (None: killed at the deadline), what each node
    answered, and the end of srun's stderr."""

    returncode: int | None
    parsed: Parsed
    stderr: str


def stream_step(argv: Sequence[str], limit: float, term_grace: float = 5.0) -> Streamed:
    """Run the srun step (neuronctl.proc) under a deadline, reading its output as it comes: stdout
    to the reader, the tail of stderr kept. At the deadline SIGTERM (srun cancels its step) and
    `term_grace` more seconds of reading. FileNotFoundError when argv[0] is not on PATH."""
    reader = StepReader()
    done = proc.run(argv, proc.Bounds(limit, term_grace, exit_wait=max(1.0, term_grace)),
                    stdout=proc.Keep(sink=reader.feed), stderr=proc.Keep(tail=MAX_STDERR_BYTES))
    return Streamed(done.returncode, reader.result(), done.stderr.text())
