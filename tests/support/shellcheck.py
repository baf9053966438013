"""shellcheck for the tests that lint a script neuronctl writes or ships: Debian's package, which
`.ci/run` installs. Where it is missing (a machine set up with the README's test command alone)
the lint tests skip and say why, as the Slurm and apt tests do; the rest of each test's checks
live in tests of their own, so a skip hides nothing else."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

needs_shellcheck = pytest.mark.skipif(shutil.which("shellcheck") is None,
                                      reason="needs shellcheck (Debian's package; .ci/run installs it)")


def shellcheck(script: Path, shell: str) -> subprocess.CompletedProcess[str]:
    """shellcheck's verdict on `script` read as `shell` (sh or bash)."""
    return subprocess.run(["shellcheck", "-s", shell, str(script)], capture_output=True, text=True,
                          check=False, timeout=60)
