"""What a scan reports: one finding per construct, located in its file."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from neuronctl.ops.migrate.rules import rule


class Finding(Struct, frozen=True):
    """One construct found: where, which rule, what was found, whether --fix rewrites it."""

    path: str
    """Relative to the scanned root it was found under, '/'-separated."""
    line: int
    col: int
    """1-based, in characters (not bytes)."""
    rule: str
    found: str
    """The text found ('xm.xla_device()', 'XLA_USE_BF16', 'torch-xla==2.1.0')."""
    fix: bool
    """Whether --fix rewrites this one."""
    cell: int | None = None
    """A notebook's code cell (1-based, counting every cell); `line` is then within the cell."""
    becomes_extra: str = ""
    """Words the rule's 'becomes' takes ({recipe}: the native install recipe)."""

    @property
    def becomes(self) -> str:
        return rule(self.rule).becomes.replace("{recipe}", self.becomes_extra)

    @property
    def message(self) -> str:
        r = rule(self.rule)
        where = f"cell {self.cell}: " if self.cell is not None else ""
        said = r.what if self.found in r.what else f"{r.what}: {self.found}"
        return f"{where}{said}"

    def to_json(self) -> dict[str, Any]:
        r = rule(self.rule)
        return {"path": self.path, "line": self.line, "col": self.col, "cell": self.cell,
                "rule": self.rule, "message": self.message, "becomes": self.becomes,
                "question": r.question, "fix": self.fix, "source": r.source.cite()}


class Note(Struct, frozen=True):
    """A file or folder left out, and why (too large, a link out of the tree, a loop)."""

    path: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "why": self.why}
