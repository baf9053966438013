"""One file of a scan read as text, or the finding that says why it cannot be; and the
per-kind scanners that turn its text into hits."""

from __future__ import annotations

import ast
import json
import os
import re
import stat
from pathlib import Path

from msgspec import Struct, field

from neuronctl.ops.migrate import text_scan
from neuronctl.ops.migrate.python_scan import Hit, PythonScan, scan_tree, setup_requirements
from neuronctl.ops.migrate.text_scan import Versions

TRIGGER = re.compile(rb"xla|XLA_|cuda|nccl|neuron|NEURON_CC|optimum|PJRT_DEVICE|max-autotune")
"""The pre-filter: every rule's match holds one of these words ('xla' the torch_xla names and
the "xla" backend and device strings, 'cuda'/'nccl' the CUDA rules, 'neuron' torch_neuronx,
neuronxcc, neuronx_distributed and the package names), so a file with none of them cannot hold
a finding and is not parsed."""
_MAGIC = re.compile(r"^\s*[!%]")


class FileScan(Struct):
    """What one file's scan found, with its text (for --fix)."""

    hits: list[tuple[int | None, Hit]] = field(default_factory=list)
    """(notebook cell or None, hit)."""
    text: str | None = None
    python: PythonScan | None = None
    """A Python file's scan (what --fix works from)."""
    cells: list[CellScan] = field(default_factory=list)
    """A notebook's cells that --fix may rewrite."""
    notebook_style: tuple[bool, bool, str] | None = None
    parsed: bool = False

    @property
    def fixable(self) -> bool:
        return any(hit.fix for _, hit in self.hits)


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


class CellScan(Struct, frozen=True):
    """A notebook code cell --fix may rewrite: its place in the notebook's cells, its source as
    one string, whether that was a list of lines, and its scan."""

    index: int
    source: str
    as_list: bool
    scan: PythonScan


_STYLES = [(sort, ascii_, end) for sort in (True, False) for ascii_ in (False, True) for end in ("\n", "")]


def notebook_style(text: str, doc: object) -> tuple[bool, bool, str] | None:
    """How the notebook was written (json.dumps' sort_keys and ensure_ascii, indent 1 as Jupyter
    writes, the final newline), if writing `doc` back that way gives `text` byte for byte: a
    rewrite then changes the cells it rewrites and nothing else. None: not rewritten."""
    for sort, ascii_, end in _STYLES:
        if json.dumps(doc, indent=1, sort_keys=sort, ensure_ascii=ascii_) + end == text:
            return sort, ascii_, end
    return None


def _cells(text: str) -> tuple[object, list[tuple[int, str, bool]]] | None:
    """The notebook and (index, code, source was a list) of each code cell; None if this is
    not a notebook's JSON."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        return None
    found = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            return None
        source = cell.get("source", "")
        as_list = isinstance(source, list) and all(isinstance(s, str) for s in source)
        if as_list:
            source = "".join(source)
        if not isinstance(source, str):
            return None
        if cell.get("cell_type") == "code":
            found.append((index, source, as_list))
    return doc, found


def _notebook(out: FileScan, text: str, versions: Versions) -> None:
    parsed = _cells(text)
    if parsed is None:
        out.hits.append((None, Hit(1, 1, "NRN003", "not a notebook's JSON")))
        return
    doc, cells = parsed
    looked = False  # at the notebook's style: once, and only for a cell with a fix
    for index, source, as_list in cells:
        number = index + 1
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
            scan = scan_tree(tree, code)
        except RecursionError:
            out.hits.append((number, Hit(1, 1, "NRN002", "nested too deeply to scan")))
            continue
        # An import a cell's rewrite leaves unused there may serve a later cell: a notebook's
        # torch_xla imports are left for a hand edit (libcst sees one cell at a time).
        scan.hits = [h if h.rule != "NRN101" else Hit(h.line, h.col, h.rule, h.found) for h in scan.hits]
        fixable = not shell and any(h.fix for h in scan.hits)
        if fixable and not looked:
            looked, out.notebook_style = True, notebook_style(text, doc)
        if fixable and out.notebook_style is not None:
            out.cells.append(CellScan(index, source, as_list, scan))
        else:  # a cell with magics, or a notebook not written as Jupyter writes: by hand
            scan.hits = [Hit(h.line, h.col, h.rule, h.found) for h in scan.hits]
        out.hits += [(number, h) for h in scan.hits]
