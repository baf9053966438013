"""The inspection after an install, its interpreter started as the engine starts.

A new interpreter takes ~40 ms to start and to load the inspection script, and the doctor after
an install needs one: started while the engine works, it has done all that by the time the engine
is done and only reads the distributions then (~5 ms). That answer is the one a fresh interpreter
would give unless the install changed what an interpreter does as it starts: site.py reads the
.pth files in the site directories, adds the folders their path lines name (those that exist),
runs their import lines, and imports sitecustomize and usercustomize. So before the engine
starts, these are listed: each .pth file, each folder its path lines name (whether it exists),
the files of the top-level modules its import lines name, and the customize modules. After the
engine they are listed again; where anything differs, where the interpreter's site directories
are not the ones listed, or where the held interpreter fails in any way (its start-up code took
its stdin, say), a fresh interpreter is asked.

Not seen (start-up code that reaches beyond those files): a module that a .pth import line or a
customize module imports in turn, and paths computed rather than written in a .pth.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

from neuronctl.errors import FaultError
from neuronctl.probes.pyenv import Inspection, PythonEnv

Entry = tuple[str, int, int, int, int]
StartupFiles = frozenset[Entry]
PTH_READ_CAP = 256 * 1024
"""A .pth longer than this is listed by its stat alone (site.py reads it whole; nobody writes one
this long except to be slow)."""
_IMPORTED = re.compile(r"import[ \t]+([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)")


def startup_files(dirs: Sequence[str]) -> StartupFiles:
    """What a new interpreter's start-up reads in `dirs`, each with its size, inode, mtime and
    ctime (a rewrite changes one of them); a missing path, or one that cannot be read, is listed
    as such, so that its appearing counts too."""
    found: set[Entry] = set()
    for folder in dirs:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith(("sitecustomize", "usercustomize")):
                        found.add(_stat(entry.path))
                    elif entry.name.endswith(".pth"):
                        found.add(_stat(entry.path))
                        found.update(_pth_reads(folder, entry.path))
        except OSError:
            found.add((folder, -1, -1, -1, -1))
    return frozenset(found)


def _pth_reads(folder: str, pth: str) -> Iterator[Entry]:
    """What a .pth file makes site.py look at: whether the folders of its path lines exist (what
    is in them is read after the install anyway), and the files of the top-level modules its
    import lines name (looked for in its own site directory)."""
    try:
        with open(pth, "rb") as fh:  # site.py follows a symlink: so does this
            data = fh.read(PTH_READ_CAP + 1)
    except OSError:
        return
    if len(data) > PTH_READ_CAP:
        return
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith(("import ", "import\t")):
            for match in _IMPORTED.finditer(line):
                for name in match.group(1).split(","):
                    top = name.strip().split(".")[0]
                    yield _stat(os.path.join(folder, top + ".py"))
                    yield _stat(os.path.join(folder, top, "__init__.py"))
        elif line.strip() and not line.startswith("#"):
            path = os.path.join(folder, line.rstrip())
            yield (path, int(_stat(path)[1] >= 0), 0, 0, 0)


def _stat(path: str) -> Entry:
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in a .pth line
        return (path, -1, -1, -1, -1)
    return (path, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


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
            try:
                env = held.result()
            except FaultError:  # it failed or saw its stdin go early: a new one answers for it
                env = None
            if env is not None and _same_dirs(env.site_dirs, self.site_dirs):
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
