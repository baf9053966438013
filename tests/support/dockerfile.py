"""A Dockerfile read as the tests check it: instructions with continuation lines joined."""

from __future__ import annotations


def parse(text: str) -> list[tuple[str, str]]:
    """(instruction, arguments) with continuation lines joined; comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if line.endswith("\\"):
            continue
        word, _, rest = pending.strip().partition(" ")
        out.append((word, rest.strip()))
        pending = ""
    assert not pending, "a continuation line ends the file"
    return out


def run_lines(parsed: list[tuple[str, str]]) -> str:
    return "\n".join(rest for word, rest in parsed if word == "RUN")
