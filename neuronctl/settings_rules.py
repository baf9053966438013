"""The parse rules of the settings table's rows (neuronctl.settings_table): each takes a raw value
(a flag's, a variable's text, a config's TOML value), where it came from for its error, and the
folder a relative path starts in, and returns the typed value or raises InputError naming where.
A choice's and a whole number's rule also tell click what the flag offers."""

from __future__ import annotations

import math
from pathlib import Path

from msgspec import Struct

from neuronctl.errors import InputError

MAX_SECONDS = 86400.0
"""A day: longer is a typo (1e300), and would overflow the clocks that deadlines are built on."""


def _text(value: object, where: str, base: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _torch(value: object, where: str, base: Path) -> str:
    """A PyTorch line or version ("2.14", "2.14.0+cpu"), checked where it is read, so that its
    error names where it came from (a config's once reached the release model unchecked)."""
    from packaging.version import InvalidVersion, Version

    text = _text(value, where, base)
    try:
        Version(text)
    except InvalidVersion:
        raise InputError(f"{where}: {text[:40]!r} is not a torch version such as 2.14") from None
    return text


def secure_url(value: object, where: str, base: Path | None = None) -> str:
    """A trust root's address: https, a file URL or a local path, never plain http (what comes
    over it can be changed on the way: release data, the repository a key is fetched from)."""
    text = _text(value, where, base or Path())
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme == "http":
        from neuronctl.redact import redact

        raise InputError(f"{where}: {redact(text)[:120]!r} is plain http, which anyone on the way "
                         "can change; give an https:// URL or a local file")
    if scheme and scheme not in ("https", "file"):  # named here, where the value came from
        from neuronctl.redact import redact

        raise InputError(f"{where}: {redact(text)[:120]!r} is not an https:// or file:// URL "
                         "(or a local file)")
    return text


def _path(value: object, where: str, base: Path) -> Path:
    from neuronctl.safety import expand_user

    p = expand_user(_text(str(value) if isinstance(value, Path) else value, where, base), where)
    return p if p.is_absolute() else base / p


def _texts(value: object, where: str, base: Path) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
        raise InputError(f"{where}: expected a string or a list of strings, got {value!r}")
    return tuple(items)


def _flag(value: object, where: str, base: Path) -> bool:
    if isinstance(value, bool):
        return value
    raise InputError(f"{where}: expected true or false, got {value!r}")


def _one(value: object, where: str, base: Path) -> bool:
    """An on switch in the environment: "1" is on, "0" off; anything else ("yes", "true") is bad
    input, not silently off (the switch lets a captured tree's programs run)."""
    if value is True or value == "1":
        return True
    if value is False or value == "0":
        return False
    raise InputError(f"{where}: expected 1 (on) or 0 (off), got {str(value)[:40]!r}")


def seconds(value: object, where: str, base: Path | None = None) -> float:
    """A finite number of seconds above 0 and at most a day (click parses 'nan' and 'inf' as
    floats, and the environment gives text: both are checked here)."""
    number: object = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = value
    if (not isinstance(number, int | float) or isinstance(number, bool) or not math.isfinite(number)
            or not 0 < number <= MAX_SECONDS):
        raise InputError(f"{where}: timeout must be a positive number of seconds, at most "
                         f"{MAX_SECONDS:g}; got {value!r}")
    return float(number)


class Choice(Struct, frozen=True):
    """One of a fixed set of values: the parse rule, and the choices a flag offers."""

    allowed: tuple[str, ...]

    def __call__(self, value: object, where: str, base: Path) -> str:
        if value not in self.allowed:
            raise InputError(f"{where} {value!r}: expected one of {', '.join(self.allowed)}")
        return str(value)


def choice(*allowed: str) -> Choice:
    return Choice(allowed)


class WholeNumber(Struct, frozen=True):
    """A whole number from `low` to `high`: the parse rule, and the range a flag's click.IntRange
    checks as it is typed. Text from the environment is ASCII digits (an optional sign), at most
    18 of them: int() would take '²'-like digits and 5,000-digit numbers, and raise on some."""

    low: int
    high: int

    def __call__(self, value: object, where: str, base: Path | None = None) -> int:
        number: object = value
        if isinstance(value, str):
            text = value.strip()
            digits = text[1:] if text[:1] in "+-" else text
            number = int(text) if digits.isascii() and digits.isdigit() and len(digits) <= 18 else None
        if not isinstance(number, int) or isinstance(number, bool) or not (
                self.low <= number <= self.high):
            shown = repr(value[:40]) if isinstance(value, str) else repr(value)[:40]
            raise InputError(f"{where}: expected a whole number, {self.low} to {self.high}; got "
                             f"{shown}")
        return number


def whole_number(low: int, high: int) -> WholeNumber:
    return WholeNumber(low, high)


def _any(value: object, where: str, base: Path) -> object:
    return value  # layered settings: their own modules check each entry, naming it
