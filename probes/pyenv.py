"""The target Python environment: interpreter facts and installed distributions.

Read from the target interpreter itself in one short subprocess (its .dist-info directories, or
importlib.metadata where anything else is on its path), never by parsing `pip list`, so it works
for venvs without pip and for interpreters other than ours. The script is
probes/scripts/inspect_env.py, run through target_run (a private channel, bounded in size and
time); what it reports is checked field by field before anything uses it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Literal

from msgspec import Struct, field

from neuronctl.errors import FaultError, InputError
from neuronctl.probes.target_run import ScriptRun, TargetScript, last_line
from neuronctl.records import asdict
from neuronctl.safety import expand_user

# Packages whose top-level module is checked for the PyPI placeholder text.
WATCHED = ("torch-neuronx", "neuronx-cc", "nki", "libneuronxla", "torch-neuron", "neuron-cc",
           "torch-xla", "transformers-neuronx")

class InstalledDist(Struct, frozen=True):
    """A distribution installed in the target, as its .dist-info (or importlib.metadata) says."""

    name: str
    version: str
    requires: tuple[str, ...] = ()
    summary: str = ""
    installer: str = ""
    xla_impl: bool = False
    wrong_package: bool = False
    requested: bool = False
    """Its dist-info holds REQUESTED: an installer was asked for it by name (PEP 376)."""


class PythonEnv(Struct, frozen=True):
    """The target interpreter and its environment, each field checked (see parse_inspection)."""

    python: str
    implementation: str
    executable: str
    prefix: str
    base_prefix: str
    platform: str
    machine: str
    system: str
    libc: tuple[str, ...]
    distributions: Mapping[str, InstalledDist] = field(default_factory=dict)
    markers: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    """The wheel tags the target accepts, best first (from its packaging or pip; may be empty)."""
    bundled_pip: str = ""
    """The pip wheel the interpreter ships for ensurepip (seeds a venv offline); "" if none."""
    reader: str = ""
    """How distributions were read: "dist-info scan" or "importlib.metadata"."""
    site_dirs: tuple[str, ...] = ()
    """Where installers put its packages (sysconfig's purelib and platlib), absolute paths."""

    @property
    def in_venv(self) -> bool:
        return self.prefix != self.base_prefix

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.python.split(".")[:2]
                     if p.isascii() and p.isdigit() and len(p) <= 6)

    def get(self, name: str) -> InstalledDist | None:
        from packaging.utils import canonicalize_name

        return self.distributions.get(str(canonicalize_name(name)))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["in_venv"] = self.in_venv
        data["tags"] = list(self.tags[:8])
        data["distributions"] = sorted(
            ({"name": d.name, "version": d.version} for d in self.distributions.values()),
            key=lambda d: d["name"].lower())
        return data


def torch_build(dist: InstalledDist) -> str:
    """An installed torch's build: "CUDA", "CPU", another local label, or "default"."""
    local = dist.version.partition("+")[2]
    if local.startswith("cu") or any(r.startswith("nvidia-") for r in dist.requires):
        return "CUDA"
    return "CPU" if local == "cpu" else local or "default"


class MalformedInspection(ValueError):
    """The inspection's output is not what the script writes: wrong types, sizes or shapes."""


TEXT_CAP = 4096
LIST_CAP = 100_000
INSPECTION_CAP = 32 * 1024 * 1024
HELLO = {"inspect": "neuronctl-inspect-env", "version": 1}
PYTHON_VERSION = re.compile(r"\d+\.\d+(\.\d+)?[0-9A-Za-z.+]*")


def _text(data: Mapping[str, object], key: str, default: str | None = None, *,
          free: bool = False) -> str:
    """A string field; names, versions and paths must be printable, free text is made so."""
    value = data.get(key, default)
    if not isinstance(value, str) or len(value) > TEXT_CAP:
        raise MalformedInspection(f"{key}: not a string of at most {TEXT_CAP} characters")
    if free:
        return "".join(ch if ch.isprintable() else " " for ch in value)
    if not value.isprintable():
        raise MalformedInspection(f"{key}: control characters")
    return value


def _texts(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or len(value) > LIST_CAP:
        raise MalformedInspection(f"{key}: not a list of at most {LIST_CAP} items")
    return tuple(_text({key: item}, key) for item in value)


def _flag(data: Mapping[str, object], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise MalformedInspection(f"{key}: not true or false")
    return value


def _object(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise MalformedInspection(f"{what}: not a JSON object")
    return value


def _dist(raw: object) -> InstalledDist:
    entry = _object(raw, "distribution")
    return InstalledDist(
        name=_text(entry, "name"), version=_text(entry, "version"),
        requires=_texts(entry, "requires"), summary=_text(entry, "summary", "", free=True),
        installer=_text(entry, "installer", "", free=True), xla_impl=_flag(entry, "xla_impl"),
        wrong_package=_flag(entry, "wrong_package"), requested=_flag(entry, "requested"))


def _bundled_pip(data: Mapping[str, object]) -> str:
    """ensurepip's pip wheel seeds new venvs, so it must look like one: an absolute path to a
    pip-*.whl file (or "" for none)."""
    path = _text(data, "bundled_pip", "")
    name = os.path.basename(path)
    if path and not (os.path.isabs(path) and name.startswith("pip-") and name.endswith(".whl")):
        raise MalformedInspection("bundled_pip: not the path of a pip wheel")
    return path


def parse_inspection(data: object) -> PythonEnv:
    """The inspection's facts, every field checked for its type and size (they come from
    whatever runs in the target interpreter)."""
    from packaging.utils import canonicalize_name  # not at import: the inspection starts first

    top = _object(data, "inspection")
    raw_dists = top.get("distributions", [])
    if not isinstance(raw_dists, list) or len(raw_dists) > LIST_CAP:
        raise MalformedInspection("distributions: not a list")
    dists = {}
    for raw in raw_dists:
        dist = _dist(raw)
        dists[str(canonicalize_name(dist.name))] = dist
    markers = _object(top.get("markers", {}), "markers")
    python = _text(top, "python")
    if not PYTHON_VERSION.fullmatch(python):
        raise MalformedInspection("python: not a version")
    return PythonEnv(
        python=python, implementation=_text(top, "implementation"),
        executable=_text(top, "executable"), prefix=_text(top, "prefix"),
        base_prefix=_text(top, "base_prefix"), platform=_text(top, "platform"),
        machine=_text(top, "machine"), system=_text(top, "system"), libc=_texts(top, "libc"),
        distributions=dists, markers={key: _text(markers, key) for key in markers},
        tags=_texts(top, "tags"), bundled_pip=_bundled_pip(top), reader=_text(top, "reader", ""),
        site_dirs=_site_dirs(top))


def _site_dirs(data: Mapping[str, object]) -> tuple[str, ...]:
    dirs = _texts(data, "site_dirs")
    if len(dirs) > 2 or not all(os.path.isabs(d) for d in dirs):
        raise MalformedInspection("site_dirs: not at most two absolute paths")
    return dirs


def _locate(python: str) -> str:
    # Absolute but not resolved: a venv's bin/python is a symlink out of the venv, and the venv is
    # the point. Absolute because the inspection runs from another working directory.
    path = expand_user(python, "--python").absolute()
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
            if candidate.is_file():
                return str(candidate)
        raise InputError(f"--python {python}: a directory without bin/python")
    if not path.exists():
        raise InputError(f"--python {python}: no such interpreter")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise InputError(f"--python {python}: not executable")
    return str(path)


OLDEST_TARGET = (3, 6)
"""The oldest Python the scripts in probes/scripts/ run on."""


def _not_python(python: str, why: str) -> InputError:
    return InputError(f"--python {python}: not a Python 3 interpreter ({why})",
                      hint="give a python executable or a virtual environment's directory")


def _exited(run: ScriptRun) -> str:
    """How a run ended, for a message: its exit status and what it said last on stderr."""
    status = "no answer" if run.returncode is None else f"exit {run.returncode}"
    return status + (f": {last_line(run.stderr_tail)}" if run.stderr_tail.strip() else "")


@functools.lru_cache(maxsize=16)
def _check_is_python(exe: str, timeout: float = 30.0) -> None:
    """Run it once, without site, and ask for its version: /usr/bin/false, a shell script or
    Python 2 are bad input, named here, before any command relies on them."""
    try:
        run = TargetScript(exe, "python_version.py", [], flags=["-S"]).collect(timeout, 64)
    except OSError as exc:
        raise _not_python(exe, f"cannot run it: {exc.strerror or exc}") from None
    answer = re.fullmatch(rb"(\d{1,3})\.(\d{1,3})\n", run.channel)
    if answer is None:
        raise _not_python(exe, _exited(run))
    version = (int(answer[1]), int(answer[2]))
    if version < OLDEST_TARGET:
        raise _not_python(exe, f"it is Python {version[0]}.{version[1]}; neuronctl inspects "
                               f"Python {OLDEST_TARGET[0]}.{OLDEST_TARGET[1]} and newer")


def resolve_python(python: str | None, *, run_it: bool = True) -> str:
    """The interpreter to inspect: a path, a venv directory, or ours. A path must be a Python 3
    (checked by running it once; run_it=False for a caller whose Inspection of it comes next,
    which makes the same check, with the same message, if it does not answer)."""
    if not python:
        return sys.executable
    exe = _locate(python)
    if run_it:
        _check_is_python(exe)
    return exe


class Inspection:
    """An inspection running in the background (the target interpreter takes a while to start
    and import), so the caller can do its own work meanwhile; result() waits for it."""

    def __init__(self, python: str | None = None, *, timeout: float = 30.0, packages: bool = True,
                 tags: bool | Literal["unless-derivable"] = True, bundled_pip: bool = False,
                 metadata_only: bool = False, held: bool = False) -> None:
        """tags "unless-derivable": none where neuronctl derives them exactly (plain CPython on
        glibc: resolvers/targets.py), which spares the target importing packaging. metadata_only:
        read distributions with importlib.metadata even where the plain .dist-info scan would do
        (the reference the scan is tested against). held: the interpreter starts now, and reads
        the distributions only at result() (see probes/held_inspection.py)."""
        self.exe = _locate(python) if python else sys.executable
        self.timeout = timeout
        opts = {"watched": ",".join(WATCHED), "packages": packages, "tags": tags,
                "bundled_pip": bundled_pip, "metadata_only": metadata_only, "hold": held}
        args = [f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in opts.items()]
        try:
            self._script = TargetScript(self.exe, "inspect_env.py", args,
                                        cwd=os.path.dirname(self.exe) or None, held=held)
        except OSError as exc:
            raise _not_python(self.exe, f"cannot run it: {exc.strerror or exc}") from None

    def cancel(self) -> None:
        """Stop it, result unread (idempotent)."""
        self._script.kill()

    def result(self) -> PythonEnv:
        exe = self.exe
        run = self._script.collect(self.timeout, INSPECTION_CAP)
        lines = run.channel.split(b"\n")
        said_hello = _json_line(lines[0]) == HELLO
        if not said_hello and run.timed_out:  # a Python says hello first thing: this is none
            raise _not_python(exe, f"no answer in {self.timeout:g}s")
        if run.timed_out:
            raise FaultError(f"{exe}: inspecting the environment timed out after {self.timeout:g}s")
        if not said_hello:
            _check_is_python(exe)  # the precise bad-input message, if that is what it is
            raise FaultError(f"{exe}: the environment inspection did not start: {_exited(run)}")
        if run.channel_overflow:
            raise FaultError(f"{exe}: the environment inspection wrote more than "
                             f"{INSPECTION_CAP // (1024 * 1024)} MiB")
        if run.returncode != 0 or len(lines) < 2:
            raise FaultError(f"{exe}: inspecting the environment failed: {_exited(run)}")
        try:
            return parse_inspection(_json_line(lines[1]))
        except MalformedInspection as exc:
            raise FaultError(f"{exe}: unreadable inspection output ({exc})") from None


def _json_line(line: bytes) -> object:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def inspect_python(python: str | None = None, timeout: float = 30.0, *, tags: bool = True) -> PythonEnv:
    return Inspection(python, timeout=timeout, tags=tags).result()
