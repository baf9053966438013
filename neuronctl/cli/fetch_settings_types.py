"""The settings of the commands that fetch without a stack request, typed and frozen: `download`
(a lock's files into a wheelhouse) and `releases update` (the release data). Apart from the
stack commands' (neuronctl.cli.stack_settings_types) so that install and lock, which never use
them, do not create these classes on every run (issue 36). Built as neuronctl.cli.settings_types
says."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from neuronctl.cli.settings_types import Typed, checked, maybe

if TYPE_CHECKING:
    from neuronctl.cli.setting_options import CommandSettings
    from neuronctl.ops.index_routing import IndexSources

__all__ = ["DownloadSettings", "ReleasesUpdateSettings"]


class DownloadSettings(Typed, frozen=True):
    """`download`: the lock and the targets as typed (else the lock's own), each request's time
    limit, and the config's and the environment's indexes (no flags here)."""

    lock: Path
    """Required: click stops a run without it before the command is called."""
    python_versions: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, invocation: CommandSettings) -> DownloadSettings:
        given = invocation.given
        return cls(invocation, checked(given.value("lock"), Path, "lock"),
                   given.values("python_versions"), given.values("platforms"))

    @cached_property
    def indexes(self) -> IndexSources:
        from neuronctl.ops.index_routing import index_sources

        return index_sources(self._rules)

    @cached_property
    def timeout(self) -> float:
        return checked(self.invocation.value("timeout"), float, "timeout")


class ReleasesUpdateSettings(Typed, frozen=True):
    """`releases update`: where release data is fetched from (a trust root)."""

    @cached_property
    def manifest_url(self) -> str | None:
        return maybe(self.invocation.value("manifest_url"), str, "manifest_url")
