"""A small TOML writer for lock files: fixed key order, one wheel per line, so that a changed pin
is a small diff. The output is checked by parsing it back (see lockfile.render_pylock)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name, ensure_ascii=False)


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        if '"' in v and "'" not in v and v.isprintable():
            return f"'{v}'"  # a literal string: markers stay readable, no escaping
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, dt.datetime):
        text = v.astimezone(dt.timezone.utc).isoformat()
        return text.replace("+00:00", "Z")
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, Sequence):
        if v and all(isinstance(x, Mapping) for x in v):
            return "[\n" + "".join(f"    {value(x)},\n" for x in v) + "]"
        return "[" + ", ".join(value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def table(body: Mapping[str, Any], header: str, *, array: bool = False) -> list[str]:
    """One [header] (or [[header]]) with its keys, then each sub-table under [header.name]."""
    scalars = [f"{key(k)} = {value(v)}" for k, v in body.items() if not isinstance(v, Mapping)]
    out = ["", f"[[{header}]]" if array else f"[{header}]", *scalars] if scalars or array else []
    for k, v in body.items():
        if isinstance(v, Mapping):
            out += table(v, f"{header}.{key(k)}")
    return out


def dumps(doc: Mapping[str, Any], arrays_of_tables: Sequence[str] = ()) -> str:
    lines = [f"{key(k)} = {value(v)}" for k, v in doc.items()
             if not isinstance(v, Mapping) and k not in arrays_of_tables]
    for name in arrays_of_tables:
        for item in doc.get(name, []):
            lines += table(item, key(name), array=True)
    for k, v in doc.items():
        if isinstance(v, Mapping):
            lines += table(v, key(k))
    return "\n".join(lines).lstrip("\n") + "\n"
