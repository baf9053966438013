"""`neuronctl doctor` as an operation: `doctor(DoctorRequest)` validates the request, chooses the
checks and runs them over one set of facts. It is the one entry point: install's post-install
doctor calls it too, handing over what it already holds (`Known`: the hardware, the lock, the
target's inspection), so that nothing is gathered twice."""

from __future__ import annotations

import datetime as dt
import functools
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl.devices import DEVICES
from neuronctl.errors import InputError
from neuronctl.ops.doctor.checks import CHECK_IDS, CHECK_LEVELS, CHECKS
from neuronctl.ops.doctor.facts import Facts, ModelRun
from neuronctl.ops.doctor.levels import (
    DEFAULT_LEVEL,
    LEVELS,
    MULTI_NODE_CHECKS,
    Budget,
    budget_for,
    multi_node_step,
)
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import Begun, Check, CheckResult, begin, run_checks, run_ready
from neuronctl.ops.reporter import Note, NullReporter, Reporter, StepStarted, status
from neuronctl.probes.pyenv import resolve_python
from neuronctl.probes.sysroot import SysRoot
from neuronctl.release.model import Manifest

if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.probes.held_inspection import HeldInspection
    from neuronctl.probes.pyenv import PythonEnv


class DoctorStarted(StepStarted, frozen=True):
    """The doctor's checks begin: which ones, at what level. Declared with the operation that
    emits it, so a command without the doctor does not create it (issue 36)."""

    checks: tuple[str, ...] = ()
    level: int = 0


GROUPS: tuple[str, ...] = tuple(dict.fromkeys(i.split(".")[0] for i in CHECK_IDS))
SELECTORS_HELP = f"groups: {', '.join(GROUPS)}; ids: {', '.join(CHECK_IDS)}"


def _no_such_check(flag: str, pattern: str) -> InputError:
    import difflib

    near = difflib.get_close_matches(pattern, [*CHECK_IDS, *GROUPS], n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return InputError(f"{flag} {pattern!r}: no such check{hint} ({SELECTORS_HELP})")


def select_checks(only: tuple[str, ...], skip: tuple[str, ...], lock: Path | None,
                  probe: bool = True, level: int = DEFAULT_LEVEL,
                  multi_node: bool = False) -> list[str]:
    """The checks to run: the level's (with the multi-node ones at every level when
    `multi_node`), narrowed by --only and --skip; `probe=False` leaves out the device probe
    (install's post-install doctor on a host without Neuron devices)."""
    def expand(pattern: str, flag: str) -> set[str]:
        hits = {i for i in CHECK_IDS if i == pattern or i.startswith(pattern + ".")}
        if not hits:
            raise _no_such_check(flag, pattern)
        return hits

    def runs(check_id: str) -> bool:
        return CHECK_LEVELS[check_id] <= level or (multi_node and check_id in MULTI_NODE_CHECKS)

    chosen = {i for i in CHECK_IDS if runs(i)}
    if only:
        asked = [(p, expand(p, "--only")) for p in only]
        for pattern, hits in asked:
            if not any(runs(i) for i in hits):
                need = min(CHECK_LEVELS[i] for i in hits)
                raise InputError(f"--only {pattern}: runs from level {need}, this run is level "
                                 f"{level}", hint=f"add --level {need}")
        chosen &= set().union(*(hits for _, hits in asked))
    for pattern in skip:
        chosen -= expand(pattern, "--skip")
    if lock is None:
        if only and "lock.drift" in chosen:
            raise InputError("--only lock.drift needs --lock FILE")
        chosen.discard("lock.drift")
    if not probe:
        chosen.discard("device.probe")
    return [i for i in CHECK_IDS if i in chosen]


def _python_section(facts: Facts) -> dict[str, Any]:
    env = facts.env
    return {"version": env.python, "executable": env.executable, "venv": env.in_venv,
            "platform": env.platform}


def _release_section(facts: Facts) -> dict[str, Any]:
    selection = facts.selection
    # "backend" is the flavour's old key (fleet doctor and scripts read it); "flavour" its word.
    flavour = selection.release.flavour
    return {"version": selection.release.version, "backend": flavour, "flavour": flavour,
            "reason": selection.reason}


def _hardware_section(facts: Facts) -> dict[str, Any]:
    hw = facts.hardware
    return {"chip": hw.chip, "devices": hw.device_count, "instance_type": hw.instance_type,
            "driver": hw.driver_version, "runtime": hw.runtime_version, "tools": hw.tools_version,
            "collectives": hw.system_packages.get("aws-neuronx-collectives")}


def _efa_section(facts: Facts) -> dict[str, Any]:
    from neuronctl.ops.doctor.checks_network import efa_section

    return efa_section(facts)


STACK_PACKAGES = ("torch", "torch-neuronx", "neuronx-cc", "nki")
"""The installed versions a stack fingerprint (fleet doctor, the Prometheus info metric) reads."""


def _packages_section(facts: Facts) -> dict[str, Any]:
    env = facts.env
    return {name: (dist.version if (dist := env.get(name)) is not None else None)
            for name in STACK_PACKAGES}


def _distributions_section(facts: Facts) -> dict[str, Any]:
    """Every installed distribution, name -> version: `fleet doctor` compares the whole set."""
    return {name: dist.version for name, dist in sorted(facts.env.distributions.items())}


SECTIONS: tuple[tuple[str, str, Callable[[Facts], dict[str, Any]]], ...] = (
    ("python", "env", _python_section),
    ("packages", "env", _packages_section),
    ("distributions", "env", _distributions_section),
    ("release", "selection", _release_section),
    ("hardware", "hardware", _hardware_section),
    ("efa", "efa", _efa_section),
)


def _environment(facts: Facts) -> dict[str, Any]:
    """The report's environment section, from the facts the chosen checks already gathered: it
    never gathers one itself (`--only python.version` touches no hardware, IMDS or neuron-ls)."""
    env: dict[str, Any] = {"manifest": facts.manifest.source, "sysroot": str(facts.sysroot.root)}
    for key, fact, section in SECTIONS:
        if not facts.gathered(fact):
            continue
        try:
            env[key] = section(facts)
        except Exception as exc:
            env[key] = {"error": str(exc)}
    return env


def _progress(reporter: Reporter) -> Callable[[int, int, tuple[str, ...]], None]:
    said: list[tuple[int, tuple[str, ...]]] = []

    def tell(done: int, total: int, running: tuple[str, ...]) -> None:
        if said and said[-1] == (done, running):
            return  # the same as the last: no event
        said.append((done, running))
        shown = ", ".join(running[:2]) + (f" +{len(running) - 2} more" if len(running) > 2 else "")
        reporter.emit(status(f"checks: {done} of {total} done" + (f"; running {shown}" if shown
                                                                  else ""), done, total, running))

    return tell


def _checks(facts: Facts, ids: list[str], budget: Budget) -> list[Check]:
    specs = {c.id: c for c in CHECKS}
    facts.planned = frozenset().union(*(specs[i].gathers for i in ids))
    return [Check(i, specs[i].title, functools.partial(specs[i].run, facts), budget.limit(i),
                  specs[i].severity) for i in ids]


def run_doctor(facts: Facts, ids: list[str], strict: bool, limit: float,
               budget: Budget | None = None, level: int | None = None,
               reporter: Reporter | None = None,
               done: Mapping[str, CheckResult] | None = None,
               begun: Mapping[str, Begun] | None = None) -> DoctorReport:
    """Run the chosen checks in parallel, each under its own time limit, all within the run's.
    Without a budget (install's post-install doctor) `limit` is the work's timeout and each check
    gets a little more. `done`: results already made (DoctorRun.start_ready), not run again;
    `begun`: its checks, each taken over where it began."""
    if budget is None:
        budget = Budget(limit + 5, limit + 15, limit + 20)
    done, begun = done or {}, begun or {}
    rest = [begun[c.id].taken_over(c) if c.id in begun else c
            for c in _checks(facts, ids, budget) if c.id not in done]
    # One after another only where the target is at hand (an install's doctor): elsewhere the
    # first check would wait for its interpreter to start while the host's checks could run.
    ran = run_checks(rest, budget.total_s, None if reporter is None else _progress(reporter),
                     one_by_one=facts.target_at_hand())
    results = {**done, **{c.id: r for c, r in zip(rest, ran, strict=True)}}
    environment = _environment(facts)  # after the checks: it reads only what they gathered
    notes = release_notes(facts)
    if notes:
        environment["notes"] = notes
    return DoctorReport(tuple(results[i] for i in ids), strict, environment, level,
                        budget.total_s if level else None)


class Known(Struct, frozen=True):
    """Facts the caller already holds, used as they are and never gathered again (install: the
    hardware and the lock it chose by, the target's inspection held open while its engine ran, or
    the one made before, when nothing was applied since)."""

    python: str | None = None
    """The target interpreter as the caller resolved it, used as it is (install's target, which
    may not exist: a new venv nothing was installed into was never made; the check says so)."""
    hardware: HardwareReport | None = None
    pylock: Pylock | None = None
    """The lock at DoctorRequest.lock, already read and validated."""
    env: PythonEnv | None = None
    inspection: HeldInspection | None = None


class DoctorRequest(Struct, frozen=True):
    """What `neuronctl doctor` was asked, with the config's defaults already applied."""

    manifest: Manifest
    python: str | None = None
    release: str | None = None
    lock: Path | None = None
    device: str = "auto"
    level: int = DEFAULT_LEVEL
    """1, 2 or 3 (levels.py): what runs, and the time budget it must fit."""
    device_probe: bool = True
    compile_tier: bool = False
    """The compile tier below level 3 (level 3 always runs it)."""
    strict: bool = False
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    check_timeout: float | None = None
    """Each check's limit in seconds (--check-timeout, config `check_timeout`); None: the
    level's budget."""
    sysroot: Path | None = None
    environ: Mapping[str, str] | None = None
    model: str | None = None
    """MODULE:FACTORY from config `model`, run at level 3."""
    model_origin: str = "config model"
    model_cwd: Path | None = None
    lookback_s: float | None = None
    """--lookback: how far back hardware.errors reads the kernel log (None: since boot)."""
    known: Known = Known()
    """What the caller already holds (install's post-install doctor)."""


def _model(request: DoctorRequest, ids: list[str]) -> ModelRun | None:
    if request.model is None or "model.smoke" not in ids:
        return None
    from neuronctl.ops.smoke import check_model_spec  # the smoke modules: only for a model run

    return ModelRun(check_model_spec(request.model, request.model_origin), request.model_origin,
                    request.model_cwd)


class DoctorRun:
    """One doctor run, prepared: the request validated (bad input is exit 2 before any check
    runs), the checks chosen, the facts to share made. doctor() runs it at once; an install
    runs what reads nothing of the target while its engine works (start_ready), the rest when
    the engine is done (finish)."""

    def __init__(self, request: DoctorRequest, reporter: Reporter | None = None) -> None:
        self._reporter = reporter = reporter or NullReporter()
        if request.level not in LEVELS:
            raise InputError(f"level must be 1, 2 or 3, got {request.level}")
        known = request.known
        pylock = known.pylock
        if request.lock is not None and pylock is None:  # the reader (packaging.pylock): only with --lock
            from neuronctl.resolvers.pylock import load_pylock

            pylock = load_pylock(request.lock)
        if request.release:
            request.manifest.get(request.release)
        if request.device not in DEVICES:
            raise InputError(f"device must be {', '.join(DEVICES[:-1])} or {DEVICES[-1]}, "
                             f"got {request.device!r}")
        environ = os.environ if request.environ is None else request.environ
        self.ids = ids = select_checks(request.only, request.skip, request.lock,
                                       request.device_probe, request.level,
                                       multi_node_step(environ))
        if request.sysroot is not None and not request.sysroot.is_dir():
            raise InputError(f"--sysroot {request.sysroot}: no such directory")
        model = _model(request, ids)
        self.request, self.budget = request, (budget := budget_for(request.level,
                                                                     request.check_timeout))
        self._ready = threading.Event()
        self.facts = Facts(python=known.python or resolve_python(request.python),
                           sysroot=SysRoot.from_env(request.sysroot), manifest=request.manifest,
                           release=request.release, device=request.device,
                           timeout=budget.inner(budget.check_s),
                           compile_tier=request.compile_tier or request.level >= 3,
                           lock=request.lock, environ=request.environ, pylock=pylock, model=model,
                           long_timeout=budget.inner(budget.long_s), lookback_s=request.lookback_s,
                           hardware=known.hardware, env=known.env, inspection=known.inspection,
                           target_ready=self._ready)
        self._early: dict[str, CheckResult] = {}
        """start_ready's results, each put in by its check's thread as it ends."""
        self._begun: dict[str, Begun] = {}
        """start_ready's checks, which finish() takes over."""

    def start_ready(self) -> None:
        """Start, on a thread, the checks that read nothing of the target (the host's OS,
        driver, system packages, devices), one after another: one that reads the target stops
        at once and runs in finish(); one still running then is taken over, one not begun runs
        there. An install calls it as its engine starts: the target changes, the host does
        not."""
        self._begun, queue = begin(_checks(self.facts, self.ids, self.budget))
        threading.Thread(target=run_ready, args=(queue, self._early), daemon=True,
                         name="doctor-ready").start()

    def finish(self) -> DoctorReport:
        """The target is ready: run every check not already done, within the level's budget."""
        request, reporter = self.request, self._reporter
        self._ready.set()
        # What start_ready's checks finished is kept; one still running (a host slowed by what ran
        # beside it) is taken over, waited for under the limit it would have had if begun here,
        # so the doctor keeps to one budget and nothing is done twice.
        done = dict(self._early)
        reporter.emit(DoctorStarted(f"running {len(self.ids)} checks (level {request.level})",
                                    "checks", checks=tuple(self.ids), level=request.level))
        for note in release_notes(self.facts):
            reporter.emit(Note(note))
        return run_doctor(self.facts, self.ids, request.strict, self.budget.check_s, self.budget,
                          request.level, reporter, done, self._begun)


def doctor(request: DoctorRequest, reporter: Reporter | None = None) -> DoctorReport:
    """Validate the request (bad input is exit 2 before any check runs), gather the facts the
    chosen checks need, each once, and run the checks within the level's time budget."""
    return DoctorRun(request, reporter).finish()


def release_notes(facts: Facts, today: dt.date | None = None) -> list[str]:
    """Informational lines, never a warning or a failure: release data over 45 days old, and a
    partly published release's pins that are not published (the report's environment.notes)."""
    from neuronctl.ops.doctor.checks_rules import stale_note

    notes = []
    note = stale_note(facts.manifest.compiled, today or dt.date.today())
    if note:
        notes.append(note)
    release = facts.manifest.find(facts.requested_release) if facts.requested_release else None
    if release is not None and not release.complete:
        notes.append(f"Neuron {release.version} is partly published: "
                     f"{', '.join(release.unpublished_pins())} not published; those are judged "
                     "against the index, not pinned versions")
    return notes
