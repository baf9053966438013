"""What the doctor's checks share: each probe runs once, on first use, whichever check asks first."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from msgspec import Struct
from packaging.version import Version

from neuronctl.ops.doctor.runner import NotYet
from neuronctl.probes.hardware import HardwareReport, detect_hardware
from neuronctl.probes.legacy import LegacyReport, detect_legacy
from neuronctl.probes.pyenv import PythonEnv, inspect_python
from neuronctl.probes.sysroot import SysRoot
from neuronctl.release.model import Manifest, Release
from neuronctl.torch_neuronx import classify

if TYPE_CHECKING:
    # The device probe (level 2) and the model run (level 3) load their modules when first
    # gathered: a level-1 doctor, the one after every install, never needs them.
    from packaging.pylock import Pylock

    from neuronctl.probes.device import ProbeReport
    from neuronctl.probes.device_health import DeviceHealth
    from neuronctl.probes.efa import EfaFacts
    from neuronctl.probes.held_inspection import HeldInspection
    from neuronctl.probes.kernel_log import KernelLog
    from neuronctl.probes.smoke import SmokeReport
    from neuronctl.probes.system_packages import SystemPackages

T = TypeVar("T")
TARGET_FACTS = frozenset({"env", "probe", "smoke"})
"""The facts read from the target interpreter: while Facts.target_ready is unset (an install's
engine still changes the target) gathering one raises NotYet."""


class Selection(Struct, frozen=True):
    """The Neuron release the doctor judges against, and why that one."""

    release: Release
    reason: str


class ModelRun(Struct, frozen=True):
    """The user's own model for the doctor's level 3 (config `model`)."""

    spec: str
    """MODULE:FACTORY, already checked for its form."""
    origin: str
    """Where it came from, for messages: "config model (pyproject.toml)"."""
    cwd: Path | None = None
    """Where the model's module is imported from (the config file's folder)."""


class Facts:
    """Each fact is gathered on first use; one already gathered elsewhere (install's hardware,
    the --lock file read while validating the flags) or made by hand in a test is passed in and
    never gathered again."""

    def __init__(self, *, python: str, sysroot: SysRoot, manifest: Manifest,
                 release: str | None, device: str, timeout: float, compile_tier: bool = False,
                 lock: Path | None = None, environ: Mapping[str, str] | None = None,
                 env: PythonEnv | None = None, hardware: HardwareReport | None = None,
                 legacy: LegacyReport | None = None, probe: ProbeReport | None = None,
                 pylock: Pylock | None = None, model: ModelRun | None = None,
                 long_timeout: float | None = None, smoke: SmokeReport | None = None,
                 inspection: HeldInspection | None = None,
                 lookback_s: float | None = None,
                 target_ready: threading.Event | None = None) -> None:
        """`timeout` bounds the interpreter inspection; `long_timeout` the device probe and the
        model run (default: `timeout`). `inspection`: the interpreter's inspection, already
        started (an install starts it while its engine works). `target_ready`: unset while the
        target may still change (None: it is ready)."""
        self.python = python
        self.sysroot = sysroot
        self.manifest = manifest
        self.requested_release = release
        self.device = device
        self.timeout = timeout
        self.compile_tier = compile_tier
        self.lock = lock
        self.model = model
        self.lookback_s = lookback_s
        """--lookback: hardware.errors reads the kernel log this far back (None: since boot)."""
        self.long_timeout = timeout if long_timeout is None else long_timeout
        self.planned: frozenset[str] = frozenset()
        """Facts this run's checks will gather anyway (set by the check runner)."""
        self.environ = dict(os.environ if environ is None else environ)
        self._inspection = inspection
        self._target_ready = target_ready
        self._cache: dict[str, Any] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        given = {"env": env, "hardware": hardware, "legacy": legacy, "probe": probe,
                 "pylock": pylock, "smoke": smoke}
        self._cache.update({k: (True, v) for k, v in given.items() if v is not None})

    def gathered(self, key: str) -> bool:
        """Whether fact `key` is known (gathered or given) and was not an error."""
        with self._guard:
            entry = self._cache.get(key)
        return entry is not None and entry[0]

    def target_at_hand(self) -> bool:
        """Whether the target's inspection is given, done or already running (an install's):
        no check has to wait for a new interpreter to start before reading it."""
        return self._inspection is not None or self.gathered("env")

    def knows(self, key: str) -> bool:
        """Whether fact `key` may be used without reading anything this run would not read
        anyway: gathered already, or gathered by one of the chosen checks. A check's fix that
        could use a fact (the chip) asks this first, so `--only python.version` reads no
        hardware, and every fix in one report tells the same story however the checks race."""
        return key in self.planned or self.gathered(key)

    def _once(self, key: str, make: Callable[[], T]) -> T:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._cache:
                ready = self._target_ready
                if key in TARGET_FACTS and ready is not None and not ready.is_set():
                    raise NotYet(key)  # before it is gathered, and nothing cached: asked again
                try:
                    self._cache[key] = (True, make())
                except Exception as exc:
                    self._cache[key] = (False, exc)
            ok, value = self._cache[key]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    @property
    def env(self) -> PythonEnv:
        held = self._inspection
        if held is not None:
            return self._once("env", held.result)
        return self._once("env", lambda: inspect_python(self.python, timeout=self.timeout, tags=False))

    @property
    def hardware(self) -> HardwareReport:
        return self._once("hardware", lambda: detect_hardware(self.sysroot, self.environ))

    @property
    def system_packages(self) -> SystemPackages:
        """The Neuron system packages (dpkg, rpm), read once. Where this run reads the hardware
        anyway (given, gathered, or a chosen check's), dpkg's come from that reading: the
        status file is read once for the Neuron packages, whichever check asks first."""
        from neuronctl.probes.system_packages import read_system_packages

        def read() -> SystemPackages:
            known = self.hardware.system_packages if self.knows("hardware") else None
            return read_system_packages(self.sysroot, dpkg=known)

        return self._once("system_packages", read)

    @property
    def kernel_log(self) -> KernelLog:
        from neuronctl.probes.kernel_log import read_kernel_log

        return self._once("kernel_log", lambda: read_kernel_log(self.sysroot))

    @property
    def device_health(self) -> tuple[DeviceHealth, ...]:
        from neuronctl.probes.device_health import read_device_health

        return self._once("device_health", lambda: read_device_health(self.sysroot))

    @property
    def efa(self) -> EfaFacts:
        from neuronctl.probes.efa import read_efa

        return self._once("efa", lambda: read_efa(self.sysroot))

    @property
    def legacy(self) -> LegacyReport:
        return self._once("legacy", lambda: detect_legacy(self.env, self.environ))

    @property
    def probe(self) -> ProbeReport:
        from neuronctl.probes.device import run_device_probe

        return self._once("probe", lambda: run_device_probe(
            self.python, self.device, self.long_timeout, self.compile_tier, self.environ))

    @property
    def smoke(self) -> SmokeReport:
        """The user's model run on the device (level 3), once."""
        from neuronctl.ops.reporter import NullReporter
        from neuronctl.ops.smoke import SmokeRequest, run_smoke

        model = self.model
        if model is None:
            raise ValueError("no model configured")
        request = SmokeRequest(python=self.python, model=model.spec, origin=model.origin,
                               device=self.device, timeout=self.long_timeout, env=self.environ,
                               cwd=model.cwd)
        return self._once("smoke", lambda: run_smoke(request, NullReporter()).report)

    @property
    def pylock(self) -> Pylock:
        """The --lock file, read once (the doctor reads it while validating its input and
        passes it in)."""
        from neuronctl.resolvers.pylock import load_pylock

        if self.lock is None:
            raise ValueError("no --lock file to read")
        lock = self.lock
        return self._once("pylock", lambda: load_pylock(lock))

    def lock_fits(self) -> bool:
        """Whether the --lock file's `environments` admit the checked interpreter."""
        from neuronctl.resolvers.pylock import fits_environments

        if self.lock is None:
            return False
        return fits_environments(self.pylock, dict(self.env.markers))

    @property
    def selection(self) -> Selection:
        return self._once("selection", self._select)

    def _select(self) -> Selection:
        if self.requested_release:
            return Selection(self.manifest.get(self.requested_release), "requested")
        tnx = self.env.get("torch-neuronx")
        if tnx is not None:
            info = classify(tnx.version)
            for release in self.manifest.releases:
                listed = {Version(v).public for v in release.packages.get("torch-neuronx", ())}
                if info.public in listed:
                    return Selection(release, f"the newest release listing the installed "
                                              f"torch-neuronx {info.public}")
        native = self.manifest.latest_with_flavour("native")
        if native is not None:
            return Selection(native, "newest fully published, native TorchNeuron")
        return Selection(self.manifest.latest, "the newest release known")
