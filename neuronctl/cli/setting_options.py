"""Each setting's flag built from its row of the settings table (neuronctl.settings_table), and the
one way a command gets its settings: one typed, frozen argument built on `CommandSettings`.

A row names the commands that take its flag; `with_settings("doctor", DoctorSettings)`, on top of
a command's decorators, gives that command the flag of each such row (`setting_option`: its
spelling, type, choices or range from the parse rule, metavar, repeatability and help all come
from the row, and its old spellings are added hidden, each printing the project's one-line note
when used), says the help as that command shows it, takes every setting flag's value out of the
command's parameters and passes one `settings` argument instead: the command's own typed, frozen settings
(neuronctl.cli.settings_types), resolved from what was typed (click's ParameterSource, read here
once) and the rule that resolves the rest (flag > environment > config > default). No command body
reads a setting from the context, nor by name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click
from click.core import ParameterSource
from msgspec import Struct, field
from msgspec.structs import replace

from neuronctl import settings_table
from neuronctl.settings import Flag, Setting
from neuronctl.settings_rules import WholeNumber, seconds
from neuronctl.settings_table import Spec

if TYPE_CHECKING:
    from neuronctl.settings import Resolver

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__neuronctl_settings__"
"""The attribute `with_settings` leaves on a command's callback: the command it was built for."""
_TYPED = "__neuronctl_typed_settings__"
"""And its typed settings class."""


class SettingOption(click.Option):
    """A setting's flag, built from its row: `spec` is the row; `old` the old spelling it is (None
    for the flag itself); `why` the old spelling's note reason, as the command says it."""

    def __init__(self, *args: Any, spec: Spec[Any], old: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spec = spec
        self.old = old
        self.why = spec.old_why or ""


def _type(spec: Spec[Any]) -> click.ParamType | None:  # type: ignore[type-arg]
    if spec.choices is not None:
        return click.Choice(spec.choices)
    if spec.path is not None:
        return click.Path(path_type=Path, dir_okay=spec.path == "dir",
                          file_okay=spec.path == "file")
    if spec.parse is seconds:
        return click.FLOAT  # the row's rule checks the number (finite, above 0, at most a day)
    if isinstance(spec.parse, WholeNumber):
        return _WholeNumberType(spec.parse)
    return None


class _WholeNumberType(click.ParamType):  # type: ignore[type-arg]
    """A whole-number flag checked by its row's rule as it is typed: the same text the variable
    and the config take (click's IntRange calls int(), which takes '٣' and '1_0')."""

    def __init__(self, rule: WholeNumber) -> None:
        self.rule = rule
        self.name = f"integer {rule.low} to {rule.high}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from neuronctl.errors import InputError

        try:
            return self.rule(value, "value")
        except InputError:
            self.fail(f"{str(value)[:40]!r}: expected a whole number, {self.rule.low} to "
                      f"{self.rule.high}", param, ctx)


def _noted(ctx: click.Context, option: click.Parameter, value: Any) -> Any:
    """An old spelling, typed: the project's one-line note (the command's settings take its
    value, under the spelling the user typed, from the parameters)."""
    from neuronctl.cli.app import note

    if (isinstance(option, SettingOption) and option.name
            and ctx.get_parameter_source(option.name) is ParameterSource.COMMANDLINE):
        note(f"{option.old} is now {option.spec.flag}{option.why}; the old spelling still works")
    return value


def setting_option(name: str, *, old: bool = False, required: bool = False) -> Callable[[F], F]:
    """Setting `name`'s flag from its row, with its old spellings (where the row says they are
    accepted everywhere, or `old`: this command had the old spelling); `required`: the command
    cannot run without it (download's --lock)."""
    spec = settings_table.BY_NAME[name]
    flag = spec.flag
    if flag is None:
        raise ValueError(f"setting {name} has no flag")
    common: dict[str, Any] = {"type": _type(spec), "metavar": spec.metavar,
                              "multiple": spec.multiple, "is_flag": spec.is_flag or None,
                              "cls": SettingOption, "spec": spec}
    common = {k: v for k, v in common.items() if v is not None}

    def apply(f: F) -> F:
        olds = spec.old_flags if spec.old_why is not None or old else ()
        for spelled in olds:
            f = click.option(spelled, f"old_{name}", hidden=True, callback=_noted, old=spelled,
                             **common)(f)
        return click.option(flag, name, help=spec.help, required=required, **common)(f)

    return apply


class Given(Struct, frozen=True):
    """The setting flags of one invocation as the user typed them (an old spelling too), by
    setting name: the flag's value and spelling; a flag left out is absent."""

    flags: Mapping[str, Flag] = field(default_factory=dict)

    def get(self, name: str) -> Flag | None:
        return self.flags.get(name)

    def values(self, name: str) -> tuple[str, ...]:
        """A repeatable flag's values as typed, else ()."""
        flag = self.flags.get(name)
        values = flag.value if flag is not None else ()
        return tuple(str(v) for v in values) if isinstance(values, tuple | list) else ()

    def value(self, name: str) -> Any:
        """A flag's value as typed (converted by click), else None."""
        flag = self.flags.get(name)
        return None if flag is None else flag.value


class CommandSettings(Struct, frozen=True, dict=True):
    """One command's settings: what was typed, and the rule over this invocation's environment
    and config files that resolves each when the command asks for it (a setting the command
    never reads never reads its config value, so a bad one there is not its error)."""

    given: Given
    for_node: bool = False
    """The run acts on its node (a scheduler's health check): no project file is read."""

    @classmethod
    def of(cls, given: Given, *, for_node: bool = False) -> CommandSettings:
        return cls(given, for_node)

    def on_node(self, for_node: bool) -> CommandSettings:
        """These settings for a run that acts on its node (no project file is read)."""
        return replace(self, for_node=for_node)

    @cached_property
    def rules(self) -> Resolver:
        from neuronctl.cli.app import get_app

        return get_app().resolver(for_node=self.for_node)

    def resolve(self, name: str) -> Setting[Any]:
        """Setting `name`: the flag typed > the environment > the config files > the default."""
        return self.rules.resolve(name, self.given.get(name))

    def value(self, name: str) -> Any:
        return self.resolve(name).value


class Resolves(Protocol):
    """A command's typed settings: built from its invocation (neuronctl.cli.settings_types)."""

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> object: ...


def with_settings(command: str, typed: type[Resolves] | None = None) -> Callable[[F], F]:
    """On top of a command's decorators: the flag of every setting whose row names `command`
    (in the table's order, above the command's own options; old spellings as the row says; help
    as `command` shows it), and its callback given one `settings` in place of their parameters:
    `typed.resolve` of this invocation (the generic CommandSettings where no type is named)."""

    def apply(f: F) -> F:
        def spellings(params: list[click.Parameter]) -> set[str]:
            return {o for p in params for o in getattr(p, "opts", [])}

        taken = spellings(getattr(f, "__click_params__", []))
        for spec in reversed(settings_table.SPECS):  # click lists the last added first
            if command in spec.commands:
                before = len(getattr(f, "__click_params__", []))
                f = setting_option(spec.name, old=command in dict(spec.old_whys),
                                   required=command in spec.required_on)(f)
                mine = spellings(getattr(f, "__click_params__", [])[before:])
                if taken & mine:  # click would take both and give one's value to the other
                    raise ValueError(f"row {spec.name}: `neuronctl {command}` already has "
                                     f"{', '.join(sorted(taken & mine))}")
                taken |= mine
        params: list[click.Parameter] = getattr(f, "__click_params__", [])
        options = [p for p in params if isinstance(p, SettingOption)]
        for option in options:
            option.help = None if option.old else option.spec.help_for(command)
            if option.old and option.spec.old_why is None:
                option.why = dict(option.spec.old_whys)[command]

        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            flags: dict[str, Flag] = {}
            for option in sorted(options, key=lambda o: o.old is None):  # the new spelling wins
                name = str(option.name)
                value = kwargs.pop(name, None)
                if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
                    spelled = Flag(value, option.old or str(option.spec.flag))
                    _one_spelling(flags.get(option.spec.name), spelled)
                    flags[option.spec.name] = spelled
            given = Given(MappingProxyType(flags))  # read-only: what was typed stays so
            invocation = CommandSettings.of(given)
            settings = invocation if typed is None else typed.resolve(invocation)
            return f(*args, settings=settings, **kwargs)

        setattr(run, _MARK, command)
        setattr(run, _TYPED, typed)
        return run  # type: ignore[return-value]

    return apply


def _one_spelling(earlier: Flag | None, typed: Flag) -> None:
    """An old and a new spelling of one setting, both typed: the same value is the same request;
    two values are a usage error (neither silently wins)."""
    if earlier is not None and earlier.value != typed.value:
        raise click.UsageError(f"{earlier.spelled} and {typed.spelled} are one setting given two "
                               f"values ({earlier.spelled} is the old spelling): give one")


def typed_settings(callback: Callable[..., Any] | None) -> type | None:
    """The typed settings class `with_settings` gives `callback`, else None (tests)."""
    found = getattr(callback, _TYPED, None)
    return found if isinstance(found, type) else None


def settings_command(callback: Callable[..., Any]) -> str | None:
    """The command `with_settings` built `callback` for, else None (tests walk the commands)."""
    found = getattr(callback, _MARK, None)
    return found if isinstance(found, str) else None
