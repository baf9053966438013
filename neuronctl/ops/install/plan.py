"""Step 7 of an install, the plan: the diff of the target against the source's wheels, and what
the policy adds: moving to the native stack removes the legacy XLA packages (torch-xla,
libneuronxla, legacy torch-neuronx) and PyPI placeholders; any install removes what only the
packages it removes or replaces required (a CUDA torch's nvidia-* and triton:
backend/leftovers.py); a new venv whose engine puts no pip in it gets the base Python's bundled
pip wheel. Then the files the engine installs and every command it runs, and whether it can run
them: --offline with an engine that keeps no files can install only local ones. Removals are
confirmed before anything changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace
from packaging.utils import parse_wheel_filename

from neuronctl.backend.engine import Engine
from neuronctl.backend.plan import Plan, diff
from neuronctl.errors import InputError, OperationFailed
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.source_types import Sourced
from neuronctl.ops.install.target import InstallTarget
from neuronctl.ops.reporter import Reporter, Warn
from neuronctl.probes.legacy import detect_legacy
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.torch_neuronx import classify

LEGACY_WHY = "legacy XLA stack, replaced by native TorchNeuron"
PLACEHOLDER_WHY = "PyPI placeholder (import raises 'WRONG PACKAGE')"

Confirm = Callable[[str], bool]
"""Asks a person a yes/no question (the CLI's prompt); absent where nobody can answer."""


def installs_native(wanted: Iterable[LockedFile]) -> bool:
    return any(w.name == "torch-neuronx" and classify(w.version).flavour == "native" for w in wanted)


def removals(env: PythonEnv, wanted: Iterable[LockedFile]) -> dict[str, str]:
    """name -> why, for what must leave the target: only when the source is the native stack,
    the legacy packages and placeholders the target has (a legacy source removes nothing)."""
    if not installs_native(wanted):
        return {}
    legacy = detect_legacy(env, {})
    remove = dict.fromkeys(legacy.legacy_packages, LEGACY_WHY)
    for text in legacy.placeholders:
        remove[text.split(" ", 1)[0]] = PLACEHOLDER_WHY
    return remove


def make_plan(env: PythonEnv, wanted: tuple[LockedFile, ...]) -> Plan:
    """The diff of what `env` has against `wanted`, with the removals the policy adds: the
    legacy ones, then what only the removed or replaced packages required."""
    installed: Mapping[str, str] = {d.name: d.version for d in env.distributions.values()}
    remove = removals(env, wanted)
    first = diff(installed, wanted, remove)
    if not first.removals and all(c.old is None for c in first.applies):
        return first  # nothing goes, so nothing is left behind (and the graph walk is not loaded)
    from neuronctl.backend.leftovers import Going, leftovers

    going = [Going(c.name, c.old, "replaced") for c in first.applies if c.old is not None]
    going += [Going(c.name, c.old or "", "removed") for c in first.removals]
    staying = {c.name for c in first.changes if c.action != "remove"}
    left = leftovers(env.distributions, going, staying, dict(env.markers))
    return diff(installed, wanted, {**left, **remove}) if left else first


class Planned(Struct, frozen=True):
    """The plan for the target, the files the engine installs, and every command it runs."""

    plan: Plan
    target: InstallTarget
    """The target, with the pip wheel a new venv is seeded with, if any."""
    files: tuple[LockedFile, ...]
    commands: tuple[tuple[str, ...], ...]


def plan(env: PythonEnv, target: InstallTarget, sourced: Sourced, engine: Engine, *,
         offline: bool, seed: bool, reporter: Reporter) -> Planned:
    """The plan for `env` (the target as inspected), its files and its commands; `seed`: a new
    venv whose engine puts no pip in it."""
    made = make_plan(env, sourced.source.wanted)
    if seed:
        target = _seeded(target, env, sourced.source.wanted, reporter)
    files = sourced.engine_files([c.wanted for c in made.applies if c.wanted])
    if target.seed_pip is not None:
        files.append(_seed_file(target.seed_pip))
    commands: list[list[str]] = []
    if target.new_venv or files or made.removals:  # else no command runs: apply is not loaded
        from neuronctl.ops.install.apply import engine_commands

        commands = engine_commands(made, target, engine, offline=offline, installs=bool(files))
    if offline:
        check_offline(engine, files)
    return Planned(made, target, tuple(files), tuple(tuple(c) for c in commands))


def check_offline(engine: Engine, files: Sequence[LockedFile]) -> None:
    """--offline with an engine that keeps no files of its own can install only local files."""
    if engine.has_offline_cache:
        return
    remote = [f.name for f in files if not f.url.startswith("file:")]
    if remote:
        raise InputError(f"--offline: the {engine.name} engine keeps no downloaded files, and "
                         f"{', '.join(remote[:4])}{' ...' if len(remote) > 4 else ''} "
                         "would come from the network",
                         hint="use --engine uv (it installs from its own cache offline), or "
                              "install from a wheel directory (neuronctl download)")


def _seeded(target: InstallTarget, env: PythonEnv, wanted: Iterable[LockedFile],
            reporter: Reporter) -> InstallTarget:
    """A new venv whose engine puts no pip in it gets the base Python's bundled pip wheel,
    unless the source brings a pip of its own."""
    if any(w.name == "pip" for w in wanted):
        return target
    if env.bundled_pip:
        return replace(target, seed_pip=Path(env.bundled_pip))
    reporter.emit(Warn(f"{target.python} ships no bundled pip wheel; the new venv "
                       "gets no pip"))
    return target


def _seed_file(wheel: Path) -> LockedFile:
    """The bundled pip wheel, hashed here: a local file neuronctl trusts."""
    import hashlib  # only a seeded venv hashes a file (OpenSSL: ~4 ms of imports)

    data = wheel.read_bytes()
    return LockedFile("pip", str(parse_wheel_filename(wheel.name)[1]), wheel.name,
                      wheel.resolve().as_uri(), hashlib.sha256(data).hexdigest(), len(data)).checked()


def confirm_removals(plan: Plan, yes: bool, confirm: Confirm | None) -> None:
    """Removals need --yes or a person's answer; without either it is bad input, nothing changed."""
    if not plan.removals or yes:
        return
    names = ", ".join(f"{c.name} {c.old}" for c in plan.removals)
    if confirm is None:
        raise InputError(f"the plan removes {names}; pass --yes to confirm")
    if not confirm(f"Remove {names}?"):
        raise OperationFailed("not confirmed; nothing changed")
