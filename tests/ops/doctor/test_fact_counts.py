"""Each fact once per command run (issue 13): the machine read once, neuron-ls run once, IMDS asked
once, the interpreter inspected once, the manifest parsed once, the --lock read once; and
`doctor --only python.version` touches no hardware, IMDS or neuron-ls at all, whether the Python
fits the release or not (a python.version fix aims at the chip's PyTorch line only where the run
reads the hardware anyway; otherwise it leaves that choice to `neuronctl install`)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.sysroots import build_host

import neuronctl.probes.hardware
import neuronctl.probes.imds
import neuronctl.probes.pyenv
import neuronctl.release.manifest
import neuronctl.resolvers.pylock

# These captured trees carry a fake neuron-ls that the tests mean to run.
pytestmark = pytest.mark.usefixtures("sysroot_tools")


LOCK = ('lock-version = "1.0"\ncreated-by = "test"\n\n'
        '[[packages]]\nname = "nki"\nversion = "0.6.0"\n'
        '[[packages.wheels]]\nurl = "https://example.invalid/nki-0.6.0-py3-none-any.whl"\n'
        'hashes = {sha256 = "' + "b" * 64 + '"}\n')


def fitting_release() -> str:
    """The newest bundled release whose Python range holds the Python running the tests."""
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    releases = neuronctl.release.manifest.load_bundled_manifest().releases
    return next(r.version for r in releases if minor in r.python and r.frameworks)


def unfitting_release() -> str:
    """The newest bundled release whose Python range leaves out the Python running the tests."""
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    releases = neuronctl.release.manifest.load_bundled_manifest().releases
    return next(r.version for r in releases if minor not in r.python and r.frameworks)


RELEASE = fitting_release()  # read before any counter is set
UNFIT = unfitting_release()


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A trn2 host whose DMI does not name the instance (so IMDS is asked) and whose neuron-ls
    leaves a line in a file each time it runs."""
    root = build_host(tmp_path / "trn2", "trn2", dmi=False)
    tool = root / "opt/aws/neuron/bin/neuron-ls"
    shebang, rest = tool.read_text().split("\n", 1)
    tool.write_text(f"{shebang}\necho run >> '{tmp_path / 'neuron-ls.runs'}'\n{rest}")
    return root


@pytest.fixture
def fact_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Counter[str]:
    """Counters on the functions that gather each fact, each still doing its real work."""
    seen: Counter[str] = Counter()

    def counting(module: Any, name: str, key: str) -> None:
        real = getattr(module, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen[key] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    counting(neuronctl.probes.hardware, "gather_evidence", "hardware")
    counting(neuronctl.probes.imds, "imds_instance_type", "imds")  # disabled by conftest: no network
    counting(neuronctl.release.manifest, "parse_manifest", "manifest")
    counting(neuronctl.resolvers.pylock, "load_pylock", "lock")
    counting(neuronctl.probes.pyenv.Inspection, "result", "inspection")
    return seen


def neuron_ls_runs(tmp_path: Path) -> int:
    runs = tmp_path / "neuron-ls.runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


@pytest.mark.parametrize(("args", "expected"), [
    (["doctor", "--json", "--no-device-probe"],
     {"hardware": 1, "neuron-ls": 1, "imds": 1, "inspection": 1, "manifest": 1, "lock": 0}),
    (["doctor", "--json", "--only", "python.version"],
     {"hardware": 0, "neuron-ls": 0, "imds": 0, "inspection": 1, "manifest": 1, "lock": 0}),
    (["doctor", "--json", "--no-device-probe", "--lock", "LOCK"],
     {"hardware": 1, "neuron-ls": 1, "imds": 1, "inspection": 1, "manifest": 1, "lock": 1}),
    (["env", "--json"],
     {"hardware": 1, "neuron-ls": 1, "imds": 1, "inspection": 1, "manifest": 0, "lock": 0}),
    (["detect", "--json"],
     {"hardware": 1, "neuron-ls": 1, "imds": 1, "inspection": 0, "manifest": 0, "lock": 0}),
], ids=["doctor", "doctor-only-python", "doctor-lock", "env", "detect"])
def test_each_fact_is_gathered_once(cli: Any, host: Path, fact_calls: Counter[str], tmp_path: Path,
                                    args: list[str], expected: dict[str, int]) -> None:
    lock = tmp_path / "pylock.toml"
    lock.write_text(LOCK)
    args = [str(lock) if a == "LOCK" else a for a in args]
    if args[0] == "doctor":
        args += ["--release", RELEASE]
    r = cli(*args, "--sysroot", str(host))
    assert r.code in (0, 1), r.err
    json.loads(r.out)  # one document, whatever the verdict
    got = {key: fact_calls[key] for key in expected if key != "neuron-ls"}
    got["neuron-ls"] = neuron_ls_runs(tmp_path)
    assert got == expected


def test_doctor_only_python_reports_no_hardware_section(cli: Any, host: Path,
                                                        tmp_path: Path) -> None:
    r = cli("doctor", "--json", "--only", "python.version", "--sysroot", str(host),
            "--release", RELEASE)
    assert r.code == 0, r.out
    environment = json.loads(r.out)["environment"]
    assert "python" in environment and "release" in environment
    assert "hardware" not in environment
    assert neuron_ls_runs(tmp_path) == 0


def test_doctor_only_python_that_does_not_fit_reads_no_hardware(cli: Any, host: Path,
                                                                fact_calls: Counter[str],
                                                                tmp_path: Path) -> None:
    r = cli("doctor", "--json", "--only", "python.version", "--sysroot", str(host),
            "--release", UNFIT)
    assert r.code in (0, 1), r.err
    doc = json.loads(r.out)
    (check,) = doc["checks"]
    assert check["status"] in ("warn", "fail") and "is not supported by Neuron" in check["message"]
    # The fix still says what to do, without the chip's PyTorch line: install chooses it.
    assert f"install --release {UNFIT}" in check["fix"] and "--torch" not in check["fix"]
    assert (fact_calls["hardware"], fact_calls["imds"], neuron_ls_runs(tmp_path)) == (0, 0, 0)
    assert "hardware" not in doc["environment"]
