"""Typed field access for untrusted JSON, with errors that name the file and the field."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from neuronctl.errors import InputError

T = TypeVar("T")


class Fields:
    """Read one JSON object, reporting `where: field.path: problem` on bad data."""

    def __init__(self, data: object, where: str, path: str = "") -> None:
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: {path or 'top level'}: expected an object, got {_kind(data)}")
        self.data: Mapping[str, Any] = data
        self.where = where
        self.path = path

    def _at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, problem: str) -> InputError:
        return InputError(f"{self.where}: {self._at(key)}: {problem}")

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.data:
            if required:
                raise self.fail(key, "missing")
            return None
        return self.data[key]

    def text(self, key: str, *, required: bool = True, default: str | None = None) -> str | None:
        value = self._get(key, required)
        if value is None:
            if required:
                raise self.fail(key, "expected a string, got null")
            return default
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        return _one_line(self, key, value)

    def req_text(self, key: str) -> str:
        value = self.text(key)
        assert value is not None
        return value

    def texts(self, key: str, *, required: bool = True) -> list[str]:
        value = self._get(key, required)
        if value is None:
            if required:
                raise self.fail(key, "expected a list of strings, got null")
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of strings, got {_kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail(f"{key}[{i}]", f"expected a string, got {_kind(item)}")
            _one_line(self, f"{key}[{i}]", item)
        return list(value)

    def obj(self, key: str, *, required: bool = True) -> Fields | None:
        value = self._get(key, required)
        if value is None:
            if required:
                raise self.fail(key, "expected an object, got null")
            return None
        return Fields(value, self.where, self._at(key))

    def objects(self, key: str, *, required: bool = True) -> list[Fields]:
        value = self._get(key, required)
        if value is None:
            if required:
                raise self.fail(key, "expected a list of objects, got null")
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of objects, got {_kind(value)}")
        return [Fields(item, self.where, f"{self._at(key)}[{i}]") for i, item in enumerate(value)]

    def integer(self, key: str, *, required: bool = True) -> int | None:
        value = self._get(key, required)
        if value is None:
            if required:
                raise self.fail(key, "expected an integer, got null")
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        return value

    def keys(self) -> Sequence[str]:
        return list(self.data.keys())

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.data.keys()))


def _one_line(fields: Fields, key: str, value: str) -> str:
    """Data text is one line of printable characters: a newline in a release note or a rule's
    words would print as a line of its own (a fake `PASS`, a `::error` workflow command in CI)."""
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        raise fields.fail(key, f"expected one line of printable text, got {bad!a} in it")
    return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
