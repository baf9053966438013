"""The inspection after an install, started before the engine runs.

A new interpreter takes ~40 ms to start and to load the inspection script, and the doctor after
an install needs one: started while the engine works, it has done all that by the time the engine
is done and only reads the distributions then (~5 ms). That answer is the one a fresh interpreter
would give unless the install changed what an interpreter reads as it starts: the .pth files
and the sitecustomize/usercustomize modules in the environment's site directories. Those are
listed before the interpreter and the engine start and again afterwards; where anything differs,
or the interpreter's site directories are not the ones listed, a fresh interpreter is asked.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from neuronctl.probes.pyenv import Inspection, PythonEnv

StartupFiles = frozenset[tuple[str, int, int, int, int]]


def startup_files(dirs: Sequence[str]) -> StartupFiles:
    """Each .pth file and site/user customize module in `dirs` (what site.py reads at start-up)
    with its size, inode, mtime and ctime (a rewrite changes one of them); a missing or
    unreadable directory is listed as such."""
    found: set[tuple[str, int, int, int, int]] = set()
    for folder in dirs:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".pth") or entry.name.startswith(("sitecustomize",
                                                                              "usercustomize")):
                        found.add(_stat(entry))
        except OSError:
            found.add((folder, -1, -1, -1, -1))
    return frozenset(found)


def _stat(entry: os.DirEntry[str]) -> tuple[str, int, int, int, int]:
    try:
        st = entry.stat()  # site.py follows a symlink: so does this
    except OSError:
        return (entry.path, -1, -1, -1, -1)
    return (entry.path, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def _same_dirs(reported: Sequence[str], listed: Sequence[str]) -> bool:
    return {os.path.realpath(d) for d in reported} <= {os.path.realpath(d) for d in listed}


class HeldInspection:
    """`python`'s inspection (as the doctor asks for it: no wheel tags), its interpreter started
    by start() (once the engine runs: it is not in the engine's way as it starts), its
    distributions read at result(), after the install. `site_dirs`: where the install puts
    packages (an existing environment's, from its inspection; a new venv's, from its layout),
    listed at once, before the engine starts."""

    def __init__(self, python: str, site_dirs: Sequence[str], timeout: float) -> None:
        self.python = python
        self.site_dirs = tuple(site_dirs)
        self.timeout = timeout
        self._before = startup_files(self.site_dirs)
        self._held: Inspection | None = None
        self._done = False

    def start(self) -> None:
        """Start the interpreter (once; not after result() or cancel())."""
        if self._held is None and not self._done:
            self._held = Inspection(self.python, timeout=self.timeout, tags=False, held=True)

    def result(self) -> PythonEnv:
        held, self._held, self._done = self._held, None, True
        if held is not None and startup_files(self.site_dirs) == self._before:
            env = held.result()
            if _same_dirs(env.site_dirs, self.site_dirs):
                return env
        elif held is not None:
            held.cancel()
        return Inspection(self.python, timeout=self.timeout, tags=False).result()

    def cancel(self) -> None:
        """The install failed, or no doctor follows: stop the interpreter (idempotent)."""
        self._done = True
        if self._held is not None:
            self._held.cancel()
            self._held = None


def venv_site_dirs(venv: str) -> list[str]:
    """A venv's site-packages folders by its layout (lib/pythonX.Y/site-packages; lib64 is a
    link to lib): a new venv's, before anything has inspected it."""
    import glob

    found = {os.path.realpath(d) for d in glob.glob(os.path.join(glob.escape(venv), "lib*", "python*",
                                                                 "site-packages"))}
    return sorted(found)[:4]
