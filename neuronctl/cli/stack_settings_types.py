"""The stack commands' settings (lock, install), typed and frozen: the request settings
lock and install share (release, torch, --with, the indexes and routes, each request's time
limit), and each command's own. Built as neuronctl.cli.settings_types says: what was typed is a
plain field, a value the rule resolves is read when the body first reads it (lock --check never
reads `timeout`; install reads `device` where its body always did), in the order the body reads
it. `stack()` is the typed input the lock operations take (neuronctl.ops.lock.StackSettings)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from msgspec import Struct

from neuronctl.cli.setting_options import CommandSettings, Given
from neuronctl.cli.settings_types import Typed, checked, maybe, seconds_or_none, texts, typed
from neuronctl.settings import Setting

if TYPE_CHECKING:
    from neuronctl.ops.lock.stack_settings import StackSettings

__all__ = ["InstallSettings", "LockSettings", "StackCommandSettings", "TypedStack"]


class TypedStack(Struct, frozen=True):
    """The request flags as the user typed them (lock --check's refresh command repeats them;
    install passes its --with on as typed)."""

    release: str | None = None
    torch: str | None = None
    requirements: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    routes: tuple[str, ...] = ()
    python_versions: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()

    @classmethod
    def of(cls, given: Given) -> TypedStack:
        return cls(maybe(given.value("release"), str, "release"),
                   maybe(given.value("torch"), str, "torch"), given.values("requirements"),
                   given.values("indexes"), given.values("routes"),
                   given.values("python_versions"), given.values("platforms"))


class StackCommandSettings(Typed, frozen=True):
    """What lock and install share: the stack they ask for, and each request's time limit."""

    typed: TypedStack = TypedStack()
    targets: ClassVar[bool] = True
    """The command takes the platform targets (--python-version, --platform); without them only
    the config's count (install's target is its interpreter's)."""

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> StackCommandSettings:
        return cls(invocation, TypedStack.of(invocation.given))

    def stack(self, *, latest: bool, fallback: str | None = None) -> StackSettings:
        """The stack the request settings ask for, resolved (release, torch, targets, --with,
        the indexes) in this order: their errors and notes come in it."""
        from neuronctl.ops.index_routing import index_sources
        from neuronctl.ops.lock.stack_settings import StackSettings

        given, rules = self.invocation.given, self._rules
        python = rules.resolve("python_versions",
                               given.get("python_versions") if self.targets else None)
        release = self.invocation.resolve("release")
        torch = maybe(self.invocation.value("torch"), str, "torch")
        platforms = rules.resolve("platforms", given.get("platforms") if self.targets else None)
        requirements = texts(self.invocation.value("requirements"), "requirements")
        return StackSettings(
            Setting(maybe(release.value, str, "release"), release.source), torch,
            texts(python.value, "python_versions"), python.source.named,
            texts(platforms.value, "platforms"), requirements,
            index_sources(rules, self.typed.indexes, self.typed.routes), latest, fallback)

    @cached_property
    def timeout(self) -> float:
        """Each network request's time limit."""
        return checked(self.invocation.value("timeout"), float, "timeout")


class LockSettings(StackCommandSettings, frozen=True):
    """`lock`: the request settings, the targets, and config `lock` (its -o default)."""

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> LockSettings:
        return cls(invocation, TypedStack.of(invocation.given))

    @cached_property
    def config_lock(self) -> str | None:
        """Config `lock`, where every reader of it looks (from its file's folder; spelled as
        written where that is the working directory: -o's errors quote it so); a project's names
        a file in the project (Spec.in_project), as `lock` writes there."""
        return self._rules.config_place("lock")


class InstallSettings(StackCommandSettings, frozen=True):
    """`install`: the request settings (its target is its interpreter's), the lock and sysroot
    as typed, the engine, the device, and the doctor's time limit afterwards."""

    targets: ClassVar[bool] = False
    lock: Path | None = None
    sysroot: Path | None = None

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> InstallSettings:
        return cls(invocation, TypedStack.of(invocation.given), typed(invocation, "lock", Path),
                   typed(invocation, "sysroot", Path))

    @cached_property
    def engine(self) -> Setting[str]:
        """The installer engine, with its source (the reason names the key as written)."""
        setting = self.invocation.resolve("engine")
        return Setting(checked(setting.value, str, "engine"), setting.source)

    @cached_property
    def device(self) -> Setting[str]:
        """The device, with its source: config `device` counts only with --lock (the body's
        rule), so this is read where that rule is applied."""
        setting = self.invocation.resolve("device")
        return Setting(checked(setting.value, str, "device"), setting.source)

    @cached_property
    def check_timeout(self) -> float | None:
        return seconds_or_none(self.invocation, "check_timeout")

