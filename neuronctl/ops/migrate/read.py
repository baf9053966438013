"""One file of a scan read as text, or the finding that says why it cannot be; and the
per-kind scanners that turn its text into hits."""

from __future__ import annotations

import ast
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from neuronctl.ops.migrate import text_scan
from neuronctl.ops.migrate.python_scan import Hit, PythonScan, scan_tree, setup_requirements
from neuronctl.ops.migrate.text_scan import Versions

TRIGGER = re.compile(rb"xla|XLA_|cuda|nccl|neuron|NEURON_CC|optimum|PJRT_DEVICE|max-autotune")
"""The pre-filter: every rule's match holds one of these words ('xla' the torch_xla names and
the "xla" backend and device strings, 'cuda'/'nccl' the CUDA rules, 'neuron' torch_neuronx,
neuronxcc, neuronx_distributed and the package names), so a file with none of them cannot hold
a finding and is not parsed."""
_MAGIC = re.compile(r"^\s*[!%]")


@dataclass
class FileScan:
    """What one file's scan found, with its text (for --fix)."""

    hits: list[tuple[int | None, Hit]] = field(default_factory=list)
    """(notebook cell or None, hit)."""
    text: str | None = None
    python: PythonScan | None = None
    """A Python file's scan (what --fix works from)."""
    parsed: bool = False


def read_bytes(path: Path, limit: int) -> bytes:
    """The file's bytes, opened without following a link (O_NOFOLLOW) and only if it is still a
    regular file; at most `limit` bytes + 1 (the caller checked the size already)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def scan_file(kind: str, name: str, data: bytes, versions: Versions) -> FileScan:
    out = FileScan()
    if kind != "notebook" and not TRIGGER.search(data):
        problem = utf8_problem(data)  # nothing else to find in it
        if problem:
            out.hits.append((None, problem))
        return out
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.hits.append((None, Hit(1, 1, "NRN001", f"byte {exc.start} is not UTF-8")))
        return out
    out.text = text
    if kind == "python":
        _python(out, name, text, versions)
    elif kind == "notebook":
        _notebook(out, text, versions)
    elif kind == "requirements":
        out.hits += [(None, h) for h in text_scan.requirements_file(text, versions)]
    elif kind == "pyproject":
        _pyproject(out, text, versions)
    elif kind == "setup.cfg":
        out.hits += [(None, h) for h in text_scan.setup_cfg(text, versions)]
    else:  # dockerfile, shell, yaml
        out.hits += [(None, h) for h in text_scan.settings_and_installs(text, versions)]
    return out


def utf8_problem(data: bytes) -> Hit | None:
    """NRN001 for a file that is not UTF-8 (checked on every file read, trigger or not)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Hit(1, 1, "NRN001", f"byte {exc.start} is not UTF-8")
    return None


def _parse(text: str) -> ast.Module | Hit:
    try:
        return ast.parse(text.removeprefix("\ufeff"))  # a UTF-8 BOM: Python source may start with one
    except SyntaxError as exc:
        return Hit(exc.lineno or 1, exc.offset or 1, "NRN002", f"{exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, nesting too deep
        return Hit(1, 1, "NRN002", type(exc).__name__)


def _python(out: FileScan, name: str, text: str, versions: Versions) -> None:
    tree = _parse(text)
    out.parsed = True
    if isinstance(tree, Hit):
        out.hits.append((None, tree))
        return
    try:
        out.python = scan_tree(tree, text)
    except RecursionError:  # parsed, yet nested deeper than the visitor can walk
        out.hits.append((None, Hit(1, 1, "NRN002", "nested too deeply to scan")))
        return
    out.hits += [(None, h) for h in out.python.hits]
    if name == "setup.py":
        for line, col, value in setup_requirements(tree):
            found = text_scan.requirement_rule(value, versions)
            if found:
                out.hits.append((None, Hit(line, col, found[0], found[1])))


def _pyproject(out: FileScan, text: str, versions: Versions) -> None:
    from neuronctl.errors import InputError
    from neuronctl.tomlfile import loads_toml

    try:
        data = loads_toml(text, "pyproject.toml")
    except InputError:
        return  # not ours to judge: lock and install report a broken pyproject.toml
    out.hits += [(None, h) for h in text_scan.strings_in_lines(
        text, text_scan.pyproject_requirements(data), versions)]


def _cells(text: str) -> list[tuple[int, str]] | None:
    """(cell number, code) of each code cell; None if this is not a notebook's JSON."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        return None
    found = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            return None
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            return None
        if cell.get("cell_type") == "code":
            found.append((number, source))
    return found


def _notebook(out: FileScan, text: str, versions: Versions) -> None:
    cells = _cells(text)
    if cells is None:
        out.hits.append((None, Hit(1, 1, "NRN003", "not a notebook's JSON")))
        return
    for number, source in cells:
        if not TRIGGER.search(source.encode("utf-8")):
            continue
        lines = source.splitlines()
        shell = [(i, line) for i, line in enumerate(lines, 1) if _MAGIC.match(line)]
        if lines and lines[0].lstrip().startswith("%%"):
            shell, lines = list(enumerate(lines, 1)), []
        for i, line in shell:
            out.hits += [(number, Hit(i, h.col, h.rule, h.found))
                         for h in text_scan.settings_and_installs(line, versions)]
        code = "\n".join("" if _MAGIC.match(line) else line for line in lines)
        tree = _parse(code)
        out.parsed = True
        if isinstance(tree, Hit):
            out.hits.append((number, tree))
            continue
        try:
            hits = scan_tree(tree, code).hits
        except RecursionError:
            out.hits.append((number, Hit(1, 1, "NRN002", "nested too deeply to scan")))
            continue
        # --fix does not rewrite notebooks: their findings are reported for a hand edit
        out.hits += [(number, Hit(h.line, h.col, h.rule, h.found)) for h in hits]
