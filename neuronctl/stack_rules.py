"""The one hook lock and install call: the documented rules (neuronctl.rules) applied to the
stack they are about to lock or install, for each target Python, on this chip and OS where
known. Core: no click, no I/O beyond the os-release read install hands in."""

from __future__ import annotations

from collections.abc import Sequence

from neuronctl.manifest import Framework, Manifest
from neuronctl.rules import Situation, enforce


def _line(version: str) -> str:
    return ".".join(version.split("+", maxsplit=1)[0].split(".")[:2])


def check_stack_rules(manifest: Manifest, release: str | None, framework: Framework | None,
                      pythons: Sequence[str], *, chip: str | None = None, os: str | None = None,
                      allow: bool = False, what: str = "this stack") -> list[str]:
    """Raise InputError for a combination a rule forbids (unless `allow`); the notes to show."""
    if release is None:
        return []
    situations = [Situation(release, backend=framework.backend if framework else None, chip=chip,
                            python=_line(py) if py else None,
                            torch=_line(framework.torch) if framework else None, os=os)
                  for py in (pythons or [""])]
    return enforce(manifest.rules, situations, manifest.cite, allow=allow,
                   what=f"{what} is not supported by Neuron {release}")
