"""Which settings a command's typed settings read, found by running them: every command (walked
from the real group), and for each typed settings class what each of its members reads when it
is evaluated, recorded where a setting is looked up by name (the flags as typed, and the
resolver's table). A misspelt name is then a name the record does not hold, not a name that
merely appears somewhere in the class's source."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

import click
import msgspec
import pytest

from neuronctl import settings as resolver_module
from neuronctl.cli.app import App
from neuronctl.cli.setting_options import CommandSettings, Given
from neuronctl.errors import NeuronctlError
from neuronctl.settings import Flag


def commands() -> list[tuple[str, click.Command]]:
    """(path as users type it, without `neuronctl`; "" for the group) for every command."""
    from neuronctl.cli.main import cli

    root = cli.make_context("neuronctl", [], resilient_parsing=True)
    out, stack = [], [("", cli, root)]
    while stack:
        path, command, ctx = stack.pop()
        out.append((path, command))
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                stack.append((f"{path} {name}".strip(), sub,
                              sub.make_context(name, [], parent=ctx, resilient_parsing=True)))
    return out


class _Recording(Mapping[str, Any]):
    """A mapping by setting name that notes each name asked of it."""

    def __init__(self, inner: Mapping[str, Any], asked: set[str]) -> None:
        self.inner, self.asked = inner, asked

    def __getitem__(self, name: str) -> Any:
        self.asked.add(name)
        return self.inner[name]

    def get(self, name: str, default: Any = None) -> Any:
        self.asked.add(name)
        return self.inner.get(name, default)

    def __contains__(self, name: object) -> bool:
        self.asked.add(str(name))
        return name in self.inner

    def __iter__(self) -> Iterator[str]:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)


def readable_members(typed: type) -> list[str]:
    """The public members a body can read: fields, properties, and methods (not the classmethods
    that build it)."""
    names = [f for f in typed.__struct_fields__ if f != "invocation"]
    for cls in typed.__mro__:
        for name, member in vars(cls).items():
            if name.startswith("_") or name in names or isinstance(member, classmethod | staticmethod):
                continue
            if isinstance(member, property | functools.cached_property) or inspect.isfunction(member):
                names.append(name)
    return names


def _evaluate(value: Any, name: str) -> None:
    member = getattr(value, name)
    if inspect.ismethod(member):
        # A method's required parameters are switches (lock's stack(latest=...)): off.
        required = [p for p in inspect.signature(member).parameters.values()
                    if p.default is inspect.Parameter.empty]
        assert all(p.annotation in (bool, "bool") for p in required), (
            f"{type(value).__name__}.{name}: a member a test cannot call with its switches off")
        member(**{p.name: False for p in required})


def reads(typed: type, monkeypatch: pytest.MonkeyPatch,
          typed_flags: Mapping[str, Flag] | None = None) -> dict[str, set[str]]:
    """Member -> the settings reading it looks up by name; "" -> those `resolve` reads, with
    `typed_flags` typed (a command's required ones) and no other flag. Each
    member is read on an object of its own (cached_property keeps a value per object). A member
    whose value is refused where it is read (a setting it needs and this test's empty
    environment lacks) still counts what it looked up before."""
    asked: set[str] = set()
    monkeypatch.setattr(resolver_module, "BY_NAME", _Recording(resolver_module.BY_NAME, asked))

    def fresh() -> Any:
        return typed.resolve(CommandSettings.of(Given(_Recording(typed_flags or {}, asked))))

    found: dict[str, set[str]] = {}
    with click.Context(click.Command("settings-reads"), obj=App()):
        for name in ["", *readable_members(typed)]:
            asked.clear()
            try:
                value = fresh()
                if name:
                    asked.clear()
                    _evaluate(value, name)
            except (NeuronctlError, KeyError):  # refused, or a name no row has (recorded: the test says)
                pass
            found[name] = set(asked)
    return found


def held_fields(typed: type) -> dict[str, set[str]]:
    """Field -> the names it holds: its own name, or, for a field holding a record of typed
    flags (lock's and install's TypedStack), that record's fields."""
    out: dict[str, set[str]] = {}
    hints = msgspec.structs.fields(typed)
    for field in hints:
        if field.name == "invocation":
            continue
        inner = field.type
        names = {field.name}
        if isinstance(inner, type) and issubclass(inner, msgspec.Struct):
            names = {f.name for f in msgspec.structs.fields(inner)}
        out[field.name] = names
    return out
