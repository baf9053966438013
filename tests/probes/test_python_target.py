"""`--python`: what is not a Python 3 is bad input (exit 2, one line naming it), and what a real
target interpreter prints or leaves running cannot fake, stretch or break the inspection."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from support.wheels import find_python, make_venv, site_packages

from neuronctl.probes.pyenv import Inspection, MalformedInspection, inspect_python, parse_inspection


def _shell_script(tmp_path):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 3\necho '{\"python\": \"3.12.0\"}'\n")
    script.chmod(0o755)
    return script


def _not_executable(tmp_path):
    script = tmp_path / "python3"
    script.write_text("print('hi')\n")
    return script


def _dir_without_python(tmp_path):
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    return tmp_path / "venv"


def _python2(tmp_path):
    try:
        return find_python("2.7")
    except RuntimeError:
        pytest.skip("no Python 2.7 here")


BAD_PYTHONS = {
    "false": (lambda tmp_path: "/usr/bin/false", "not a Python 3 interpreter (exit 1)"),
    "shell script": (_shell_script, "not a Python 3 interpreter"),
    "python 2": (_python2, "(it is Python 2.7; neuronctl inspects Python 3.6 and newer)"),
    "not executable": (_not_executable, "not executable"),
    "directory without bin/python": (_dir_without_python, "a directory without bin/python"),
}


@pytest.mark.parametrize("command", [("env",), ("doctor", "--no-device-probe"), ("probe",),
                                     ("install", "--offline"), ("install", "--offline", "--dry-run")])
@pytest.mark.parametrize("kind", list(BAD_PYTHONS))
def test_what_is_not_a_python_3_is_bad_input_naming_the_path(cli, tmp_path, command, kind):
    make, says = BAD_PYTHONS[kind]
    python = str(make(tmp_path))
    r = cli(*command, "--python", python)
    assert r.code == 2, (r.out, r.err)
    first = r.err.splitlines()[0]
    assert first.startswith(f"neuronctl: error: --python {python}: ") and says in first, r.err
    assert "Traceback" not in r.err and "internal error" not in r.err
    assert r.out == ""


FORGED = {"python": "9.9.9", "implementation": "cpython", "executable": "/forged", "prefix": "/",
          "base_prefix": "/", "platform": "linux", "machine": "x86_64", "system": "Linux",
          "libc": ["glibc", "2.99"], "markers": {}, "reader": "dist-info scan",
          "distributions": [{"name": "torch-neuronx", "version": "9.9"}]}


def _venv_with_pth(tmp_path, code):
    """A venv whose site-packages runs `code` at every interpreter start (a .pth import line)."""
    py = make_venv(tmp_path / "venv")
    (site_packages(tmp_path / "venv") / "zz_hostile.pth").write_text(code + "\n")
    return py


def test_what_the_environment_prints_on_stdout_is_not_the_inspection(tmp_path):
    line = json.dumps(json.dumps(FORGED))
    py = _venv_with_pth(tmp_path, f"import atexit, sys; print({line}); "
                                  f"atexit.register(lambda: print({line}))")
    env = inspect_python(str(py))
    assert env.python == ".".join(map(str, sys.version_info[:3]))
    assert env.executable == str(py) and env.get("torch-neuronx") is None


@pytest.mark.timeout(90)
def test_a_detached_child_holding_stdout_cannot_stretch_the_inspection(tmp_path):
    marker = tmp_path / "holder.pid"
    py = _venv_with_pth(tmp_path, (
        "import os, time; pid = os.fork() if not os.environ.get('H5_HELD') else 1; "
        "os.environ['H5_HELD'] = '1'; "
        f"(os.setsid(), open({str(marker)!r}, 'w').write(str(os.getpid())), time.sleep(600), "
        "os._exit(0)) if pid == 0 else None"))
    start = time.monotonic()
    try:
        env = Inspection(str(py), timeout=30).result()
        elapsed = time.monotonic() - start
    finally:
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if marker.exists():
            os.kill(int(marker.read_text()), signal.SIGKILL)
    assert env.python == ".".join(map(str, sys.version_info[:3]))
    assert elapsed < 10


GOOD = {"python": "3.12.1", "implementation": "cpython", "executable": "/v/bin/python",
        "prefix": "/v", "base_prefix": "/usr", "platform": "linux-x86_64", "machine": "x86_64",
        "system": "Linux", "libc": ["glibc", "2.36"], "markers": {"python_version": "3.12"},
        "tags": ["cp312-cp312-manylinux_2_36_x86_64"], "reader": "dist-info scan",
        "site_dirs": ["/v/lib/python3.12/site-packages", "/v/lib/python3.12/site-packages"],
        "bundled_pip": "/usr/lib/python3.12/ensurepip/_bundled/pip-24.0-py3-none-any.whl",
        "distributions": [{"name": "Torch", "version": "2.14.0+cpu", "requires": ["filelock"],
                           "summary": "Tensors\x1b[2J", "installer": "uv", "xla_impl": False,
                           "wrong_package": False}]}


def test_a_well_formed_inspection_parses():
    env = parse_inspection(GOOD)
    assert env.get("torch").version == "2.14.0+cpu" and env.get("torch").requires == ("filelock",)
    assert env.get("torch").summary == "Tensors [2J"  # free text: control characters dropped
    assert env.bundled_pip.endswith("pip-24.0-py3-none-any.whl") and env.in_venv
    assert env.site_dirs == ("/v/lib/python3.12/site-packages",) * 2


def _with(path, value):
    data = json.loads(json.dumps(GOOD))
    *keys, last = path
    target = data
    for key in keys:
        target = target[key]
    target[last] = value
    return data


@pytest.mark.parametrize(("path", "value", "reason"), [
    (("python",), 5, "python: not a string"),
    (("python",), "three", "python: not a version"),
    (("executable",), "/v/bin/python\x1b]0;x\x07", "executable: control characters"),
    (("prefix",), "x" * 5000, "prefix: not a string of at most 4096"),
    (("libc",), "glibc", "libc: not a list"),
    (("tags",), [1, 2], "tags: not a string"),
    (("markers",), ["python_version"], "markers: not a JSON object"),
    (("markers", "python_version"), 3.12, "python_version: not a string"),
    (("distributions",), {"torch": "2.14"}, "distributions: not a list"),
    (("distributions", 0), "torch", "distribution: not a JSON object"),
    (("distributions", 0, "name"), None, "name: not a string"),
    (("distributions", 0, "version"), 2, "version: not a string"),
    (("distributions", 0, "requires"), "filelock", "requires: not a list"),
    (("distributions", 0, "xla_impl"), "yes", "xla_impl: not true or false"),
    (("bundled_pip",), "/etc/passwd", "bundled_pip: not the path of a pip wheel"),
    (("bundled_pip",), "pip-24.0-py3-none-any.whl", "bundled_pip: not the path of a pip wheel"),
    (("site_dirs",), ["lib/site-packages"], "site_dirs: not at most two absolute paths"),
    (("site_dirs",), ["/a", "/b", "/c"], "site_dirs: not at most two absolute paths"),
    (("site_dirs",), "/v/lib", "site_dirs: not a list"),
])
def test_a_malformed_inspection_is_refused_field_by_field(path, value, reason):
    with pytest.raises(MalformedInspection, match=reason.replace("(", r"\(")):
        parse_inspection(_with(path, value))
    with pytest.raises(MalformedInspection, match="inspection: not a JSON object"):
        parse_inspection([GOOD])


def test_a_program_that_never_answers_is_bad_input_for_install_within_the_timeout(cli, tmp_path):
    """Install asks the target nothing before its inspection: one that never says hello within
    --timeout is not a Python (exit 2, as the separate check said), and its process is gone."""
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nexec sleep 987.654\n")
    script.chmod(0o755)
    start = time.monotonic()
    r = cli("install", "--offline", "--python", str(script), "--timeout", "2")
    assert r.code == 2, (r.out, r.err)
    assert f"--python {script}: not a Python 3 interpreter (no answer in 2s)" in r.err
    assert time.monotonic() - start < 10
    left = subprocess.run(["pgrep", "-f", "sleep 987.654"], check=False, capture_output=True,
                          text=True).stdout
    assert not left.strip()


def test_a_policy_overridden_python_is_asked_for_its_own_tags(tmp_path):
    """Tags are derived only where neuronctl's derivation is exact: a distro _manylinux policy
    module on the path makes the target answer for itself (with its pip's packaging)."""
    venv = make_venv(tmp_path / "venv", with_pip=True)
    assert Inspection(str(venv), tags="unless-derivable").result().tags == ()
    (site_packages(tmp_path / "venv") / "_manylinux.py").write_text("manylinux1_compatible = False\n")
    asked = Inspection(str(venv), tags="unless-derivable").result()
    assert asked.tags and asked.tags[0].startswith("cp3")
