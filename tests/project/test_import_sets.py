"""The import set of each command (issue 36: what a command does not need, it does not import).

Every command's `--help`, and the real entry of the commands that run offline here (`releases`,
`releases show`, `cache --help`, `install --lock` with nothing to do), run in a fresh interpreter
through `neuronctl.cli.main.run`; each names the modules it must not have loaded. On a small host
each module a command imports and never calls costs its import time on every run (requests and
urllib3 ~50 ms, the resolver, the doctor's checks, libcst, torch seconds)."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronctl.cli.main import COMMANDS

NEVER_FOR_HELP = [
    "torch", "libcst", "resolvelib", "requests", "urllib3", "ssl", "rich.table", "packaging.pylock",
    "neuronctl.resolvers.pylock", "neuronctl.resolvers.http_fetch", "neuronctl.resolvers.resolve",
    "neuronctl.ops.install.run", "neuronctl.ops.lock.resolve", "neuronctl.ops.lock.run",
    "neuronctl.ops.migrate", "neuronctl.ops.releases", "neuronctl.ops.cache",
]
"""Loaded by no command's --help: the HTTP stack, the resolver, the lock reader and writer, the
install and lock operations, migrate's rewriter, the release import, the cache scan."""

HOST_SETTINGS = "neuronctl.cli.host_settings_types"
"""The settings classes of the commands that look at a host (doctor, env, smoke ...): created only
by those commands."""

CLASS_HOMES = {
    "SmokeStarted": "neuronctl.ops.smoke", "SmokeDone": "neuronctl.ops.smoke",
    "DownloadSettings": "neuronctl.cli.fetch_settings_types",
    "ReleasesUpdateSettings": "neuronctl.cli.fetch_settings_types",
    "LockedPackage": "neuronctl.resolvers.lock_record", "LockInputs": "neuronctl.resolvers.lock_record",
    "RecordedLock": "neuronctl.resolvers.lock_record", "DoctorStarted": "neuronctl.ops.doctor.run",
    "ValueEntry": "neuronctl.release.provenance", "DeviceHolder": "neuronctl.probes.device_holders",
    "HolderScan": "neuronctl.probes.device_holders",
}
"""Classes a command that never uses them must not create (each is made, with its module, on every
run), watched as `class NAME`, and the module each is declared in: smoke's
events with smoke and the doctor's with the doctor, download's and `releases update`'s settings
apart from lock's and install's, the lock writer's model apart from the lock reader install uses,
`releases show --sources`' value entries apart from the manifest's source checks, the device
holders' scan apart from the other system facts."""
NEVER_CREATED = [f"class {name}" for name in ("SmokeStarted", "SmokeDone", "DownloadSettings",
                                              "ReleasesUpdateSettings", "ValueEntry")]
LOCK_WRITER = ["neuronctl.resolvers.lock_record", "class LockedPackage", "class LockInputs",
               "class RecordedLock"]


def _created(name: str) -> bool:
    """Whether a loaded neuronctl module declares the class `name` (wherever it is declared)."""
    return any(isinstance(found := getattr(module, name, None), type) and found.__module__ == key
               for key, module in list(sys.modules.items()) if key.startswith("neuronctl"))


HELP_ALSO_NEVER: dict[str, list[str]] = {
    "releases": ["neuronctl.release.manifest", "neuronctl.release.aws_import", "neuronctl.release.merge",
                 HOST_SETTINGS],
    "cache": ["neuronctl.ops.doctor", "neuronctl.probes.pyenv", "neuronctl.probes.compile_cache",
              HOST_SETTINGS],
    "install": ["neuronctl.release.manifest", "neuronctl.ops.doctor", "neuronctl.backend.engine",
                "neuronctl.probes.pyenv", HOST_SETTINGS, *NEVER_CREATED],
    "lock": ["neuronctl.release.manifest", "neuronctl.ops.doctor", "neuronctl.probes.pyenv",
             HOST_SETTINGS, *NEVER_CREATED],
    "download": ["neuronctl.release.manifest", "neuronctl.ops.doctor", HOST_SETTINGS],
    "migrate": ["neuronctl.release.manifest", "neuronctl.ops.doctor", HOST_SETTINGS],
    "init": ["neuronctl.ops.doctor", "neuronctl.probes.pyenv"],
}
"""What a command's --help is further without: its options are declared from the settings table
and constants, not from the operation or the release data."""


def _loaded_by(args: list[str], watched: list[str], cwd: Path) -> tuple[int, list[str]]:
    """The exit code of `neuronctl ARGS` run in a fresh interpreter, and which of `watched` it
    had loaded by the end (a module by its name; `class NAME`: a class some loaded neuronctl
    module declares)."""
    code = ("import contextlib, io, sys\n"
            "from neuronctl.cli.main import run\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            f"    rc = run({args!r})\n"
            f"{inspect.getsource(_created)}\n"
            f"loaded = [w for w in {watched!r} if w in sys.modules\n"
            "          or (w.startswith('class ') and _created(w[6:]))]\n"
            "import json  # after the look: json itself may be watched\n"
            "print(json.dumps([rc, loaded]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    rc, loaded = json.loads(done.stdout)
    return rc, loaded


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_commands_help_loads_none_of_the_heavy_machinery(tmp_path, command):
    watched = [*NEVER_FOR_HELP, *HELP_ALSO_NEVER.get(command, [])]
    assert _loaded_by([command, "--help"], watched, tmp_path) == (0, [])


def test_the_version_and_the_root_help_load_no_json_or_redaction(tmp_path):
    """What every command pays before it does anything (issue 36's start-up): the JSON writer and
    the redaction patterns load where a JSON document or a failure is written, not at start-up."""
    watched = [*NEVER_FOR_HELP, "json", "neuronctl.redact", "neuronctl.release.manifest"]
    assert _loaded_by(["--version"], watched, tmp_path) == (0, [])
    assert _loaded_by(["--help"], watched, tmp_path) == (0, [])


def test_listing_and_showing_releases_load_no_import_update_network_or_resolver(tmp_path):
    """`releases` and `releases show` read the bundled data and print it: AWS's manifest
    converter, the merge and rollback checks and the network are `releases import/update`'s."""
    watched = [*NEVER_FOR_HELP, "neuronctl.release.aws_import", "neuronctl.release.merge",
               "neuronctl.release.rollback", "socket", "neuronctl.proc", "neuronctl.ops.doctor",
               "pkgutil"]
    assert _loaded_by(["releases"], watched, tmp_path) == (0, [])
    assert _loaded_by(["releases", "show", "2.33.1", "--sources"], watched, tmp_path) == (0, [])


def test_every_watched_name_is_a_module_that_loads(tmp_path):
    """Not vacuous: each name watched above is a real module (a misspelt one is never loaded)."""
    names = sorted({*NEVER_FOR_HELP, *(n for ns in HELP_ALSO_NEVER.values() for n in ns),
                    *INSTALL_NEVER, *LOCK_NEVER, *WITHOUT_NEURON_DEVICES_NEVER,
                    "neuronctl.release.aws_import",
                    "neuronctl.release.merge", "neuronctl.release.rollback", "socket",
                    "neuronctl.proc", "json", "neuronctl.redact"} - {"torch", *(f"class {n}" for n in CLASS_HOMES)})
    code = ("import importlib, json, sys\n"
            f"for m in {names!r}: importlib.import_module(m)\n"
            f"print(json.dumps([n for n in {names!r} if n in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == names


@pytest.mark.parametrize("name", sorted(CLASS_HOMES))
def test_every_watched_class_is_declared_where_it_is_said_to_be(name):
    """Not vacuous either: each class watched as `class NAME` is found by the same search once
    its module is loaded."""
    importlib.import_module(CLASS_HOMES[name])
    assert _created(name)


INSTALL_NEVER = [
    "torch", "libcst", "resolvelib", "requests", "urllib3", "ssl", "rich.table",
    "neuronctl.resolvers.http_fetch", "neuronctl.resolvers.resolve", "neuronctl.ops.lock.resolve",
    "neuronctl.ops.install.resolution", "neuronctl.ops.install.apply", "neuronctl.ops.install.failure",
    "neuronctl.backend.external_tool", "neuronctl.backend.engine_watch", "neuronctl.backend.snapshot",
    "neuronctl.toml_emit", "neuronctl.ops.migrate", "neuronctl.ops.smoke", "neuronctl.probes.device",
    HOST_SETTINGS, "neuronctl.ops.install.find_links", "neuronctl.ops.interpreters", "glob",
    *LOCK_WRITER, "neuronctl.release.provenance", "pkgutil", *NEVER_CREATED,
]
"""What `install --lock` with nothing to do never calls: the network and the resolver (the lock
names the files), the engine's run and what watches it, the snapshot of a failed apply, the TOML
writer, migrate, the device probe and the model run; nor the lock writer and its model (it only
reads the lock), each release value's source (provenance: `releases show --sources`), --find-links'
wheelhouse, nor the search for a new venv's interpreter (and glob); pkgutil neither (the bundled
data is read through its package's loader)."""

WITHOUT_NEURON_DEVICES_NEVER = [] if any(Path("/dev").glob("neuron[0-9]*")) else [
    "neuronctl.ops.doctor.health_rules", "neuronctl.probes.kernel_log",
    "neuronctl.probes.device_holders", "class DeviceHolder", "class HolderScan",
]
"""What the doctor after an install does not load on a host without Neuron devices (as the test
hosts are): the hardware-error signals and the kernel log's reader, and the scan for processes
holding /dev/neuron*. On a Neuron host those checks read them: nothing is asserted there."""


@pytest.mark.slow
def test_an_install_with_nothing_to_do_loads_no_resolver_network_or_engine_run(cli, locked, tmp_path):
    from support.wheels import find_python, make_venv

    venv = make_venv(tmp_path / "env", find_python("3.12")).parents[1]
    install = ["install", "--lock", str(locked), "--python", str(venv), "--engine", "uv"]
    r = cli(*install, "--no-check")
    assert r.code == 0 and "applied" in r.err + r.out, r.err
    assert _loaded_by([*install, "--no-check"], [*INSTALL_NEVER, "neuronctl.ops.doctor", "class DoctorStarted"],
                tmp_path) == (0, [])
    # The doctor afterwards is the feature: it loads, and still none of the above, nor the cache
    # command's operation (its cache.compile check reads the caches through the probe).
    assert _loaded_by(install, [*INSTALL_NEVER, *WITHOUT_NEURON_DEVICES_NEVER, "neuronctl.ops.doctor.run",
                          "neuronctl.ops.cache"], tmp_path) == (0, ["neuronctl.ops.doctor.run"])


LOCK_NEVER = ["torch", "libcst", "rich.table", "neuronctl.ops.doctor", "neuronctl.ops.install",
              "neuronctl.backend", "neuronctl.probes.pyenv", "neuronctl.ops.migrate",
              "neuronctl.ops.releases", "neuronctl.release.aws_import", "neuronctl.ops.lock.check",
              HOST_SETTINGS, "neuronctl.release.provenance", "pkgutil", *NEVER_CREATED,
              "class DoctorStarted"]
"""What `lock` never calls: the doctor, the install operation and the engines, the target
interpreter's inspection (a lock is for a platform target, not an interpreter), migrate, the
release import, each release value's source, and without --check the comparison with an
existing lock."""


def test_a_lock_loads_neither_doctor_install_engines_nor_its_check(uni, tmp_path):
    args = ["lock", *uni.index_flags(), "--python", "3.12", "-o", str(tmp_path / "pylock.toml")]
    assert _loaded_by(args, [*LOCK_NEVER, "resolvelib", "requests"], tmp_path) == (0, ["resolvelib", "requests"])


def test_lock_check_loads_no_resolver_or_network(cli, uni, tmp_path):
    """`lock --check` (CI's question: does the lock still match?) reads the lock and fetches
    nothing: neither the resolver nor the HTTP stack loads."""
    lock = tmp_path / "pylock.toml"
    assert cli("lock", *uni.index_flags(), "--python", "3.12", "-o", str(lock)).code == 0
    watched = ["resolvelib", "requests", "urllib3", "neuronctl.resolvers.http_fetch",
               "neuronctl.ops.lock.resolve", "neuronctl.ops.lock.check", "pkgutil", *NEVER_CREATED]
    args = ["lock", *uni.index_flags(), "--python", "3.12", "-o", str(lock), "--check"]
    assert _loaded_by(args, watched, tmp_path) == (0, ["neuronctl.ops.lock.check"])
