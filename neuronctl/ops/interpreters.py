"""The Pythons on this machine, by version: what a new venv is made from (install) and what the
doctor's fix suggests. A module of its own, so that neither operation imports the other."""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Mapping

from neuronctl import proc
from neuronctl.backend.choose import absolute_path


def find_interpreter(version: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A Python X.Y on this machine: PATH's pythonX.Y, then pyenv's versions."""
    env = os.environ if environ is None else environ
    found = shutil.which(f"python{version}", path=absolute_path(env.get("PATH")))
    if found:
        try:
            # Run from "/" as the engine runs it (from a directory of its own), not from the
            # caller's: a pyenv shim picks its version by the working directory's .python-version.
            ran = proc.run([found, "-c", "pass"], proc.Bounds(timeout=10), cwd="/")
            ok = ran.returncode == 0 and not ran.timed_out
        except OSError:
            ok = False
        if ok:  # pyenv shims exist for every version but fail unless one is selected
            return found
    root = env.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for candidate in sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"), reverse=True):
        if os.access(candidate, os.X_OK):
            return candidate
    return None
