"""No child Python that probes/ starts imports from the caller's working directory (issue 22,
item 1, the probes' part): a ./torch (or ./packaging) package where the user stands, with a
PYTHONPATH holding an empty entry (`PYTHONPATH=$UNSET:/x`, which Python reads as the working
directory), is never what the device probe, torch_env, the smoke run or the environment
inspection import. Real interpreters (this venv's, with torch CPU), a real impostor package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from neuronctl.probes.target_run import without_cwd_on_path

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_proc_cwd.py)


@pytest.fixture
def impostor(isolated_env, monkeypatch) -> Path:
    """./torch and ./packaging in the working directory; each leaves a mark if imported."""
    for name in ("torch", "packaging"):
        (isolated_env / name).mkdir()
        (isolated_env / name / "__init__.py").write_text(
            f"open({str(isolated_env / 'IMPORTED')!r}, 'a').write({name!r} + chr(10))\n"
            "raise ImportError('the impostor in the working directory')\n")
    monkeypatch.setenv("PYTHONPATH", ":" + str(isolated_env / "nothing-here"))
    return isolated_env / "IMPORTED"


def test_the_device_probe_imports_the_real_torch(impostor):
    from neuronctl.probes.device import run_device_probe

    report = run_device_probe(sys.executable, "cpu", timeout=120)
    assert not impostor.exists(), impostor.read_text()
    assert report.torch is not None and report.torch.startswith("2."), report


def test_torch_env_imports_the_real_torch(impostor):
    from neuronctl.probes.torch_env import TorchEnvRun

    facts = TorchEnvRun(sys.executable, 120, cwd=str(Path.cwd())).result()
    assert not impostor.exists(), impostor.read_text()
    assert facts.status == "ok", facts


def test_the_smoke_run_imports_the_real_torch(cli, impostor):
    r = cli("smoke", "--device", "cpu", "--warmup", "1", "--steps", "1")
    assert not impostor.exists(), impostor.read_text()
    assert r.code == 0, r.out + r.err


def test_the_inspection_imports_the_real_packaging(impostor):
    from neuronctl.probes.pyenv import inspect_python

    env = inspect_python(sys.executable, tags=True)
    assert not impostor.exists(), impostor.read_text()
    assert env.tags


@pytest.mark.parametrize(("given", "kept"), [
    (":/a", "/a"), ("/a:", "/a"), ("/a::/b", "/a:/b"), (":", None), ("", None), (":.", "."),
])
def test_only_the_empty_entries_of_pythonpath_are_dropped(given, kept):
    cleaned = without_cwd_on_path({"PYTHONPATH": given, "OTHER": "1"})
    assert cleaned is not None and cleaned["OTHER"] == "1"
    assert cleaned.get("PYTHONPATH") == kept
    assert without_cwd_on_path({"PYTHONPATH": "/a:/b"}) is None
    assert without_cwd_on_path({"PYTHONPATH": "/a:."}) is None  # the user's own "." stays theirs
    assert without_cwd_on_path({}) is None
