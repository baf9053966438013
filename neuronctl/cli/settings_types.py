"""Each command's settings as one typed, frozen object: the argument `with_settings` gives its
body (as uv's `*Settings::resolve` builds one per command). A body reads typed fields
(`settings.timeout`, `settings.release.value`), never a setting by its name: mypy checks the
fields, and a value of the wrong type is a bug named here, not an `Any` passed on.

`resolve(invocation)` builds the object from what was typed. What the user typed is a plain field;
a value the rule resolves (flag > environment > config > default) is a `cached_property`, resolved
when the body first reads it: a setting a command never reads (or reads only on some paths, as
install's `device` and lock's `timeout` under --check) never reads its config value, so a bad one
there is not that run's error, and the notes and errors of the ones it reads come in the order the
body reads them, as they always have. The stack commands (lock, install, download) share theirs
(neuronctl.cli.stack_settings_types); these are the others."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from neuronctl.cli.setting_options import CommandSettings
from neuronctl.settings import Setting

if TYPE_CHECKING:
    from neuronctl.settings import Resolver

T = TypeVar("T")
S = TypeVar("S", bound="Typed")

__all__ = ["CostSettings", "DoctorSettings", "EnvSettings", "FleetDoctorSettings", "InitSettings",
           "ManifestSettings", "ProbeSettings", "ReleasesUpdateSettings", "SetupSettings",
           "SmokeSettings", "SysrootSettings", "Typed", "checked", "maybe", "optional_setting",
           "seconds_or_none", "texts", "typed"]


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


def seconds_or_none(invocation: CommandSettings, name: str) -> float | None:
    """A time limit the command defaults itself where no source sets it (None)."""
    return maybe(invocation.value(name), float, name)


@dataclass(frozen=True)
class Typed:
    """What every command's settings hold: the invocation the typed fields are resolved from."""

    invocation: CommandSettings

    @classmethod
    def resolve(cls: type[S], invocation: CommandSettings) -> S:
        return cls(invocation)

    @property
    def _rules(self) -> Resolver:
        return self.invocation.rules


# -- the commands' own ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ManifestSettings(Typed):
    """`neuronctl`, `releases`, `releases show`: the `--manifest` typed (app.manifest resolves
    the rest: NEURONCTL_MANIFEST, the user's config)."""

    manifest: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> ManifestSettings:
        return cls(invocation, typed(invocation, "manifest", Path))


@dataclass(frozen=True)
class SysrootSettings(Typed):
    """`detect`, `bundle`: the `--sysroot` typed (NEURONCTL_SYSROOT where it is not)."""

    sysroot: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> SysrootSettings:
        return cls(invocation, typed(invocation, "sysroot", Path))


@dataclass(frozen=True)
class EnvSettings(SysrootSettings):
    """`env`: collect_env's time limit and the sysroot."""

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> EnvSettings:
        return cls(invocation, typed(invocation, "sysroot", Path))

    @cached_property
    def check_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "check_timeout")


@dataclass(frozen=True)
class ProbeSettings(Typed):
    """`probe`: its run's time limit and the device it probes."""

    @cached_property
    def check_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "check_timeout")

    @cached_property
    def device(self) -> str:
        return checked(self.invocation.value("device"), str, "device")


@dataclass(frozen=True)
class SmokeSettings(ProbeSettings):
    """`smoke`: the model (`--model` as typed; else the config's, with its file), the device and
    the whole run's time limit."""

    model_flag: str | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> SmokeSettings:
        return cls(invocation, typed(invocation, "model", str))

    @cached_property
    def model(self) -> Setting[str | None]:
        return optional_setting(self.invocation.resolve("model"), str, "model")

    @cached_property
    def model_file(self) -> str:
        """The config file `model` is read from (its errors and the origin name it)."""
        return self._rules.config_file("model")[0]

    @cached_property
    def run_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "run_timeout")


@dataclass(frozen=True)
class DoctorSettings(SysrootSettings):
    """`doctor`: everything its request says, resolved in the order the request reads it."""

    manifest: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> DoctorSettings:
        return cls(invocation, typed(invocation, "sysroot", Path),
                   typed(invocation, "manifest", Path))

    def on_node(self, for_node: bool) -> DoctorSettings:
        """These settings for a run that acts on its node: no project file is read."""
        return replace(self, invocation=self.invocation.on_node(for_node))

    @property
    def for_node(self) -> bool:
        return self.invocation.for_node

    @cached_property
    def drain_on(self) -> str:
        return checked(self.invocation.value("drain_on"), str, "drain_on")

    @cached_property
    def model(self) -> Setting[str | None]:
        return optional_setting(self.invocation.resolve("model"), str, "model")

    @cached_property
    def model_config(self) -> tuple[str, Path]:
        """The config file `model` is read from, and the folder its module is found in."""
        return self._rules.config_file("model")

    @cached_property
    def release(self) -> Setting[str | None]:
        return optional_setting(self.invocation.resolve("release"), str, "release")

    @cached_property
    def lock(self) -> Path | None:
        return maybe(self.invocation.value("lock"), Path, "lock")

    @cached_property
    def device(self) -> str:
        return checked(self.invocation.value("device"), str, "device")

    @cached_property
    def strict(self) -> bool:
        return checked(self.invocation.value("strict"), bool, "strict")

    @cached_property
    def skip(self) -> tuple[str, ...]:
        """The flags' and the config's checks together (they add up)."""
        return self.invocation.given.values("skip") + self._rules.config_list("skip")

    @cached_property
    def check_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "check_timeout")


@dataclass(frozen=True)
class SetupSettings(SysrootSettings):
    """`setup`: the release and sysroot as typed, and the repository (a trust root)."""

    release: str | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> SetupSettings:
        return cls(invocation, typed(invocation, "sysroot", Path),
                   typed(invocation, "release", str))

    @cached_property
    def system_repo(self) -> Setting[str | None]:
        return optional_setting(self.invocation.resolve("system_repo"), str, "system_repo")


@dataclass(frozen=True)
class InitSettings(Typed):
    """`init`: only what is typed (the file keeps what it has otherwise)."""

    release: str | None = None
    torch: str | None = None
    python_versions: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> InitSettings:
        given = invocation.given
        return cls(invocation, typed(invocation, "release", str), typed(invocation, "torch", str),
                   given.values("python_versions"), given.values("platforms"))


@dataclass(frozen=True)
class FleetDoctorSettings(Typed):
    """`fleet doctor`: the srun step's time limit (a flag only)."""

    @cached_property
    def run_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "run_timeout")


@dataclass(frozen=True)
class CostSettings(Typed):
    """`cost`: the `--price` rows typed, and the config's prices table beside them."""

    prices: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> CostSettings:
        return cls(invocation, invocation.given.values("prices"))

    @cached_property
    def config_prices(self) -> tuple[Mapping[str, object], str]:
        """The config's `prices` table (each row is checked by `cost`, naming it) and its file."""
        table, where = self._rules.config_entries("prices")
        if not isinstance(table, Mapping):
            raise TypeError(f"setting prices: expected a table, got {type(table).__name__}")
        return table, where


@dataclass(frozen=True)
class ReleasesUpdateSettings(Typed):
    """`releases update`: where release data is fetched from (a trust root)."""

    @cached_property
    def manifest_url(self) -> str | None:
        return maybe(self.invocation.value("manifest_url"), str, "manifest_url")
