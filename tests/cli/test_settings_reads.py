"""Every flag a command takes is read: by its typed settings class (run, not searched for: a
misspelt name in a read fails), and by the command's body (which reads a member of that class that
reads the setting). A flag shown in --help and never read would silently do nothing, a bad value
too, as a setting is checked where it is read."""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cached_property
from pathlib import Path

import click
import pytest
from msgspec import Struct
from support.setting_reads import commands, held_fields, readable_members, reads

from neuronctl.cli.setting_options import CommandSettings, SettingOption, typed_settings
from neuronctl.cli.settings_types import Typed, maybe
from neuronctl.settings import Flag
from neuronctl.settings_table import BY_NAME


def _taken(command: click.Command) -> set[str]:
    return {p.spec.name for p in command.params if isinstance(p, SettingOption) and p.old is None}


def _typed_commands() -> list[tuple[str, click.Command, type]]:
    found = []
    for path, command in commands():
        typed = typed_settings(command.callback)
        if typed is not None and _taken(command):
            found.append((path, command, typed))
    return found


def _required(command: click.Command) -> dict[str, Flag]:
    """The command's required setting flags, each typed as click converts "1" for it."""
    ctx = click.Context(command)
    return {str(p.name): Flag(p.type_cast_value(ctx, "1"), str(p.spec.flag)) for p in command.params
            if isinstance(p, SettingOption) and p.required}


def _reading_members(typed: type, monkeypatch: pytest.MonkeyPatch,
                     command: click.Command | None = None) -> dict[str, set[str]]:
    """Member -> the settings it reads: a field, those `resolve` read into it (found by name:
    the field's own, or the fields of the typed flags it holds; a read no field is named for is
    every field's); a property or method, those reading it looked up."""
    found = reads(typed, monkeypatch, _required(command) if command else None)
    at_resolve = found.pop("")
    fields = held_fields(typed)
    named = set().union(*fields.values()) if fields else set()
    out = {name: names & at_resolve for name, names in fields.items()}
    for field in out:
        out[field] |= at_resolve - named
    for name, names in found.items():
        out[name] = out.get(name, set()) | names
    return out


def _unread(path: str, command: click.Command, typed: type,
            monkeypatch: pytest.MonkeyPatch) -> list[str]:
    by_member = _reading_members(typed, monkeypatch, command)
    read = set().union(*by_member.values()) if by_member else set()
    unknown = [f"{typed.__name__} looks up {n!r}, which no row of the settings table names"
               for n in sorted(read - set(BY_NAME))]
    return unknown + [f"`neuronctl {path}` takes {BY_NAME[n].flag} (row {n}) but reading every member of "
            f"{typed.__name__} never looks up {n!r}: give it a typed field that reads it "
            "(docs/maintaining.md, adding a setting)" for n in sorted(_taken(command) - read)]


def test_every_flag_a_command_takes_is_read_by_its_typed_settings(monkeypatch) -> None:
    problems = [p for path, command, typed in _typed_commands()
                for p in _unread(path, command, typed, monkeypatch)]
    assert not problems, "\n".join(problems)


def _attributes_read(source: str, typed: type) -> set[str]:
    """The members read on the command's settings in its module: `p.member` where `p` is a
    parameter of a function there annotated with the typed class or a class it builds on (the
    body's `settings`, and each helper the body hands them to; the cli layer is where settings
    become an operation's inputs). An attribute of that name on anything else does not count."""
    kinds = {typed.__name__} | {c.__name__ for c in typed.__mro__ if c.__module__.startswith("neuronctl")}
    tree = ast.parse(source)
    read: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = function.args
        holders = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                   if a.annotation is not None and ast.unparse(a.annotation).strip("'\"") in kinds}
        read |= {node.attr for node in ast.walk(function) if isinstance(node, ast.Attribute)
                 and isinstance(node.value, ast.Name) and node.value.id in holders}
    return read


def _unused(path: str, command: click.Command, typed: type, monkeypatch: pytest.MonkeyPatch,
            source: str | None = None) -> list[str]:
    """`source`: the command's module's (the tests of this check give one of their own)."""
    by_member = _reading_members(typed, monkeypatch, command)
    body = inspect.unwrap(command.callback)  # type: ignore[arg-type]
    module = inspect.getsource(sys.modules[body.__module__]) if source is None else source
    attributes = _attributes_read(module, typed)
    problems = []
    for name in sorted(_taken(command)):
        readers = sorted(m for m, names in by_member.items() if name in names)
        if not set(readers) & attributes:
            problems.append(f"`neuronctl {path}` takes {BY_NAME[name].flag} but {body.__module__} "
                            f"reads none of {typed.__name__}'s members that read it "
                            f"({', '.join(readers) or 'none'}): read it where the body builds its "
                            "inputs (docs/maintaining.md, adding a setting)")
    return problems


def test_every_flag_a_command_takes_reaches_its_body(monkeypatch) -> None:
    problems = [p for path, command, typed in _typed_commands()
                for p in _unused(path, command, typed, monkeypatch)]
    assert not problems, "\n".join(problems)


# -- the checks themselves fail where they should: a class that misspells a read, a body that
# -- never reads the field --------------------------------------------------------------------

class _Misspelt(Typed, frozen=True, dict=True):
    @cached_property
    def timeout(self) -> float | None:
        return maybe(self.invocation.value("timeuot"), float, "timeout")


class _Spelt(Typed, frozen=True, dict=True):
    @cached_property
    def timeout(self) -> float | None:
        return maybe(self.invocation.value("timeout"), float, "timeout")


class _Holds(Struct, frozen=True):
    release: str | None = None


class _Fields(Typed, frozen=True):
    held: _Holds = _Holds()
    sysroot: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> _Fields:
        given = invocation.given
        return cls(invocation, _Holds(maybe(given.value("release"), str, "release")),
                   maybe(given.value("sysroot"), Path, "sysroot"))


def _lock_command() -> click.Command:
    command = dict(commands())["lock"]
    assert _taken(command) >= {"timeout"}
    return command


def test_a_misspelt_read_is_found_though_the_name_is_in_the_class(monkeypatch) -> None:
    """The old check searched the class's source for the name: "timeout" is there (twice) in
    _Misspelt, which reads "timeuot"."""
    assert '"timeout"' in inspect.getsource(_Misspelt)
    problems = _unread("lock", _lock_command(), _Misspelt, monkeypatch)
    assert any("--timeout (row timeout)" in p and "_Misspelt" in p for p in problems), problems
    assert "_Misspelt looks up 'timeuot', which no row of the settings table names" in problems
    assert not any("--timeout" in p for p in _unread("lock", _lock_command(), _Spelt, monkeypatch))


def test_the_members_that_read_a_setting_are_found_by_running_them(monkeypatch) -> None:
    assert _reading_members(_Spelt, monkeypatch) == {"timeout": {"timeout"}}
    # resolve's reads go to the field holding them, by name or through the record it holds
    assert _reading_members(_Fields, monkeypatch) == {"held": {"release"}, "sysroot": {"sysroot"}}
    assert readable_members(_Fields) == ["held", "sysroot"]


def _timeout_unused(problems: list[str]) -> list[str]:
    return [p for p in problems if "takes --timeout " in p]


def test_a_body_that_never_reads_the_member_is_found(monkeypatch) -> None:
    """The module must read the member on the settings it is given: an attribute of that name on
    anything else (a request, another object) is not a read of the flag."""
    reads_it = "def body(settings: _Spelt) -> float:\n    return settings.timeout\n"
    elsewhere = ("def body(settings: _Spelt) -> None:\n    return None\n\n\n"
                 "def unrelated(request: object) -> float:\n    return request.timeout\n")
    assert not _timeout_unused(_unused("lock", _lock_command(), _Spelt, monkeypatch, reads_it))
    problems = _timeout_unused(_unused("lock", _lock_command(), _Spelt, monkeypatch, elsewhere))
    assert len(problems) == 1 and "_Spelt's members that read it (timeout)" in problems[0], problems
    # a helper the body hands its settings to reads it there
    helper = ("def body(settings: _Spelt) -> float:\n    return _limit(settings)\n\n\n"
              "def _limit(given: '_Spelt') -> float:\n    return given.timeout\n")
    assert not _timeout_unused(_unused("lock", _lock_command(), _Spelt, monkeypatch, helper))
