"""neuron-ls's JSON in both of its forms: the flags that ask for each and the parser of the
device list. Apart from system_packages (and what it loads) so that hardware detection, which
every install runs, reads neuron-ls without loading the system-package readers."""

from __future__ import annotations

import json
from typing import Any

NEURON_LS_FORMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Neuron 2.34 retires --json-output for --output-format json: try the new form first.
    ("output-format", ("--output-format", "json")),
    ("json-output", ("--json-output",)),
)


MAX_JSON = 8 * 1024 * 1024
"""Characters of neuron-ls output parsed at most (its runner stops reading at the same size)."""
MAX_DEVICES = 1024
"""More device objects than any instance has (a trn2.48xlarge has 16): not a device list."""


def load_json(stdout: str) -> Any:
    """neuron-ls's output as JSON, or None when it is not JSON neuronctl will read: too long,
    malformed, nested past the recursion limit, or an integer past Python's digit limit (a
    ValueError that is not a JSONDecodeError)."""
    if len(stdout) > MAX_JSON:
        return None
    try:
        return json.loads(stdout)
    except (ValueError, RecursionError):
        return None


def parse_neuron_ls_json(stdout: str) -> list[dict[str, Any]] | None:
    """The device list from either JSON form: the old top-level list of device objects, or an
    object holding that list (the new form's wrapper key is not fixed here; the one value that is
    a list of objects with `neuron_device` is taken). None for anything else, never an error."""
    data = load_json(stdout)
    if isinstance(data, dict):
        lists = [v for v in data.values()
                 if isinstance(v, list) and all(isinstance(d, dict) for d in v)]
        devices = [v for v in lists if any("neuron_device" in d for d in v)]
        data = devices[0] if len(devices) == 1 else lists[0] if not devices and len(lists) == 1 \
            else None
    if not isinstance(data, list) or len(data) > MAX_DEVICES \
            or not all(isinstance(d, dict) for d in data):
        return None
    return data
