"""The types of a setup plan: the request, its steps and the plan, in a module of their own.
The planner (plan.py) and the step builder (steps.py) both use them, and plan.py calls steps.py:
with the types here, steps.py imports no planner and the two import one way only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct, field

from neuronctl.ops.setup.repos import KEY_FINGERPRINT, SOURCES, OsTarget
from neuronctl.probes.setup_facts import SetupFacts
from neuronctl.release.model import Release, Source


class Step(Struct, frozen=True):
    """One step of the plan: what it does, why, how, and how to tell it is done already."""

    id: str
    title: str
    why: str
    commands: tuple[str, ...]
    check: str | None
    """A shell condition that holds when the step is done (None: the step always runs)."""
    satisfied: bool | None = None
    """What the facts say now: True done, False to do, None not known before it runs."""
    blocked: str | None = None
    """Why the step must not run now (processes holding /dev/neuron*)."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "why": self.why,
                "commands": list(self.commands), "check": self.check,
                "satisfied": self.satisfied, "blocked": self.blocked}


class SetupRequest(Struct, frozen=True):
    """What to plan: the release, the OS, the target's facts and the user's choices."""

    release: Release
    target: OsTarget
    facts: SetupFacts
    repo: str | None = None
    key_fingerprint: str = KEY_FINGERPRINT
    with_python: bool = False
    venv: str = ""
    allow_unsupported: bool = False
    chip: str | None = None
    repo_from: str = "default"
    """Where `repo` came from ("--repo", "config system_repo (FILE)")."""
    key_from: str = "default"
    release_data: str = "bundled manifest"
    """Which release data the pins come from (the manifest's source, for the plan's sources)."""
    value_sources: Mapping[str, Source] = field(default_factory=dict)
    """The release data's sources table, by id: each pin's public source."""
    neuronctl: str = "/usr/local/bin/neuronctl"
    """neuronctl by absolute path: what the steps run (never a name looked up from the cwd)."""
    python: str = "/usr/bin/python3"
    """The interpreter the doctor step checks without --with-python, by absolute path."""


class SetupPlan(Struct, frozen=True):
    """The ordered steps for one release on one target, and what the script's variables hold."""

    release: str
    target: OsTarget
    repo: str
    key_fingerprint: str
    packages: dict[str, str]
    """Package -> pinned upstream version ("" where the bundled data pins none)."""
    steps: tuple[Step, ...]
    variables: dict[str, str]
    facts: SetupFacts
    notes: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=lambda: dict(SOURCES))
    origins: dict[str, str] = field(default_factory=dict)
    """Each value of the plan (repository, key, suite, each pin) -> where it came from."""

    @property
    def driver(self) -> str:
        return self.packages["aws-neuronx-dkms"]

    def to_json(self) -> dict[str, Any]:
        return {"release": self.release, "os": self.target.id, "family": self.target.family,
                "repo": self.repo, "key_fingerprint": self.key_fingerprint,
                "packages": dict(self.packages), "steps": [s.to_json() for s in self.steps],
                "variables": dict(self.variables), "facts": self.facts.to_json(),
                "notes": list(self.notes), "sources": dict(self.sources),
                "origins": dict(self.origins)}
