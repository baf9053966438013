"""The one hook lock and install call: the documented rules (neuronctl.release.rules) applied to the
stack they are about to lock or install, for each target Python, on this chip and OS where
known. Core: no click, no I/O beyond the os-release read install hands in."""

from __future__ import annotations

from collections.abc import Sequence

from neuronctl.release.model import Framework, Release
from neuronctl.release.rules import Situation, enforce


def _line(version: str) -> str:
    return ".".join(version.split("+", maxsplit=1)[0].split(".")[:2])


def check_stack_rules(release: Release | None, framework: Framework | None,
                      pythons: Sequence[str], *, chip: str | None = None, os: str | None = None,
                      allow: bool = False, what: str = "this stack") -> list[str]:
    """Raise InputError for a combination a rule forbids (unless `allow`); the notes to show
    (warn-severity rules, rules --allow-unsupported overrode, pins not published)."""
    if release is None:
        return []
    situations = [Situation(release.version, flavour=framework.flavour if framework else None,
                            chip=chip, python=_line(py) if py else None,
                            torch=_line(framework.torch) if framework else None, os=os)
                  for py in (pythons or [""])]
    notes = enforce(release.rules, situations, allow=allow,
                    what=f"{what} is not supported by Neuron {release.version}")
    if release.constraints:
        notes.append(f"Neuron {release.version} does not publish the pins of "
                     f"{', '.join(release.constraints)}: they are resolved from the index within "
                     "AWS's install recipe (" + ", ".join(
                         f"{n}{s}" if s else f"{n} unpinned" for n, s in release.constraints.items())
                     + ")")
    return notes
