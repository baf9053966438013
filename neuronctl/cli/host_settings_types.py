"""The typed, frozen settings of the commands that look at a host or an environment (detect,
bundle, env, probe, smoke, doctor, setup, init, fleet doctor, cost), built as
neuronctl.cli.settings_types says: what was typed is a plain field, what the rule resolves a
`cached_property` read when the body first needs it. Apart from the base so that a command that
needs none of them (install, lock, releases ...) does not create their classes on every run."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from neuronctl.cli.setting_options import CommandSettings
from neuronctl.cli.settings_types import (
    Typed,
    checked,
    maybe,
    optional_setting,
    seconds_or_none,
    typed,
    typed_or_variable,
)
from neuronctl.settings import Setting

if TYPE_CHECKING:
    pass

__all__ = ["CostSettings", "DoctorSettings", "EnvSettings", "RunSettings", "InitSettings",
           "ProbeSettings", "SetupSettings", "SmokeSettings", "SysrootSettings"]


class SysrootSettings(Typed, frozen=True):
    """`detect`, `bundle`: the `--sysroot` typed (NEURONCTL_SYSROOT where it is not)."""

    sysroot: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> SysrootSettings:
        return cls(invocation, typed(invocation, "sysroot", Path))


class EnvSettings(SysrootSettings, frozen=True):
    """`env`: collect_env's time limit and the sysroot."""

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> EnvSettings:
        return cls(invocation, typed(invocation, "sysroot", Path))

    @cached_property
    def check_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "check_timeout")


class ProbeSettings(Typed, frozen=True):
    """`probe`: its run's time limit and the device it probes."""

    @cached_property
    def check_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "check_timeout")

    @cached_property
    def device(self) -> str:
        return checked(self.invocation.value("device"), str, "device")


class SmokeSettings(ProbeSettings, frozen=True):
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


class DoctorSettings(SysrootSettings, frozen=True):
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


class SetupSettings(SysrootSettings, frozen=True):
    """`setup`: the release and sysroot as typed, and the repository (a trust root)."""

    release: str | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> SetupSettings:
        return cls(invocation, typed(invocation, "sysroot", Path),
                   typed_or_variable(invocation, "release", str))

    @cached_property
    def system_repo(self) -> Setting[str | None]:
        return optional_setting(self.invocation.resolve("system_repo"), str, "system_repo")

    @cached_property
    def config_lock(self) -> str | None:
        """Config `lock`, where `lock` writes it (`--dockerfile`'s default lock: the project's
        lock, not one by another name beside it)."""
        return self._rules.config_place("lock")

    @cached_property
    def config_lock_file(self) -> str:
        """The config file `config_lock` comes from (its errors name it)."""
        return self._rules.config_file("lock")[0]


class InitSettings(Typed, frozen=True):
    """`init`: what is typed or in the variables (the file keeps what it has otherwise)."""

    release: str | None = None
    torch: str | None = None
    python_versions: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> InitSettings:
        given = invocation.given
        return cls(invocation, typed_or_variable(invocation, "release", str),
                   typed_or_variable(invocation, "torch", str),
                   given.values("python_versions"), given.values("platforms"))


class RunSettings(Typed, frozen=True):
    """`fleet doctor`, `coverage`: the whole run's time limit (a flag only: the srun step's, one
    model's run)."""

    @cached_property
    def run_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "run_timeout")


class CostSettings(Typed, frozen=True):
    """`cost`: the `--price` rows typed, the config's prices table beside them, and the root
    this host's instance type is read under."""

    prices: tuple[str, ...] = ()
    sysroot: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> CostSettings:
        return cls(invocation, invocation.given.values("prices"), typed(invocation, "sysroot", Path))

    @cached_property
    def config_prices(self) -> tuple[Mapping[str, object], str]:
        """The config's `prices` table (each row is checked by `cost`, naming it) and its file."""
        table, where = self._rules.config_entries("prices")
        if not isinstance(table, Mapping):
            raise TypeError(f"setting prices: expected a table, got {type(table).__name__}")
        return table, where
