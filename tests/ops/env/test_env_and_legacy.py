import json

import pytest
from support.wheels import find_python, make_venv

from neuronctl.ops.env import relevant_environ
from neuronctl.probes.legacy import detect_legacy
from neuronctl.probes.pyenv import Inspection, inspect_python


def test_inspect_reads_target_interpreter(stacks):
    env = inspect_python(str(stacks["native"]))
    assert env.python.startswith("3.12.")
    assert env.in_venv
    assert env.get("torch_neuronx").version == "2.14.3.0"
    assert env.get("torch").version == "2.14.0+cpu"
    assert env.markers["python_version"] == "3.12"
    # the 3.12 venv has no pip or packaging: tags are empty rather than wrong
    ours = inspect_python()
    assert ours.tags and ours.tags[0].startswith("cp311-cp311-")
    assert env.get("torch-neuronx").xla_impl is False


@pytest.mark.parametrize("stack", ["native", "legacy", "placeholder", "clash", "cuda"])
def test_dist_info_scan_reads_what_importlib_metadata_reads(stacks, stack):
    """The fast reader against the reference, on real venvs: names, versions, Requires-Dist,
    summaries, installers, and the file-based signals (xla_impl, placeholder text)."""
    fast = Inspection(str(stacks[stack])).result()
    full = Inspection(str(stacks[stack]), metadata_only=True).result()
    assert (fast.reader, full.reader) == ("dist-info scan", "importlib.metadata")
    assert fast.distributions == full.distributions and fast.distributions


def test_egg_info_on_the_path_falls_back_to_importlib_metadata(tmp_path):
    venv = tmp_path / "v"
    py = make_venv(venv, find_python("3.12"))
    site = next(venv.glob("lib/python3.*/site-packages"))
    (site / "old_thing-1.0-py3.12.egg-info").write_text("Metadata-Version: 1.1\nName: old-thing\nVersion: 1.0\n")
    env = Inspection(str(py)).result()
    assert env.reader == "importlib.metadata" and env.get("old-thing").version == "1.0"


ENSUREPIP_WHEEL = """
import ensurepip, os
dirs = [os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"), getattr(ensurepip, "_WHEEL_PKG_DIR", None) or ""]
print(next(os.path.join(d, f"pip-{ensurepip.version()}-py3-none-any.whl") for d in dirs
           if d and os.path.isfile(os.path.join(d, f"pip-{ensurepip.version()}-py3-none-any.whl"))))
"""


@pytest.mark.parametrize("minor", ["3.10", "3.11", "3.12", "3.13", "system"])
def test_bundled_pip_is_the_wheel_ensurepip_would_install(minor):
    """The inspection finds the pip wheel without importing ensurepip; it must be ensurepip's own
    (pyenv builds, and Debian's python3, whose wheels live in /usr/share/python-wheels when its
    python3-venv is there)."""
    import shutil
    import subprocess

    py = shutil.which("python3", path="/usr/bin") if minor == "system" else find_python(minor)
    if py is None:
        pytest.skip("no /usr/bin/python3 here")
    ref = subprocess.run([py, "-c", ENSUREPIP_WHEEL], capture_output=True, text=True, check=False)
    env = Inspection(py, packages=False, tags=False, bundled_pip=True).result()
    assert env.bundled_pip == (ref.stdout.strip() if ref.returncode == 0 else "")
    if minor != "system":
        assert env.bundled_pip.endswith(".whl")


def test_legacy_signals_all_reported(stacks):
    env = inspect_python(str(stacks["legacy"]))
    report = detect_legacy(env, {"PJRT_DEVICE": "NEURON"})
    assert report.verdict == "legacy"
    names = {s.name for s in report.signals}
    assert names == {"torch-neuronx version", "torch-neuronx Requires-Dist", "torch-neuronx files",
                     "torch-xla installed", "libneuronxla installed", "PJRT_DEVICE"}
    assert set(report.legacy_packages) == {"torch-neuronx", "torch-xla", "libneuronxla"}


def test_native_is_clean_and_pjrt_makes_it_mixed(stacks):
    env = inspect_python(str(stacks["native"]))
    assert detect_legacy(env, {}).verdict == "native"
    mixed = detect_legacy(env, {"PJRT_DEVICE": "NEURON"})
    assert mixed.verdict == "mixed"


def test_placeholders_detected_by_file_text(stacks):
    env = inspect_python(str(stacks["placeholder"]))
    assert env.get("torch-neuronx").wrong_package
    report = detect_legacy(env, {})
    assert sorted(report.placeholders) == ["neuronx-cc 1.0.post1", "torch-neuronx 1.0"]


def test_env_dump_markdown_and_json(stacks, cli, monkeypatch):
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "0-3")
    monkeypatch.setenv("NEURON_API_TOKEN", "s3cr3t")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://user:hunter2@example.invalid/simple")
    r = cli("env", "--python", str(stacks["native"]))
    assert r.code == 0, r.err
    for needle in ("| torch-neuronx | 2.14.3.0 |", "| neuronx-cc | 2.28.7631.0+6f180f47 |",
                   "| nki | 0.7.0 |", "| NEURON_RT_VISIBLE_CORES | 0-3 |", "<redacted>"):
        assert needle in r.out
    assert "s3cr3t" not in r.out and "hunter2" not in r.out
    data = json.loads(cli("env", "--json", "--python", str(stacks["native"])).out)
    assert data["schema"] == 1
    assert data["env"]["packages"]["torch"] == "2.14.0+cpu"
    assert data["env"]["torch"]["build"] == "CPU"
    cuda = json.loads(cli("env", "--json", "--python", str(stacks["cuda"])).out)
    assert cuda["env"]["torch"]["build"] == "CUDA"
    # collect_env's "Versions of relevant libraries", with the Neuron packages it misses
    for line in ("[pip3] torch==2.14.0+cpu", "[pip3] torch-neuronx==2.14.3.0",
                 "[pip3] neuronx-cc==2.28.7631.0+6f180f47", "[pip3] nki==0.7.0"):
        assert line in r.out
    # the stub torch has no torch.utils: said so, and the rest of the report is still there
    assert data["env"]["collect_env"]["status"] == "error"
    assert "torch.utils" in data["env"]["collect_env"]["detail"]
    assert data["env"]["torch_build"]["local_label"] == "cpu"
    assert "torch 2.14.0+cpu (CPU build)" in data["env"]["summary"]


def test_env_keeps_the_variables_torch_and_openmp_read():
    """PYTORCH_*, TORCHINDUCTOR_*, TORCHDYNAMO_*, OMP_NUM_THREADS and LD_LIBRARY_PATH are kept,
    under the same redaction rules (secret names whole, credentials in values)."""
    environ = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
               "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHDYNAMO_VERBOSE": "1",
               "OMP_NUM_THREADS": "4", "LD_LIBRARY_PATH": "/opt/aws/neuron/lib:/usr/local/lib",
               "TORCHINDUCTOR_REMOTE_CACHE_TOKEN": "HUSH1",
               "PYTORCH_HUB_MIRROR": "https://bob:HUSH2@hub.example/x", "HOME": "/root"}
    out = relevant_environ(environ)
    assert out == {**{k: v for k, v in environ.items() if k != "HOME"},
                   "TORCHINDUCTOR_REMOTE_CACHE_TOKEN": "<redacted>",
                   "PYTORCH_HUB_MIRROR": "https://***@hub.example/x"}


def test_env_bad_python(cli, tmp_path):
    r = cli("env", "--python", str(tmp_path / "nope"))
    assert r.code == 2 and "no such interpreter" in r.err


SECRET_NAMED = ["NEURON_DEPLOY_KEY", "NEURON_APIKEY", "NEURON_HUB_APIKEY", "TORCH_PASSPHRASE",
                "NEURON_AUTH_HEADER", "XLA_AUTHORIZATION", "NEURONCTL_PASSWD", "NEURON_CREDENTIALS",
                "TORCH_COOKIE", "NEURON_SESSION", "NEURON_URL_SIGNATURE", "NEURON_PRIVATE_KEY",
                "NEURON_SECRET", "NEURON_API_TOKEN", "PJRT_PASSWORD", "NEURON_SSHKey"]


def test_env_redacts_secret_names_and_credentials_anywhere_in_values(cli, monkeypatch):
    """Names from the wide list are redacted whole; in other values, URL credentials in a flag
    value, after a comma, in quotes or after url=, and Bearer/Basic tokens are masked. A URL
    with a port that is not a number (urllib raises on it) does not crash the dump."""
    for i, name in enumerate(SECRET_NAMED):
        monkeypatch.setenv(name, f"plainvalue{i}zz")
    values = {
        "NEURON_CC_FLAGS": "--cache_dir=s3://AKIAUSER:wJalrHUSH1@bucket/cache --opt 2",
        "PIP_EXTRA_INDEX_URL": "https://a.example/simple,https://bob:HUSH2@b.example/simple",
        "UV_INDEX_URL": "'https://carol:HUSH3@c.example/simple'",
        "NEURON_RT_CONFIG": "url=dave:HUSH4@d.example/x",
        "TORCH_HEADERS": "Authorization: Bearer HUSH5tok",
        "XLA_HEADERS": "Basic U0VDUkVUNjpwdw==",
        "NEURONCTL_MIRROR": "http://eve:HUSH7@host:notaport/simple",
        "NEURON_RT_VISIBLE_CORES": "0-3",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    r = cli("env")
    assert r.code == 0, r.err
    assert "HUSH" not in r.out and "SFVTSDY6cHc" not in r.out and "plainvalue" not in r.out
    for name in SECRET_NAMED:
        assert f"| {name} | <redacted> |" in r.out
    assert "| NEURON_RT_VISIBLE_CORES | 0-3 |" in r.out
    assert "https://a.example/simple,https://***@b.example/simple" in r.out  # the rest is kept
    data = json.loads(cli("env", "--json").out)["env"]["environment"]
    assert "HUSH" not in json.dumps(data) and data["NEURON_RT_VISIBLE_CORES"] == "0-3"
