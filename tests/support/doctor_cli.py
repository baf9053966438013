"""One doctor check run through the CLI against a fixture sysroot, its JSON record back."""

from __future__ import annotations

import json
from pathlib import Path


def access(cli, root: Path) -> dict:
    """device.access at level 1 on `root` (pass, warn or fail; never an internal error)."""
    r = cli("doctor", "--level", "1", "--only", "device.access", "--json", "--sysroot", str(root))
    assert r.code in (0, 1), r.err
    (check,) = json.loads(r.out)["checks"]
    return check
