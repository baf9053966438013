"""The inspection after an install, its interpreter started as the engine starts.

A new interpreter takes ~40 ms to start and to load the inspection script, and the doctor after
an install needs one: started while the engine works, it has done all that by the time the engine
is done and only reads the distributions then (~5 ms). That answer is the one a fresh interpreter
would give unless the install changed what an interpreter does as it starts: site.py reads the
.pth files in the site directories, adds the folders their path lines name (those that exist),
executes every line that starts with `import ` or `import\t` (any code: `__import__('x')` after
a `;` is as much an import as `import x`), and imports sitecustomize and usercustomize.

So before the engine starts, these are listed: each .pth file, each folder its path lines name
(whether it exists), the customize modules, and for the executable lines, which are not parsed
as imports but read as opaque code, every top-level module in the site directories whose name
appears anywhere in such a line (as an identifier or inside a string), present or not. A .pth
too long or unreadable to list this way makes the site directories' own listings count (so any
install into them does). After the engine they are listed again; where anything differs, where
the interpreter's site directories are not the ones listed, where a module the held interpreter
loaded as it started changed since it started (the inspection checks this itself, in
inspect_hold.py: what the executable lines imported in turn, by whatever name they computed), or
where the held interpreter fails in any way (its start-up code took its stdin, say), a fresh
interpreter is asked.

Not seen: a start-up import by a name computed at run time (not written in the line) that
failed as the held interpreter started and that the install then makes importable.
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
"""A .pth longer than this is not read (site.py reads it whole; nobody writes one this long
except to be slow): its code is not known, so any change to the site directories counts."""
_WORD = re.compile(r"\w+(?:\.\w+)*")
"""What may name a module in an executable .pth line: any identifier, and any word inside a
string (`__import__('_distutils_hack')`, `importlib.import_module("x")`)."""
_EXECUTABLE = ("import ", "import\t")
"""site.py exec()s a .pth line that starts with one of these (after skipping '#' lines)."""


def startup_files(dirs: Sequence[str]) -> StartupFiles:
    """What a new interpreter's start-up reads in `dirs`, each with its size, inode, mtime and
    ctime (a rewrite changes one of them); a missing path, or one that cannot be read, is listed
    as such, so that its appearing counts too."""
    found: set[Entry] = set()
    words: set[str] = set()
    opaque = False
    listings: dict[str, list[str]] = {}
    for folder in dirs:
        try:
            with os.scandir(folder) as entries:
                names = listings[folder] = [entry.name for entry in entries]
        except OSError:
            found.add((folder, -1, -1, -1, -1))
            continue
        for name in names:
            path = os.path.join(folder, name)
            if name.startswith(("sitecustomize", "usercustomize")):
                found.add(_stat(path))
            elif name.endswith(".pth"):
                found.add(_stat(path))
                opaque |= not _pth_reads(folder, path, found, words)
    for folder, names in listings.items():
        if opaque:  # a .pth whose code could not be read: any change to the folder counts
            found.add(_stat(folder))
        found.update(_importable(folder, names, words))
    return frozenset(found)


def _pth_reads(folder: str, pth: str, found: set[Entry], words: set[str]) -> bool:
    """What a .pth file makes site.py look at, added to `found`: whether the folders of its path
    lines exist (what is in them is read after the install anyway); and the words of its
    executable lines, added to `words`. False where it cannot be read (so not known)."""
    try:
        with open(pth, "rb") as fh:  # site.py follows a symlink: so does this
            data = fh.read(PTH_READ_CAP + 1)
    except OSError:  # gone since the listing is known; one that cannot be read is not
        return not os.path.lexists(pth)
    if len(data) > PTH_READ_CAP:
        return False
    # site.py reads it as text with universal newlines (utf-8-sig first: a BOM is no character
    # of the first line); str.splitlines would also split at \x0b, \x1c, \x85 and the like.
    text = data.decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    for line in text.split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith(_EXECUTABLE):
            for dotted in _WORD.findall(line):  # `a.b.c`: a, and a's submodule files b, b/c
                words.add(dotted)
                words.update(dotted.split("."))
        else:
            path = os.path.join(folder, line.rstrip())
            found.add((path, int(_stat(path)[1] >= 0), 0, 0, 0))
    return True


def _importable(folder: str, names: Sequence[str], words: set[str]) -> Iterator[Entry]:
    """For each word of an executable line: what in `folder` an import of it would find (a
    module file, a package folder and its __init__.py, an extension module `word.*.so`), or
    that nothing is there, so that one appearing counts."""
    folded = {word.casefold() for word in words}  # a case-insensitive disk finds `Hack` for hack
    for name in names:
        if name.split(".", 1)[0].casefold() in folded:
            path = os.path.join(folder, name)
            yield _stat(path)
            if os.path.isdir(path):
                yield _stat(os.path.join(path, "__init__.py"))
    for word in words:  # a submodule a line names: its file, present or not
        parts = word.split(".")
        if len(parts) > 1 and parts[0] in names:
            inner = os.path.join(folder, *parts)
            yield _stat(inner + ".py")
            yield _stat(os.path.join(inner, "__init__.py"))


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
