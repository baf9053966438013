"""Operator tables for `neuronctl coverage --table FILE`, read and written.

A table gives, per ATen operator, AWS's word for it: `Y` (native), `CPU_FALLBACK` (runs on the
CPU, result copied back) or `N` (not supported), the classes of AWS's supported-operators page
(torch/reference/api/supported-operators.html, 2026-11-06; its per-release table is
docs/torch_api_compatibility.md in aws-neuron/torch-neuronx, whose exact format is not published,
so this is neuronctl's own). JSON: {"schema": 1, "torch_neuronx": "2.14.3.0", "ops": {...}};
CSV: a header `op,class` and a row per operator. A key without an overload ('aten::mm') matches
every overload of that operator; one with ('aten::add.Tensor', 'aten::mm.default') only that one,
and wins. The file is untrusted: bounded, every key and word checked, and a bad one is exit 2
naming the file and its line.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.errors import InputError
from neuronctl.safety import expand_user, read_regular

MAX_BYTES = 16 * 1024 * 1024
SCHEMA = 1
WORDS = {"Y": "native", "CPU_FALLBACK": "cpu_fallback", "N": "unsupported"}
OP_KEY = re.compile(r"[a-z_][a-z0-9_]*::[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?")
VERSION = re.compile(r"[A-Za-z0-9.+_-]{1,64}")
HOW_TO_GET = ("no Neuron backend in the target and no --table: run `neuronctl coverage table "
              "--python PY -o ops.json` once on a Neuron host, commit it, and pass --table ops.json")


class OpTable(Struct, frozen=True):
    """A table's classes by key ('aten::mm' or 'aten::mm.default'), and where it came from."""

    path: str
    ops: Mapping[str, str]
    """key -> native / cpu_fallback / unsupported."""
    torch_neuronx: str | None = None
    torch: str | None = None

    def lookup(self, op: str) -> str:
        """The class of a recorded overload ('aten::mm' is the default overload,
        'aten::add.Tensor' another): its exact key, else its operator's, else unknown."""
        name, _, overload = op.partition("::")[2].partition(".")
        base = op.partition("::")[0] + "::" + name
        exact = f"{base}.{overload or 'default'}"
        return self.ops.get(exact) or self.ops.get(base) or "unknown"


def _line_of(text: str, key: str) -> int:
    """The line of the file where `key` appears as a JSON string (1 when it cannot be found)."""
    at = text.find(json.dumps(key))
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _entry(path: str, line: int, key: Any, word: Any) -> tuple[str, str]:
    where = f"{path}:{line}"
    if not isinstance(key, str) or not OP_KEY.fullmatch(key.strip()):
        raise InputError(f"{where}: operator {str(key)[:80]!r} is not an ATen name like "
                         "aten::mm or aten::add.Tensor")
    if not isinstance(word, str) or word.strip() not in WORDS:
        raise InputError(f"{where}: {key}: class {str(word)[:40]!r} is not one of "
                         f"{', '.join(WORDS)}")
    return key.strip(), WORDS[word.strip()]


def _version(value: Any, where: str, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not VERSION.fullmatch(value):
        raise InputError(f"{where}: {field} {str(value)[:40]!r} is not a version")
    return value


def _from_json(path: str, text: str) -> OpTable:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{path}:1: nested too deep") from None
    if not isinstance(data, dict) or not isinstance(data.get("ops"), dict):
        raise InputError(f"{path}:1: expected an object with \"schema\": {SCHEMA} and \"ops\"")
    if data.get("schema") != SCHEMA:
        raise InputError(f"{path}:{_line_of(text, 'schema')}: schema {str(data.get('schema'))[:20]}"
                         f" is not {SCHEMA}")
    ops = dict(_entry(path, _line_of(text, str(k)), k, v) for k, v in data["ops"].items())
    return OpTable(path, ops, _version(data.get("torch_neuronx"), path, "torch_neuronx"),
                   _version(data.get("torch"), path, "torch"))


def _from_csv(path: str, text: str) -> OpTable:
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None or [h.strip().lower() for h in header] != ["op", "class"]:
        raise InputError(f"{path}:1: expected the header op,class")
    ops: dict[str, str] = {}
    for row in rows:
        line = rows.line_num
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 2:
            raise InputError(f"{path}:{line}: expected 2 columns (op,class), got {len(row)}")
        key, klass = _entry(path, line, row[0], row[1])
        ops[key] = klass
    return OpTable(path, ops)


def read_table(path: Path, flag: str = "--table") -> OpTable:
    """A table file (JSON or CSV, told apart by its first character), or exit 2 naming the file
    and line."""
    shown = str(path)
    raw = read_regular(expand_user(path, flag), MAX_BYTES, f"{flag} {shown}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{shown}:1: not UTF-8 text") from None
    if text.lstrip().startswith("{"):
        return _from_json(shown, text)
    return _from_csv(shown, text)


def table_document(ops: Mapping[str, str], torch_neuronx: str | None, torch: str | None,
                   now: datetime | None = None) -> dict[str, Any]:
    """The JSON a `coverage table` file holds: AWS's words, every overload by its full key."""
    return {"schema": SCHEMA, "torch_neuronx": torch_neuronx, "torch": torch,
            "date": (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d"),
            "ops": dict(sorted(ops.items()))}
