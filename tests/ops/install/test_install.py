"""`neuronctl install` end to end with both engines (pip and uv), into real throwaway venvs, from
the loopback indexes of the lock tests."""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from support.locks import big_nki_lock, broken_nki_lock
from support.universe import running
from support.venvs import ENGINES, installed, legacy_venv, snapshot
from support.waiting import wait_for, wait_until
from support.wheels import build_wheel, find_python, make_venv, site_packages

from neuronctl.toml_emit import dumps
from neuronctl.tomlfile import read_toml

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("engine", ENGINES)
def test_new_venv_from_lock(cli, uni, locked, tmp_path, engine):
    venv = tmp_path / "env"
    r = cli("install", "--lock", str(locked), "--venv", str(venv), "--venv-python", "3.12",
            "--engine", engine)
    assert r.code == 0, r.err + r.out
    assert f"engine: {engine} (--engine {engine})" in r.out
    got = installed(venv / "bin" / "python")
    assert got["torch"] == "2.14.0+cpu" and got["torch-neuronx"] == "2.14.3.0"
    assert got["nki"] == "0.7.0" and got["neuronx-cc"] == "2.28.7631.0"
    assert "99.0.0" not in got.values() and got["filelock"] == "3.16.1"
    assert "lock.drift" in r.out and "pass: healthy" in r.out
    # The venv has pip either way, from the interpreter's own bundled wheel, never from PyPI
    # (conftest's dead proxy would fail any such fetch).
    bundled = sorted((Path(find_python("3.12")).resolve().parents[1] / "lib" / "python3.12" / "ensurepip"
                      / "_bundled").glob("pip-*.whl"))
    assert got["pip"] == bundled[-1].name.split("-")[1]
    if engine == "uv":
        assert f"pip from its bundled {bundled[-1].name}" in r.out
    # Installing the same lock again changes nothing.
    before = snapshot(venv)
    r = cli("install", "--lock", str(locked), "--venv", str(venv), "--engine", engine)
    assert r.code == 0 and "nothing to do" in r.out
    assert snapshot(venv) == before


@pytest.mark.parametrize("engine", ENGINES)
def test_fresh_resolution_into_new_venv(cli, uni, tmp_path, engine):
    venv = tmp_path / "env"
    r = cli("install", *uni.index_flags(), "--release", "2.33.0", "--torch", "2.13", "--venv", str(venv),
            "--venv-python", "3.13", "--with", "transformers[torch]", "--engine", engine,
            "--write-lock", "pylock.toml")
    assert r.code == 0, r.err + r.out
    got = installed(venv / "bin" / "python")
    assert got["torch"] == "2.13.0+cpu" and got["torch-neuronx"] == "2.13.3.0"
    assert got["typing-extensions"] == "5.0.0" and got["accelerate"] == "1.0.0"
    lock = read_toml(Path("pylock.toml"), "lock")
    assert lock["tool"]["neuronctl"]["torch"] == "2.13.0"


@pytest.mark.parametrize("engine", ENGINES)
def test_legacy_venv_moves_to_native(cli, uni, locked, tmp_path, stack_wheels, engine):
    venv = legacy_venv(tmp_path, stack_wheels)
    before = snapshot(venv)
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--engine", engine)
    assert r.code == 2 and "pass --yes" in r.err and "torch-xla 2.9.0" in r.err
    assert snapshot(venv) == before
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--engine", engine, "--yes")
    assert r.code == 0, r.err + r.out
    assert "remove    libneuronxla" in r.out and "upgrade   torch-neuronx" in r.out
    got = installed(venv / "bin" / "python")
    assert "torch-xla" not in got and "libneuronxla" not in got
    assert got["torch-neuronx"] == "2.14.3.0" and got["torch"] == "2.14.0+cpu"
    assert not (venv / "lib" / "python3.12" / "site-packages" / "torch_neuronx" / "xla_impl").exists()
    assert "pass: healthy" in r.out


@pytest.mark.parametrize("engine", ENGINES)
def test_new_venv_ignores_what_its_base_has(cli, uni, locked, tmp_path, stack_wheels, engine):
    """A new venv starts empty: the legacy packages of the interpreter it is made from are not in it,
    so nothing is planned for removal and no confirmation is needed."""
    base = legacy_venv(tmp_path, stack_wheels)
    venv = tmp_path / "fresh"
    r = cli("install", "--lock", str(locked), "--venv", str(venv), "--venv-python", str(base / "bin" / "python"),
            "--engine", engine, "--json")
    assert r.code == 0, r.err + r.out
    doc = json.loads(r.out)
    assert {c["action"] for c in doc["plan"]} == {"install"} and len(doc["plan"]) == 7
    got = installed(venv / "bin" / "python")
    assert "torch-xla" not in got and got["torch-neuronx"] == "2.14.3.0"
    assert "torch-xla" in installed(base / "bin" / "python")


def freeze(venv: Path) -> str:
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PIP_CONFIG_FILE": os.devnull}).stdout


def test_dry_run_changes_nothing(cli, uni, locked, tmp_path, stack_wheels):
    venv = legacy_venv(tmp_path, stack_wheels)
    before, frozen = snapshot(venv), freeze(venv)
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--dry-run", "--engine", "pip")
    assert r.code == 0, r.err
    assert "dry run: nothing changed" in r.out
    assert f"{venv}/bin/python -m pip install --no-deps --no-index" in r.out
    assert f"{venv}/bin/python -m pip uninstall --yes" in r.out and "torch-xla" in r.out
    assert snapshot(venv) == before and freeze(venv) == frozen
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "new"), "--dry-run")
    assert r.code == 0 and "venv --python" in r.out
    assert not (tmp_path / "new").exists()
    from neuronctl.cache_dir import user_cache_dir

    assert not (user_cache_dir() / "wheels").exists()  # a dry run downloads nothing either


@pytest.mark.parametrize("engine", ENGINES)
def test_hash_mismatch_leaves_target_identical(cli, uni, locked, tmp_path, stack_wheels, engine):
    """The index serves other bytes than the lock records: the engine refuses them while it
    streams them, before it changes anything; a new venv is removed (an empty --venv emptied)."""
    venv = legacy_venv(tmp_path, stack_wheels)
    before = snapshot(venv)
    evil = build_wheel(tmp_path / "evil", "nki", "0.7.0", summary="not what was locked")
    uni.neuron.projects["nki"][0].path = evil
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--yes", "--engine", engine)
    assert r.code == 1 and "install failed, nothing changed" in r.err, r.err
    assert "nki" in r.err.split("neuronctl: error:")[1] and "hash" in r.err.lower(), r.err
    assert snapshot(venv) == before
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "new"), "--venv-python", "3.12",
            "--engine", engine)
    assert r.code == 1 and "removed the new venv" in r.err and not (tmp_path / "new").exists()
    # A --venv directory that was there, empty, is left there, empty.
    (tmp_path / "empty").mkdir()
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "empty"), "--venv-python", "3.12",
            "--engine", engine)
    assert r.code == 1 and (tmp_path / "empty").is_dir() and not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize("engine", ENGINES)
def test_server_dying_mid_download_leaves_target_identical(cli, uni, locked, tmp_path, stack_wheels, engine,
                                                           engines_fail_fast):
    venv = legacy_venv(tmp_path, stack_wheels)
    before = snapshot(venv)
    name = next(w.filename for w in uni.torch.projects["torch"] if "2.14.0" in w.filename
                and "cp312" in w.filename)
    uni.torch.cut_after[name] = 200
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--yes", "--engine", engine)
    assert r.code == 1 and "install failed, nothing changed" in r.err, r.err
    assert "torch" in r.err
    assert snapshot(venv) == before
    from neuronctl.cache_dir import user_cache_dir

    assert not (user_cache_dir() / "wheels").exists()  # neuronctl keeps no wheel it only hands on


def test_python_version_refusal(cli, uni, locked, tmp_path):
    venv = tmp_path / "py311"
    make_venv(venv, find_python("3.11"), with_pip=True)
    before = snapshot(venv)
    r = cli("install", *uni.index_flags(), "--python", str(venv))
    assert r.code == 2 and "Python 3.11" in r.err and "--venv-python 3.12" in r.err
    r = cli("install", "--lock", str(locked), "--python", str(venv))
    assert r.code == 2 and "requires-python >=3.12" in r.err
    assert snapshot(venv) == before


def test_failure_during_apply_removes_the_new_venv(cli, uni, locked, tmp_path):
    broken = tmp_path / "nki-0.7.0-py3-none-any.whl"
    broken.write_bytes(b"this is not a zip file")
    data = read_toml(locked, "lock")
    for pkg in data["packages"]:
        if pkg["name"] == "nki":
            pkg["wheels"] = [{"name": broken.name, "url": broken.as_uri(), "size": broken.stat().st_size,
                              "hashes": {"sha256": hashlib.sha256(broken.read_bytes()).hexdigest()}}]
    Path("pylock.broken.toml").write_text(dumps(data, arrays_of_tables=("packages",)))
    for engine in ENGINES:
        venv = tmp_path / f"new-{engine}"
        r = cli("install", "--lock", "pylock.broken.toml", "--venv", str(venv), "--venv-python", "3.12",
                "--engine", engine)
        assert r.code == 1 and "install failed" in r.err and "removed the new venv" in r.err, r.err
        assert not venv.exists()


def test_failed_install_into_existing_env_says_nothing_changed(cli, uni, locked, tmp_path, stack_wheels):
    venv = legacy_venv(tmp_path, stack_wheels)
    before = snapshot(venv)
    broken_nki_lock(locked, tmp_path)
    r = cli("install", "--lock", "pylock.broken.toml", "--python", str(venv), "--yes", "--engine", "pip")
    assert r.code == 1 and "install failed, nothing changed" in r.err, r.err
    assert f"files and directories in {site_packages(venv)}" in r.err  # it was checked, not assumed
    assert snapshot(venv) == before


def test_target_must_be_named(cli):
    r = cli("install")
    assert r.code == 2 and "--python PATH, --venv DIR" in r.err
    r = cli("install", "--python", "/nonexistent/python")
    assert r.code == 2 and "no such interpreter" in r.err
    r = cli("install", "--venv-python", "3.12")
    assert r.code == 2 and "only applies with --venv" in r.err


def test_plan_lists_each_source_url(cli, uni, locked, tmp_path):
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "n"), "--dry-run")
    assert r.code == 0
    base = uni.urls["neuron"].rsplit("/simple", 1)[0]
    assert "install   torch-neuronx" in r.out and f"{base}/files/torch_neuronx-2.14.3.0" in r.out


def test_pip_engine_needs_pip_in_the_target(cli, locked, tmp_path):
    venv = tmp_path / "bare"
    make_venv(venv, find_python("3.12"))
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--engine", "pip")
    assert r.code == 2 and "has no pip" in r.err and "--engine uv" in r.err


def test_offline_install_from_the_engines_cache(cli, wheels, tmp_path):
    with running(wheels) as uni:
        assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
        assert cli("install", "--lock", "pylock.toml", "--venv", str(tmp_path / "a"),
                   "--venv-python", "3.12", "--engine", "uv", "--no-check").code == 0
    # The indexes are gone: a second environment installs from uv's own cache (uv --offline),
    # each file checked against the lock's sha256 again.
    r = cli("install", "--lock", "pylock.toml", "--venv", str(tmp_path / "b"), "--venv-python", "3.12",
            "--engine", "uv", "--offline")
    assert r.code == 0, r.err
    assert installed(tmp_path / "b" / "bin" / "python")["torch-neuronx"] == "2.14.3.0"
    # pip keeps no files here: --offline with it is refused before anything changes.
    r = cli("install", "--lock", "pylock.toml", "--venv", str(tmp_path / "p"), "--venv-python", "3.12",
            "--engine", "pip", "--offline")
    assert r.code == 2 and "--offline: the pip engine keeps no downloaded files" in r.err
    assert "--engine uv" in r.err and not (tmp_path / "p").exists()
    r = cli("install", *uni.index_flags(), "--venv", str(tmp_path / "c"), "--offline", "--torch", "2.13")
    assert r.code == 1 and "--offline" in r.err and not (tmp_path / "c").exists()


def test_json_outcome(cli, locked, tmp_path):
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "j"), "--dry-run", "--json",
            "--engine", "uv")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["schema"] == 1 and doc["kind"] == "install" and doc["dry_run"] is True
    assert doc["engine"] == {"name": "uv", "reason": "--engine uv"}
    assert {c["name"]: c["action"] for c in doc["plan"]}["torch-neuronx"] == "install"
    assert doc["commands"][0][1:3] == ["venv", "--python"] and not (tmp_path / "j").exists()
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "j"), "--json", "--engine", "uv")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["applied"] is True and doc["doctor"]["verdict"] == "pass" and doc["exit_code"] == 0


def test_chip_refusal_on_a_trn1_host(cli, locked, tmp_path):
    from support.sysroots import build_host

    root = build_host(tmp_path / "trn1", "trn1")
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "n"), "--sysroot", str(root))
    assert r.code == 2 and "this host has trn1" in r.err and "trn2, trn3" in r.err
    assert not (tmp_path / "n").exists()


def test_ambiguous_lock_is_refused(cli, locked, tmp_path):
    data = read_toml(locked, "lock")
    nki = next(p for p in data["packages"] if p["name"] == "nki")
    data["packages"].append(dict(nki))  # the same package twice, neither with a marker
    Path("pylock.twice.toml").write_text(dumps(data, arrays_of_tables=("packages",)))
    r = cli("install", "--lock", "pylock.twice.toml", "--venv", str(tmp_path / "n"))
    assert r.code == 2 and "Multiple packages with the name 'nki'" in r.err
    assert not (tmp_path / "n").exists()


def test_failure_while_removing_reports_changes_and_restore_commands(cli, uni, locked, tmp_path,
                                                                     stack_wheels):
    venv = legacy_venv(tmp_path, stack_wheels)
    record = next(venv.glob("lib/python3.12/site-packages/torch_xla-2.9.0.dist-info/RECORD"))
    record.unlink()  # pip refuses to uninstall a distribution it has no file list for
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--yes", "--engine", "pip")
    assert r.code == 1, r.err
    assert "remove failed after changing" in r.err and "torch 2.9.0 -> 2.14.0+cpu" in r.err
    assert "torch-neuronx 2.9.0.2.15.32035+de43f57c -> 2.14.3.0" in r.err
    hint = r.err.split("restore with: ", 1)[1]
    assert f"--index-url {uni.urls['pytorch-cpu']} torch==2.9.0" in hint
    assert f"--index-url {uni.urls['neuron']} " in hint and "torch-neuronx==2.9.0.2.15.32035+de43f57c" in hint
    assert "pip uninstall --yes" in hint and "nki" in hint  # new ones go again
    # Every file the finished install step changed belongs to a package change reported above.
    assert "with no dist-info" not in r.err and "rm -rf" not in hint, r.err


@pytest.mark.parametrize("engine", ENGINES)
def test_inherited_index_settings_cannot_reach_the_engine(cli, uni, locked, tmp_path, monkeypatch, engine):
    evil = tmp_path / "evil-links"
    build_wheel(evil, "nki", "99.0.0")
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL"):
        monkeypatch.setenv(var, uni.urls["pypi"])  # the index holding the attacker's versions
    monkeypatch.setenv("PIP_FIND_LINKS", str(evil))
    monkeypatch.setenv("UV_FIND_LINKS", str(evil))
    before = len(uni.pypi.hits)
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "v"), "--venv-python", "3.12",
            "--engine", engine, "--no-check")
    assert r.code == 0, r.err
    assert installed(tmp_path / "v" / "bin" / "python")["nki"] == "0.7.0"
    assert all(not path.startswith("/simple/") for _, path, _ in uni.pypi.hits[before:])


def uv_that_holds(tmp_path: Path, hold: str) -> tuple[dict[str, str], Path]:
    """An environment whose uv installs for real, then touches a marker (the target has changed)
    and runs the shell command `hold`, as a slow install would."""
    from neuronctl.backend.choose import find_uv

    marker, bindir = tmp_path / "uv-installed", tmp_path / "uv-bin"
    bindir.mkdir()
    (bindir / "uv").write_text(f'#!/bin/sh\n"{find_uv(os.environ)}" "$@" || exit $?\n'
                               f'if [ "$1 $2" = "pip install" ]; then touch "{marker}"; {hold}; fi\n')
    (bindir / "uv").chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}, marker


class Lines:
    """Every line a stream says, read on a thread as it comes (so a test waits for a line, not
    for a guessed time)."""

    def __init__(self, stream) -> None:
        import threading

        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(stream), daemon=True)
        self._reader.start()

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def text(self) -> str:
        self._reader.join(timeout=60)
        return "".join(self.lines)


def test_interrupt_during_apply_reports_changes_and_restore_commands(uni, locked, tmp_path, stack_wheels):
    """Ctrl-C while the engine installs into an existing environment: the engine's changes are
    reported like a failure's, with the commands that restore the environment, and exit 130."""
    import signal
    import sys

    venv = legacy_venv(tmp_path, stack_wheels)
    env, marker = uv_that_holds(tmp_path, "exec sleep 120")  # until it is interrupted
    proc = subprocess.Popen([sys.executable, "-m", "neuronctl", "install", "--lock", str(locked), "--python",
                             str(venv / "bin" / "python"), "--yes", "--engine", "uv", "--no-check"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(marker, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "install was interrupted after changing" in err and "torch 2.9.0 -> 2.14.0+cpu" in err
    hint = err.split("restore with: ", 1)[1]
    assert f"--index-url {uni.urls['pytorch-cpu']} torch==2.9.0" in hint and "Traceback" not in err
    # uv's own commands (no pip needed in the target), aimed at it with --python
    assert f"uv pip install --python {venv / 'bin' / 'python'} --no-deps" in hint, hint
    assert " -m pip " not in hint, hint
    assert installed(venv / "bin" / "python")["torch"] == "2.14.0+cpu"  # the report is the truth
    from neuronctl.backend.choose import find_uv  # the real uv, for the one this test put first

    # The command that takes away what came new runs as shown (the test indexes keep no old
    # wheels for the reinstalls to fetch).
    (drop,) = [c for c in hint.split(" && ") if " pip uninstall " in c]
    assert "nki" in installed(venv / "bin" / "python")
    real = subprocess.run(drop.replace(str(tmp_path / "uv-bin" / "uv"), str(find_uv(os.environ))),
                          shell=True, capture_output=True, text=True, check=False)
    assert real.returncode == 0, real.stderr
    assert "nki" not in installed(venv / "bin" / "python")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("signame", "code", "word"), [("SIGINT", 130, "interrupted"),
                                                      ("SIGTERM", 143, "terminated")])
def test_stopping_during_a_slow_download_stops_at_once_and_leaves_nothing(uni, locked, tmp_path, signame,
                                                                          code, word, engine):
    """Ctrl-C, or a CI job's SIGTERM, while the engine fetches a large file: neuronctl passes the
    signal on, the engine stops without waiting the download out, the doctor's inspection held
    beside it ends too, and the new venv is gone."""
    import signal
    import sys

    lock, big = big_nki_lock(uni, locked, tmp_path, 8)
    uni.neuron.trickle[big.name] = (64 << 10, 0.25)  # 8 MB in about 32 s
    venv = tmp_path / "new"
    proc = subprocess.Popen([sys.executable, "-m", "neuronctl", "install", "--lock", str(lock),
                             "--venv", str(venv), "--venv-python", "3.12", "--engine", engine],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def midway() -> bool:
        """nki is coming in (the server sends it) into the venv made before the engine ran."""
        return uni.neuron.trickling.is_set() and (venv / "pyvenv.cfg").exists()

    def held() -> bool:
        """The doctor's inspection of the venv is up beside the engine (probes/held_inspection.py)."""
        return subprocess.run(["pgrep", "-f", f"^{venv}/bin/python .*inspect_env.py"],
                              capture_output=True, check=False).returncode == 0

    try:
        wait_until(midway, proc)
        wait_until(held, proc)
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=15)  # far less than the 30 s the rest would take
    finally:
        proc.kill()
    assert proc.returncode == code and f"install was {word}" in err, err
    assert "removed the new venv" in err and not venv.exists()
    engines = subprocess.run(["pgrep", "-f", str(venv)], capture_output=True, text=True, check=False)
    assert not engines.stdout.strip()  # the engine did not outlive neuronctl


def test_concurrent_installs_into_one_environment_take_turns(uni, locked, tmp_path):
    """A second install into the same environment (named another way) waits for the first to
    finish, then plans against what the first left: nothing to do."""
    import sys

    venv = tmp_path / "shared"
    make_venv(venv, find_python("3.12"))
    release = tmp_path / "go-on"
    env, marker = uv_that_holds(tmp_path, f'while [ ! -e "{release}" ]; do sleep 0.1; done')
    base = [sys.executable, "-m", "neuronctl", "install", "--lock", str(locked), "--engine", "uv",
            "--no-check"]
    first = subprocess.Popen([*base, "--venv", str(venv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    second = None
    waiting = f"waiting for another neuronctl install into {venv} to finish"
    try:
        wait_for(marker, first)
        second = subprocess.Popen([*base, "--python", str(venv / "bin" / "python")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out2, err2 = Lines(second.stdout), Lines(second.stderr)
        wait_until(lambda: err2.said(waiting), second)
        assert first.poll() is None and second.poll() is None  # the second waits on the first
        release.touch()
        out1, err1 = first.communicate(timeout=120)
        second.wait(timeout=120)
    finally:
        release.touch()
        for proc in (first, second):
            if proc is not None:
                proc.kill()
    assert first.returncode == 0 and "applied: 7 installed" in out1, err1
    assert second.returncode == 0, err2.text()
    assert "already matches" in out2.text() and not out2.said("applied")
    assert installed(venv / "bin" / "python")["torch-neuronx"] == "2.14.3.0"


@pytest.mark.parametrize("backend", ["uv", "pip"])
def test_a_new_venv_made_while_planning_goes_again_when_the_install_stops_before_the_engine(
        cli, uni, locked, tmp_path, backend):
    """The venv is made while the install is planned; bad input found after that (a lock for
    another Python; --offline with the pip engine and remote files) leaves no venv behind, and
    a directory that was there empty is empty again."""
    venv = tmp_path / "new"
    r = cli("install", "--lock", str(locked), "--venv", str(venv), "--venv-python", find_python("3.11"),
            "--engine", backend)
    assert r.code == 2 and "requires-python >=3.12" in r.err, r.err
    _settle_venv_makers()
    assert not venv.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    r = cli("install", "--lock", str(locked), "--venv", str(kept), "--venv-python", find_python("3.12"),
            "--engine", "pip", "--offline")
    assert r.code == 2 and "--offline" in r.err, r.err
    _settle_venv_makers()
    assert kept.is_dir() and not any(kept.iterdir())


def _settle_venv_makers() -> None:
    """Wait out any venv creation still running in this process, so a venv it would leave
    behind is there to be seen (the CLI process would exit while its engine went on)."""
    import threading

    for thread in threading.enumerate():
        if thread.name == "neuronctl-venv":
            thread.join(60)
