"""What the package's records (msgspec Structs) need beyond msgspec itself: a deep `asdict`.

The records were dataclasses until issue 36: Python writes and compiles each dataclass's methods
from source when its module loads (about 0.6 ms a class; an install with nothing to do defined
111 of them, a third of its time), where a Struct's class is made in C (tens of microseconds).
`msgspec.structs.asdict` is shallow and `msgspec.to_builtins` turns tuples into lists and refuses
what JSON has no type for, so this keeps `dataclasses.asdict`'s meaning: records within records,
lists, tuples and dicts become dicts and copies, every other value is copied as it is.

Unlike a dataclass, a Struct's annotations are resolved when something asks for its types
(`inspect.signature`, `msgspec.structs.fields`, msgspec's own encoders): a record whose field
types are imported only under TYPE_CHECKING cannot answer those, and nothing here asks.
`msgspec.structs.replace` runs `__post_init__` as `dataclasses.replace` does (msgspec 0.21 on:
the floor in pyproject.toml).
"""

from __future__ import annotations

import copy
from typing import Any

from msgspec import Struct


def asdict(record: Struct) -> dict[str, Any]:
    """The record's fields as a dict, records inside it as dicts too (as dataclasses.asdict)."""
    return {name: _plain(getattr(record, name)) for name in record.__struct_fields__}


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return asdict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple keeps its type
        return type(value)(*(_plain(v) for v in value))
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return copy.deepcopy(value)
