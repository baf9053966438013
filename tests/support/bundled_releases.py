"""What the tests know of the bundled release data (neuronctl/data/releases.json) without naming
today's newest release: read from the data, so that a maintainer adding the next Neuron release
(docs/maintaining.md) changes no test but those about the default release.

NEXT is a release no data holds yet, one minor above the newest: what the tests of `releases
update` add. DEFAULT is the one fact kept by hand: it changes only when a wholly published release
is added, and with it the README's sample output (the tests marked first_hour say where)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from packaging.version import Version

from support.paths import REPO

RAW = json.loads((REPO / "neuronctl" / "data" / "releases.json").read_text("utf-8"))
"""The bundled data as stored (a fresh copy for each test that changes it: copy.deepcopy)."""

VERSIONS: tuple[str, ...] = tuple(r["version"] for r in RAW["releases"])
NEWEST = VERSIONS[0]
"""The newest release (the data lists them newest first)."""
COMPILED: str = RAW["compiled"]
_newest = Version(NEWEST)
NEXT = f"{_newest.major}.{_newest.minor + 1}.0"
"""A release version no bundled release has: the next minor release."""

DEFAULT = "2.33.1"
"""The default release: the newest whose whole stack is published. Changed by hand when a wholly
published release is added, with the README's sample output (`pytest -m first_hour` says where)."""


def bundled_json(mutate: Callable[[dict[str, Any]], object] | None = None) -> bytes:
    """The bundled release data as JSON, changed by `mutate` first (a copy: the data stays)."""
    from neuronctl.release.manifest import load_bundled_manifest

    data = copy.deepcopy(load_bundled_manifest().to_json())
    if mutate:
        mutate(data)
    return json.dumps(data).encode()
