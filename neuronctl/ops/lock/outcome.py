"""What `neuronctl lock` did, as one value: the lock written (or checked) and how it was made.
The CLI renders it as text or as the JSON document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct, field

from neuronctl.errors import EXIT_FAILED
from neuronctl.resolvers.lock_record import LockedPackage
from neuronctl.resolvers.targets import PlatformTarget


class LockOutcome(Struct, frozen=True):
    """What `neuronctl lock` wrote (or checked): the stack, packages, routing, network use."""

    path: str
    """The lock's path, or "-" when it went to stdout."""
    fmt: str
    release: str
    torch: str
    targets: tuple[PlatformTarget, ...]
    routing: Mapping[str, Any]
    packages: tuple[LockedPackage, ...] = ()
    network: Mapping[str, Any] = field(default_factory=dict)
    """What went over the wire (requests, bytes, cache hits, whole-file downloads)."""
    metadata: Mapping[str, int] = field(default_factory=dict)
    """How many files' metadata came each way (sidecar, range, download, file, cache)."""
    text: str | None = None
    """The lock itself, for the face to write to stdout (-o -); None once written to a file."""
    checked: bool = False
    """--check: the lock was compared with the request, not written."""
    missing: bool = False
    """--check found no lock file at `path`."""
    problems: tuple[str, ...] = ()
    """--check: what no longer matches, one line each."""
    fallback: Mapping[str, str] | None = None
    """A fallback lock's {"device", "variant"}; None for the Neuron lock."""

    @property
    def stack_label(self) -> str:
        """What the lock holds, for one line of text: Neuron 2.33.0, torch 2.14.0; or the
        fallback: torch 2.14.0+cu130 (cuda fallback of Neuron 2.33.0)."""
        if self.fallback is None:
            return f"Neuron {self.release}, torch {self.torch}"
        device, variant = self.fallback.get("device"), self.fallback.get("variant")
        local = variant or device
        return f"torch {self.torch}+{local}, {device} fallback of Neuron {self.release}"

    @property
    def up_to_date(self) -> bool:
        return not self.missing and not self.problems

    @property
    def exit_code(self) -> int:
        return 0 if not self.checked or self.up_to_date else EXIT_FAILED

    @property
    def full_downloads(self) -> tuple[str, ...]:
        return tuple(str(d) for d in self.network.get("full_downloads", ()))

    def package_rows(self) -> list[dict[str, Any]]:
        return [{"name": p.name, "version": str(p.version), "index": p.index_name,
                 "targets": [t.label for t in p.targets]} for p in self.packages]

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {
            "kind": "lock", "path": self.path, "format": self.fmt, "release": self.release,
            "torch": self.torch, "targets": [t.to_json() for t in self.targets]}
        if self.fallback is not None:
            head["fallback"] = dict(self.fallback)
        if self.checked:
            problems = ["no lock file"] if self.missing else list(self.problems)
            return {**head, "check": True, "up_to_date": self.up_to_date, "problems": problems}
        return {**head, "routing": dict(self.routing), "packages": self.package_rows(),
                "network": dict(self.network), "metadata": dict(self.metadata)}
