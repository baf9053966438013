"""Import cost of the common paths: an install from a lock (nothing to do, or a plain install)
and the doctor after it load only what they use. On a small host each module the path imports
and never calls costs its import time on every run (issue 14: an install with nothing to do in
0.3 s), so the modules only a rarer path needs are imported where that path starts. Each test
imports a path's modules in a fresh interpreter and names what came back at top level."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.package_modules import WALK


def _loaded(modules: list[str], watched: list[str], cwd: Path, then: str = "") -> list[str]:
    """Which of `watched` a fresh interpreter has loaded after importing `modules` and running
    the code `then`."""
    code = (f"import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            f"{then}\n"
            f"print(json.dumps([w for w in {watched!r} if w in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout)
    return loaded


INSTALL_PATH = [
    "neuronctl.cli.main", "neuronctl.cli.cmd_install", "neuronctl.cli.install_report",
    "neuronctl.ops.install.run", "neuronctl.ops.install.source", "neuronctl.ops.install.find_links",
    "neuronctl.ops.install.apply", "neuronctl.ops.install.outcome", "neuronctl.ops.install.check",
    "neuronctl.ops.install.preflight", "neuronctl.ops.install.plan",
    "neuronctl.ops.install.request", "neuronctl.ops.install.target", "neuronctl.ops.install.background",
    "neuronctl.ops.lock.choice", "neuronctl.ops.install.requirements",
    "neuronctl.probes.hardware",
]

DOCTOR_PATH = [
    "neuronctl.cli.main", "neuronctl.cli.cmd_doctor", "neuronctl.cli.doctor_report",
    "neuronctl.ops.doctor.run", "neuronctl.ops.doctor.facts", "neuronctl.ops.doctor.checks",
]

# Read only by the doctor's system checks (packages.system, hardware.driver's kernel match, the
# device checks), which a fallback lock's doctor or --only python.version never runs.
SYSTEM_READERS = ["neuronctl.probes.system_packages", "neuronctl.probes.system_facts"]
# Only the engine chosen runs; the NVIDIA probe only on a host without Neuron devices.
ENGINES = ["neuronctl.backend.pip_engine", "neuronctl.backend.uv_engine"]

# Only a fresh resolution fetches (the engine fetches a lock's files): the HTTP stack.
RESOLUTION_ONLY = ["neuronctl.resolvers.http_fetch", "neuronctl.resolvers.http_body",
                   "neuronctl.resolvers.http_deadline", "socket"]
# Only the device probe (doctor level 2) and a model run (level 3): statistics, fractions.
PROBE_AND_SMOKE_ONLY = ["neuronctl.probes.device", "neuronctl.probes.smoke",
                        "neuronctl.probes.smoke_records", "neuronctl.ops.smoke", "statistics"]


def test_an_install_from_a_lock_loads_no_resolution_snapshot_doctor_or_system_readers(tmp_path):
    """What `install --lock L --no-check` with nothing to do never calls: the HTTP stack, the
    file snapshot (an existing environment's apply), the doctor, the system-package readers
    (hardware detection reads neuron-ls through probes.neuron_ls), the probe and smoke modules,
    either engine (until one is chosen), the NVIDIA probe (until no Neuron device is seen), the
    TOML writer (a lock is read here, never written)."""
    watched = [*RESOLUTION_ONLY, *PROBE_AND_SMOKE_ONLY, *SYSTEM_READERS, *ENGINES,
               "neuronctl.backend.snapshot", "csv", "neuronctl.ops.doctor.report",
               "neuronctl.ops.doctor.runner", "neuronctl.ops.doctor.levels",
               "neuronctl.probes.nvidia", "neuronctl.toml_emit"]
    reads_its_lock = [*INSTALL_PATH, "neuronctl.resolvers.pylock"]
    assert _loaded(reads_its_lock, watched, tmp_path) == []


# Loaded only where a file is written (tempfile), a seed wheel hashed (hashlib): not by reading
# the bundled data, finding a probe script or taking the environment's turn.
WRITERS_AND_HASHERS = ["tempfile", "hashlib", "zipfile", "importlib.resources"]


def test_the_bundled_data_the_scripts_and_the_turn_load_no_tempfile_hashlib_or_zipfile(tmp_path):
    """An install with nothing to do reads the bundled manifest and routing, runs a probe script
    and takes the environment's turn; none of that loads tempfile, hashlib (OpenSSL) or
    importlib.resources with zipfile (~15 ms of imports together)."""
    run = ("from pathlib import Path\n"
           "from neuronctl.release.manifest import load_bundled_manifest\n"
           "from neuronctl.routing import load_default_routing, load_fallback_routing\n"
           "from neuronctl.probes.target_run import script_path\n"
           "from neuronctl.ops.install.env_mutex import environment_lock\n"
           "load_bundled_manifest(); load_default_routing(); load_fallback_routing()\n"
           "assert Path(script_path('inspect_env.py')).is_file()\n"
           f"with environment_lock('/some/env', Path({str(tmp_path)!r}), lambda: None) as waited:\n"
           "    assert waited is False\n"
           f"assert len(list(Path({str(tmp_path)!r}, 'locks').glob('*.lock'))) == 1\n")
    assert _loaded([*INSTALL_PATH, "neuronctl.resolvers.pylock"], WRITERS_AND_HASHERS, tmp_path, run) == []


def test_choosing_an_engine_loads_that_engine_only(tmp_path):
    """--backend uv never loads pip's engine, --backend pip never uv's."""
    choose = ("from neuronctl.backend.choose import choose_engine\n"
              "assert choose_engine({flag!r}, '--backend', {{}}, uv_path='/bin/true').engine.name == {flag!r}")
    assert _loaded(INSTALL_PATH, ENGINES, tmp_path, choose.format(flag="uv")) == [ENGINES[1]]
    assert _loaded(INSTALL_PATH, ENGINES, tmp_path, choose.format(flag="pip")) == [ENGINES[0]]


def test_the_doctor_and_an_install_with_its_check_load_no_probe_smoke_junit_or_lock_reader(tmp_path):
    """What a level-1 doctor (the one after every install) never calls: the device probe and the
    model run, the JUnit renderer (xml), the RECORD reader (csv, only for a package the lock does
    not list), Slurm (--slurm-drain), without --lock the lock reader, and until a system check
    runs, the system readers."""
    watched = [*RESOLUTION_ONLY, *PROBE_AND_SMOKE_ONLY, *SYSTEM_READERS, "xml.etree.ElementTree", "csv",
               "neuronctl.ops.slurm_node", "neuronctl.resolvers.pylock", "packaging.pylock"]
    assert _loaded(DOCTOR_PATH, watched, tmp_path) == []
    watched.remove("neuronctl.resolvers.pylock")  # an install reads its lock: loaded there
    watched.remove("packaging.pylock")
    assert _loaded([*INSTALL_PATH, *DOCTOR_PATH], watched, tmp_path) == []


def test_a_doctor_run_without_lock_or_model_loads_neither_reader(tmp_path):
    """The doctor operation itself, run on this interpreter: the lock reader only with --lock,
    the smoke modules only with a configured model at level 3, the system readers only for the
    checks that read the system."""
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    run = ("from pathlib import Path\n"
           "from neuronctl.release.manifest import load_bundled_manifest\n"
           "from neuronctl.ops.doctor.run import DoctorRequest, doctor\n"
           "request = DoctorRequest(manifest=load_bundled_manifest(), python=sys.executable,\n"
           f"                        only=('python',), sysroot=Path({str(tmp_path)!r}))\n"
           "assert [c.id for c in doctor(request).checks] == ['python.version']\n")
    watched = [*PROBE_AND_SMOKE_ONLY, *SYSTEM_READERS, "neuronctl.resolvers.pylock",
               "packaging.pylock"]
    assert _loaded(DOCTOR_PATH, watched, tmp_path, run) == []


def test_every_watched_name_is_a_module_that_loads(tmp_path):
    """The checks above are not vacuous: each name they watch is a real module (a misspelt one
    would never be in sys.modules and pass any check)."""
    watched = sorted({*RESOLUTION_ONLY, *PROBE_AND_SMOKE_ONLY, *SYSTEM_READERS, *ENGINES,
                      "neuronctl.backend.snapshot", "csv", "neuronctl.ops.doctor.report",
                      "neuronctl.ops.doctor.runner", "neuronctl.probes.nvidia",
                      "neuronctl.toml_emit", "xml.etree.ElementTree", "neuronctl.ops.slurm_node",
                      "neuronctl.resolvers.pylock", "packaging.pylock", *WRITERS_AND_HASHERS})
    assert _loaded(watched, watched, tmp_path) == watched



_RECORDS = WALK + """
import dataclasses, inspect, json
import msgspec
found = {"struct": [], "dataclass": []}
for name in sorted(names):
    for cls in vars(importlib.import_module(name)).values():
        if not inspect.isclass(cls) or cls.__module__ != name:
            continue
        if issubclass(cls, msgspec.Struct):
            found["struct"].append(f"{name}.{cls.__qualname__}")
        elif dataclasses.is_dataclass(cls) and "__dataclass_fields__" in vars(cls):
            found["dataclass"].append(f"{name}.{cls.__qualname__}:{issubclass(cls, BaseException)}")
print(json.dumps(found))
"""
"""Every record class of every neuronctl module (probes/scripts run in the target, never
imported here), by kind."""


def test_records_are_structs_and_only_an_exception_is_a_dataclass(tmp_path):
    """A dataclass's methods are written as source and compiled when its module loads (about
    0.6 ms a class on Python 3.11: a third of an install with nothing to do, 111 classes); a
    msgspec Struct's class is made in C. So records are Structs; only an exception, which a
    Struct cannot be, stays a dataclass."""
    done = subprocess.run([sys.executable, "-c", _RECORDS], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    found: dict[str, list[str]] = json.loads(done.stdout)
    assert len(found["struct"]) > 200  # the walk reached resolvers/, probes/ and backend/ too
    assert found["dataclass"] and all(entry.endswith(":True") for entry in found["dataclass"]), found


def test_migrate_loads_libcst_only_to_fix_and_no_other_command_loads_migrate(tmp_path):
    """libcst (~60 modules) is for --fix and --diff alone: a scan of XLA-era code never loads it,
    and the install and doctor paths load neither libcst nor the migrate operation."""
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n")
    migrate_path = ["neuronctl.cli.main", "neuronctl.cli.cmd_migrate", "neuronctl.cli.migrate_report",
                    "neuronctl.ops.migrate"]
    run = ("from pathlib import Path\n"
           "from neuronctl.release.manifest import load_bundled_manifest\n"
           "from neuronctl.ops.migrate import MigrateRequest, migrate, native_versions\n"
           f"o = migrate(MigrateRequest((Path({str(tmp_path)!r}),), native_versions(load_bundled_manifest()),"
           " {mode!r}))\n"
           "assert len(o.findings) == 2, o.findings\n")
    assert _loaded(migrate_path, ["libcst"], tmp_path, run.format(mode="scan")) == []
    assert _loaded(migrate_path, ["libcst"], tmp_path, run.format(mode="diff")) == ["libcst"]
    assert _loaded([*INSTALL_PATH, *DOCTOR_PATH], ["libcst", "neuronctl.ops.migrate"], tmp_path) == []
