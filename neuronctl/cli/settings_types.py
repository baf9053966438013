"""Each command's settings as one typed, frozen object: the argument `with_settings` gives its
body (as uv's `*Settings::resolve` builds one per command). A body reads typed fields
(`settings.timeout`, `settings.release.value`), never a setting by its name: mypy checks the
fields, and a value of the wrong type is a bug named here, not an `Any` passed on.

`resolve(invocation)` builds the object from what was typed. What the user typed is a plain field;
a value the rule resolves (flag > environment > config > default) is a `cached_property`, resolved
when the body first reads it: a setting a command never reads (or reads only on some paths, as
install's `device` and lock's `timeout` under --check) never reads its config value, so a bad one
there is not that run's error, and the notes and errors of the ones it reads come in the order the
body reads them, as they always have.

Here: the base every command's builds on, and the root's and `releases`'. The stack commands
(lock, install) share theirs (neuronctl.cli.stack_settings_types); the commands that look at a
host or an environment have theirs in neuronctl.cli.host_settings_types; `download` and
`releases update` theirs in neuronctl.cli.fetch_settings_types. A command imports only its own:
each class costs its creation at import, on every run (a msgspec Struct: made in C, where a
dataclass's methods were compiled from source, ~0.6 ms a class; neuronctl.records says why). A
command's class that adds no field to the one it extends repeats only its base's options
(`frozen=True`, for mypy; msgspec would inherit it), as the reporter's Note and Warn do. `dict=True`
is the base's alone: every class inherits it, so any typed field may be a cached_property."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from msgspec import Struct

from neuronctl.cli.setting_options import CommandSettings
from neuronctl.settings import Setting

if TYPE_CHECKING:
    from neuronctl.settings import Resolver

T = TypeVar("T")
S = TypeVar("S", bound="Typed")

__all__ = ["ManifestSettings", "Typed", "checked", "maybe", "optional_setting", "seconds_or_none",
           "texts", "typed", "typed_or_variable"]


# -- the checks that turn the rule's values into typed ones ---------------------------------------

def checked(value: object, kind: type[T], name: str) -> T:
    """`value` as `kind`: the table's parse rule returns it so; anything else is neuronctl's bug."""
    if not isinstance(value, kind):
        raise TypeError(f"setting {name}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def maybe(value: object, kind: type[T], name: str) -> T | None:
    return None if value is None else checked(value, kind, name)


def texts(value: object, name: str) -> tuple[str, ...]:
    """A repeatable setting's values (the flags typed, or the config's list)."""
    items = checked(value, tuple, name)
    return tuple(checked(item, str, name) for item in items)


def optional_setting(setting: Setting[Any], kind: type[T], name: str) -> Setting[T | None]:
    """A resolved setting whose value is `kind` or unset, with its source (for messages)."""
    return Setting(maybe(setting.value, kind, name), setting.source)


def typed(invocation: CommandSettings, name: str, kind: type[T]) -> T | None:
    """A setting's value as the user typed it (click converted it), else None."""
    return maybe(invocation.given.value(name), kind, name)


def typed_or_variable(invocation: CommandSettings, name: str, kind: type[T]) -> T | None:
    """A setting as typed, else its environment variable, else None: for a command that reads no
    config for it (init keeps what the file has, setup plans the default release)."""
    from neuronctl.settings import flag_or_environment

    # the rule's own first two steps, over the process's environment (as every command's rule)
    found = flag_or_environment(name, invocation.given.get(name))
    return None if found is None else maybe(found.value, kind, name)


def seconds_or_none(invocation: CommandSettings, name: str) -> float | None:
    """A time limit the command defaults itself where no source sets it (None)."""
    return maybe(invocation.value(name), float, name)


class Typed(Struct, frozen=True, dict=True):
    """What every command's settings hold: the invocation the typed fields are resolved from.
    dict=True (inherited by every command's class): a typed field is a cached_property, which
    needs an instance __dict__ to cache in (docs/maintaining.md, "Adding a setting")."""

    invocation: CommandSettings

    @classmethod
    def resolve(cls: type[S], invocation: CommandSettings) -> S:
        return cls(invocation)

    @property
    def _rules(self) -> Resolver:
        return self.invocation.rules


# -- the commands' own ------------------------------------------------------------------------------

class ManifestSettings(Typed, frozen=True):
    """`neuronctl`, `releases`, `releases show`: the `--manifest` typed (app.manifest resolves
    the rest: NEURONCTL_MANIFEST, the user's config)."""

    manifest: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> ManifestSettings:
        return cls(invocation, typed(invocation, "manifest", Path))
