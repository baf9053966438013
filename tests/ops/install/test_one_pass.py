"""`neuronctl install` in one pass (issue 14): the engine is handed the exact files (direct URLs,
each with its sha256, no index) and fetches, verifies and installs them itself, with both engines,
against real loopback indexes.

What is proved here: each wheel byte is served once and neuronctl keeps none; a burst of 5xx is
retried by the engine, a longer one fails with the environment byte-identical; a server that dies
on the last file leaves it byte-identical after every other file was fetched (the engines fetch
everything before they touch the environment); credentials (from ~/.netrc, or in an --index URL)
reach the engine but appear in no argv, environment, output or installed file; the engine's own
progress reaches a terminal; install --lock picks the GPU fallback lock on an NVIDIA host."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.private_index import ENCODED, GOOD, PASSWORD, USER, assert_no_secret, private_universe
from support.sysroots import nvidia_host
from support.venvs import ENGINES, legacy_venv, snapshot

from neuronctl.cache_dir import user_cache_dir

pytestmark = pytest.mark.slow


def whole_gets(uni) -> list[str]:
    """The wheel files served whole (not a range of one), one entry per request."""
    return [path.rsplit("/", 1)[1] for method, path, ranged in uni.all_hits()
            if method == "GET" and path.endswith(".whl") and not ranged]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_wheel_byte_is_served_once_and_neuronctl_keeps_none(cli, uni, locked, tmp_path, engine):
    for state in (uni.pypi, uni.torch, uni.neuron):
        state.reset_counts()
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "v"), "--venv-python", "3.12",
            "--engine", engine, "--no-check")
    assert r.code == 0, r.err
    got = whole_gets(uni)
    assert len(got) == len(set(got)) == 7, got  # each of the lock's 7 files, once
    served = sum(e.path.stat().st_size for s in (uni.pypi, uni.torch, uni.neuron)
                 for entries in s.projects.values() for e in entries if e.filename in got)
    pages = [p for _m, p, _r in uni.all_hits() if not p.endswith(".whl")]
    assert pages == []  # no index was asked: the engine had the exact URLs
    assert uni.bytes_sent() == served, uni.all_hits()
    assert not (user_cache_dir() / "wheels").exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_5xx_burst_is_retried_and_a_longer_one_changes_nothing(cli, uni, locked, tmp_path, stack_wheels,
                                                                 engine, monkeypatch):
    torch = next(w.filename for w in uni.torch.projects["torch"] if w.filename.startswith("torch-2.14.0")
                 and "cp312" in w.filename)
    uni.torch.fail_first[f"/files/{torch}"] = 2
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "v"), "--venv-python", "3.12",
            "--engine", engine, "--no-check")
    assert r.code == 0, r.err
    venv = legacy_venv(tmp_path, stack_wheels)
    before = snapshot(venv)
    uni.torch.fail_first[f"/files/{torch}"] = 1000
    monkeypatch.setenv("UV_HTTP_RETRIES", "1")  # the burst outlasts any retries: no long back-off
    monkeypatch.setenv("PIP_RETRIES", "1")
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--yes", "--engine", engine)
    assert r.code == 1 and "install failed, nothing changed" in r.err, r.err
    assert "503" in r.err or "Service Unavailable" in r.err
    assert snapshot(venv) == before


@pytest.mark.parametrize("engine", ENGINES)
def test_the_server_dying_on_the_last_file_leaves_the_environment_identical(cli, uni, locked, tmp_path,
                                                                             stack_wheels, engine,
                                                                             engines_fail_fast):
    """The last file of the install is held back until the others are in, then cut off: every
    other file was fetched (and verified), the engine still changed nothing."""
    venv = legacy_venv(tmp_path, stack_wheels)
    before = snapshot(venv)
    last = next(e.filename for e in uni.pypi.projects["typing-extensions"] if "4.12.2" in e.filename)
    uni.pypi.stall[f"/files/{last}"] = (2.0, 1000)
    uni.pypi.cut_after[last] = 300
    for state in (uni.pypi, uni.torch, uni.neuron):
        state.reset_counts()
    r = cli("install", "--lock", str(locked), "--python", str(venv), "--yes", "--engine", engine)
    assert r.code == 1 and "install failed, nothing changed" in r.err, r.err
    assert "typing" in r.err
    fetched = set(whole_gets(uni)) - {last}
    assert len(fetched) == 6, fetched  # the other six came in whole before the last one failed
    assert snapshot(venv) == before


class EngineWatch:
    """What `ps` would show: the argv and the environment of every engine process (uv pip ...,
    python -m pip ...) while it runs, read from /proc every few milliseconds."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[list[str], str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    @staticmethod
    def is_engine(argv: list[str]) -> bool:
        return argv[1:3] == ["pip", "install"] or argv[1:4] == ["-m", "pip", "install"]

    def _watch(self) -> None:
        while not self._stop.is_set():
            for pid in (p for p in os.listdir("/proc") if p.isdigit()):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
                    if self.is_engine(argv):
                        env = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
                        self.seen[int(pid)] = (argv, env)
                except OSError:
                    continue
            time.sleep(0.005)

    def __enter__(self) -> EngineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_neuronctl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronctl", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)


def files_text(venv: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in venv.rglob("*")
                     if p.is_file() and p.suffix in (".json", ".txt", ".cfg", "") and p.stat().st_size < 1 << 20)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("where", ["netrc", "index-url"])
def test_a_private_index_installs_and_its_password_is_in_no_argv_env_output_or_file(cli, wheels, tmp_path,
                                                                                    engine, where):
    with private_universe(wheels) as (uni, private_seen, _others):
        secret_url = uni.urls["pypi"].replace("http://", f"http://{ENCODED}@")
        public = [f"--index=pytorch-cpu={uni.urls['pytorch-cpu']}", f"--index=neuron={uni.urls['neuron']}"]
        if where == "netrc":  # ~/.netrc, read by neuronctl and by both engines alike
            netrc = Path(os.environ["HOME"]) / ".netrc"
            netrc.write_text(f"machine 127.0.0.1 login {USER} password {PASSWORD}\n")
            netrc.chmod(0o600)
            pypi = f"--index=pypi={uni.urls['pypi']}"
        else:
            pypi = f"--index=pypi={secret_url}"
        assert cli("lock", pypi, *public, "--python", "3.12").code == 0
        private_seen.clear()
        tmpdir = tmp_path / "tmp"
        tmpdir.mkdir()
        venv = tmp_path / "v"
        with EngineWatch() as watch:
            done = run_neuronctl("install", "--lock", "pylock.toml", pypi, *public, "--venv", str(venv),
                                 "--venv-python", "3.12", "--engine", engine, "--no-check",
                                 env={**os.environ, "TMPDIR": str(tmpdir)})
        assert done.returncode == 0, done.stderr
        assert private_seen and set(private_seen) <= {GOOD, None} and GOOD in private_seen
        engines = list(watch.seen.values())
        assert engines, "the engine process was never seen"
        for argv, environ in engines:
            assert_no_secret(" ".join(argv), environ)
        assert_no_secret(done.stdout, done.stderr, files_text(venv))
        assert not list(tmpdir.iterdir())  # the private requirements file is gone


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engines_own_progress_reaches_a_terminal_and_failures_are_still_reported(uni, locked, tmp_path,
                                                                                     engine):
    from support.pty_session import on_pty

    def on_terminal(*args: str) -> tuple[int, str]:
        env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / f"uv-{len(args)}")}
        ran = on_pty([sys.executable, "-m", "neuronctl", *args], env, width=120, timeout=120)
        return ran.code, ran.shown

    code, said = on_terminal("install", "--lock", str(locked), "--venv", str(tmp_path / "v"),
                             "--venv-python", "3.12", "--engine", engine, "--no-check")
    assert code == 0, said
    # The engine's own words, which a captured run keeps to itself.
    assert ("Installed 8 packages" if engine == "uv" else "Successfully installed") in said, said
    from support.wheels import build_wheel

    uni.neuron.projects["nki"][0].path = build_wheel(tmp_path / "evil", "nki", "0.7.0", summary="other bytes")
    code, said = on_terminal("install", "--lock", str(locked), "--venv", str(tmp_path / "w"),
                             "--venv-python", "3.12", "--engine", engine)
    assert code == 1 and "neuronctl: error: install failed" in said and "removed the new venv" in said
    error = said.split("neuronctl: error:", 1)[1]
    assert "nki" in error and "hash" in error.lower()  # the reason, kept while it went by


def test_captured_engine_output_stays_out_of_a_log(cli, locked, tmp_path):
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "v"), "--venv-python", "3.12",
            "--engine", "uv", "--no-check")
    assert r.code == 0 and "Installed 8 packages" not in r.err + r.out
    assert "uv fetches 8 file(s), each checked against its sha256, then installs" in r.err


def test_install_lock_picks_the_cuda_fallback_on_an_nvidia_host(cli, cu, tmp_path):
    import json

    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags).code == 0 and cli("lock", *flags, "--fallback", "cuda").code == 0
    host = nvidia_host(tmp_path / "host")
    venv = str(tmp_path / "v")
    r = cli("install", "--lock", "pylock.toml", "--venv", venv, "--venv-python", "3.12", "--dry-run",
            "--sysroot", str(host), "--engine", "uv")
    assert r.code == 0, r.err
    assert "lock: pylock.cuda.toml (no Neuron device; NVIDIA driver 580.65.06 (from " \
           "/sys/module/nvidia/version): the CUDA fallback lock, cu130)" in r.err
    assert re.search(r"install +torch +2\.14\.0\+cu130 ", r.out) and "torch-neuronx" not in r.out
    assert "no Neuron hardware here" not in r.err  # no Neuron preflight for a fallback lock
    r = cli("install", "--lock", "pylock.toml", "--venv", venv, "--venv-python", "3.12", "--dry-run",
            "--sysroot", str(host), "--engine", "uv", "--json")
    doc = json.loads(r.out)
    assert doc["lock_choice"]["device"] == "cuda" and doc["lock_choice"]["path"] == "pylock.cuda.toml"
    assert doc["source"]["lock"] == "pylock.cuda.toml"
    assert any("torch @ " in line and "cu130" in line for line in doc["requirements"])
    # --device overrides; a fallback lock that is not there is bad input naming the command.
    r = cli("install", "--lock", "pylock.toml", "--venv", venv, "--dry-run", "--sysroot", str(host),
            "--device", "neuron", "--json")
    assert json.loads(r.out)["lock_choice"]["path"] == "pylock.toml"
    r = cli("install", "--lock", "pylock.toml", "--venv", venv, "--dry-run", "--sysroot", str(host),
            "--device", "cpu")
    assert r.code == 2 and "neuronctl lock --fallback cpu" in r.err
    # Neuron devices win over the GPU; the chip check applies to the Neuron lock only.
    trn1 = nvidia_host(tmp_path / "trn1", "trn1")
    r = cli("install", "--lock", "pylock.toml", "--venv", venv, "--dry-run", "--sysroot", str(trn1))
    assert r.code == 2 and "this host has trn1" in r.err
    r = cli("install", "--lock", "pylock.toml", "--venv", venv, "--dry-run", "--sysroot", str(trn1),
            "--device", "cuda", "--venv-python", "3.12")
    assert r.code == 0 and "lock: pylock.cuda.toml (--device cuda" in r.err, r.err
    assert not Path(venv).exists()


