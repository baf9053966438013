"""What an in-process neuronctl run gave (the `cli` fixture's result)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Result:
    code: int
    out: str
    err: str
