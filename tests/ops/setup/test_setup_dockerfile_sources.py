"""`setup --dockerfile` (issue 31): the image installs neuronctl from a wheel of this neuronctl's
own files, copied in and checked by sha256 in the Dockerfile, or from a requirement the user
names, never by a bare index name (item 2); the base image obeys the release rules as `setup
--os` does, and the lock it copies must exist (item 10); a rule's range is a specifier set, written
in its normal form (item 7)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.dockerfile import parse, run_lines
from support.hooks_wheelhouse import checkout_copy

from neuronctl._version import __version__
from neuronctl.errors import InputError
from neuronctl.ops.setup.dockerfile import ToolSource, base_target, render_dockerfile
from neuronctl.ops.setup.repos import KEY_FINGERPRINT
from neuronctl.release.manifest import load_bundled_manifest, parse_manifest

WHEEL = f"neuronctl-{__version__}-py3-none-any.whl"
RULE_2404 = "os.torchneuron-wheels-ubuntu-26.04"


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    """A lock in the build context (the working directory): the Dockerfile copies it."""
    path = Path.cwd() / "pylock.toml"
    path.write_text('lock-version = "1.0"\ncreated-by = "test"\n')
    return path


def dockerfile(cli, *args: str) -> tuple[int, str, str]:
    out = Path.cwd() / "Dockerfile"
    r = cli("setup", "--dockerfile", *args, "-o", str(out))
    return r.code, out.read_text() if out.exists() else "", r.err


# ----------------------------------------------------------------- item 2: neuronctl's own wheel

def test_the_default_builds_this_neuronctls_wheel_and_checks_it_by_sha256(cli, lock) -> None:
    code, text, err = dockerfile(cli)
    assert code == 0, err
    wheel = Path.cwd() / "dist" / WHEEL
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert f"wrote dist/{WHEEL}" in err and digest in err
    parsed = parse(text)
    assert ("COPY", f"dist/{WHEEL} /opt/neuronctl/{WHEEL}") in parsed
    runs = run_lines(parsed)
    check = f"printf '%s  %s\\n' {digest} /opt/neuronctl/{WHEEL} | sha256sum -c -"
    assert check in runs
    assert runs.index(check) < runs.index(f"pip install --no-cache-dir /opt/neuronctl/{WHEEL}")
    # never a name from an index: no spec, no ARG to swap one in
    assert "NEURONCTL_SPEC" not in text and not re.search(r"pip install[^\n]*neuronctl[=<>]", text)
    assert not [rest for word, rest in parsed if word == "ARG" and "NEURONCTL" in rest]


def test_the_sha256_line_fails_a_swapped_wheel(cli, lock, tmp_path: Path) -> None:
    """The check as the image runs it (sh, sha256sum), on the real wheel and on a changed one."""
    assert dockerfile(cli)[0] == 0
    text = (Path.cwd() / "Dockerfile").read_text()
    line = next(part for part in run_lines(parse(text)).split(" && ") if "sha256sum -c" in part)
    wheel = Path.cwd() / "dist" / WHEEL
    ok = subprocess.run(["sh", "-c", line.replace("/opt/neuronctl/", f"{wheel.parent}/")],
                        capture_output=True, check=False)
    assert ok.returncode == 0, ok.stderr
    swapped = tmp_path / WHEEL
    swapped.write_bytes(wheel.read_bytes() + b"\0")
    bad = subprocess.run(["sh", "-c", line.replace("/opt/neuronctl/", f"{tmp_path}/")],
                         capture_output=True, check=False)
    assert bad.returncode != 0


def test_the_wheel_holds_what_setuptools_would_build(cli, lock, tmp_path: Path) -> None:
    """From the editable checkout: the same files as the project's own backend builds."""
    assert dockerfile(cli)[0] == 0
    ours = zipfile.ZipFile(Path.cwd() / "dist" / WHEEL)
    src = checkout_copy(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path / "ref"), str(src)], check=True, capture_output=True)
    ref = zipfile.ZipFile(next((tmp_path / "ref").glob("*.whl")))

    def package_files(z: zipfile.ZipFile) -> dict[str, bytes]:
        return {n: z.read(n) for n in z.namelist() if ".dist-info/" not in n}

    assert package_files(ours) == package_files(ref)
    info = f"neuronctl-{__version__}.dist-info"
    assert ours.read(f"{info}/entry_points.txt") == ref.read(f"{info}/entry_points.txt")
    assert ours.testzip() is None


def test_from_an_installed_wheel_the_same_files_give_the_same_wheel(cli, lock, tmp_path) -> None:
    """neuronctl installed from a wheel (RECORD, no checkout) packs its installed files, each
    checked against the RECORD: the same bytes as from the checkout. A changed file is refused."""
    assert dockerfile(cli)[0] == 0
    built = Path.cwd() / "dist" / WHEEL
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q",
                    "--target", str(site), str(built)], check=True, capture_output=True)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import json, pathlib, neuronctl\n"
            "from neuronctl.ops.setup.wheel import build_self_wheel\n"
            "from neuronctl.errors import InputError\n"
            "try:\n    w = build_self_wheel(pathlib.Path(sys.argv[2]))\n"
            "    print(json.dumps([neuronctl.__file__, w.sha256, w.source]))\n"
            "except InputError as e:\n    print(json.dumps(['refused', str(e)]))\n")
    run = [sys.executable, "-c", code, str(site), str(tmp_path / "again")]
    where, sha, source = json.loads(subprocess.run(run, capture_output=True, text=True,
                                                   check=True).stdout)
    assert where.startswith(str(site)) and "installed files" in source
    assert sha == hashlib.sha256(built.read_bytes()).hexdigest()
    with (site / "neuronctl" / "cli" / "main.py").open("a") as fh:
        fh.write("\nimport os  # planted after the install\n")
    refused = json.loads(subprocess.run(run, capture_output=True, text=True, check=True).stdout)
    assert refused[0] == "refused" and "neuronctl/cli/main.py" in refused[1]


def test_a_given_wheel_is_copied_with_its_sha256(cli, lock) -> None:
    wheels = Path.cwd() / "wheels"
    wheels.mkdir()
    (wheels / WHEEL).write_bytes(b"PK not really a wheel, but its bytes are what is checked")
    digest = hashlib.sha256((wheels / WHEEL).read_bytes()).hexdigest()
    code, text, err = dockerfile(cli, "--neuronctl-wheel", f"wheels/{WHEEL}")
    assert code == 0, err
    assert f"COPY wheels/{WHEEL} /opt/neuronctl/{WHEEL}" in text and digest in text
    assert not (Path.cwd() / "dist").exists()  # nothing built when one is given


def test_a_given_spec_is_installed_as_given(cli, lock) -> None:
    code, text, err = dockerfile(cli, "--neuronctl-spec", "neuronctl==0.1.0")
    assert code == 0, err
    assert re.search(r"pip install --no-cache-dir neuronctl==0\.1\.0\s+&&", run_lines(parse(text)))
    url = f"neuronctl @ https://wheels.example/{WHEEL}#sha256={'a' * 64}"
    code, text, err = dockerfile(cli, "--neuronctl-spec", url)
    assert code == 0, err
    assert f"pip install --no-cache-dir '{url}' " in run_lines(parse(text))
    assert "COPY dist/" not in text and not (Path.cwd() / "dist").exists()


@pytest.mark.parametrize("args", [
    ["--neuronctl-wheel", f"../{WHEEL}"], ["--neuronctl-wheel", f"/tmp/{WHEEL}"],
    ["--neuronctl-wheel", "evil-0.1.0-py3-none-any.whl"], ["--neuronctl-wheel", "neuronctl.zip"],
    ["--neuronctl-wheel", f"missing/{WHEEL}"],
    ["--neuronctl-wheel", WHEEL, "--neuronctl-spec", "neuronctl==0.1.0"],
    ["--neuronctl-spec", "requests==2.0"], ["--neuronctl-spec", "neuronctl==1\nRUN curl x | sh"],
    ["--neuronctl-spec", "neuronctl @ https://h.example/$(id).whl"],
    ["--neuronctl-spec", "neuronctl===1'x"]])
def test_bad_sources_are_refused_and_nothing_is_written(cli, lock, args) -> None:
    (Path.cwd() / WHEEL).write_bytes(b"x")
    code, text, err = dockerfile(cli, *args)
    assert code == 2 and text == "" and "Traceback" not in err, err
    assert not (Path.cwd() / "dist").exists()


def test_the_source_flags_are_only_for_dockerfile(cli) -> None:
    assert cli("setup", "--os", "ubuntu-26.04", "--neuronctl-spec", "neuronctl==1").code == 2


# ------------------------------------------------------------- item 10: OS rules and the lock

def test_a_base_the_rules_forbid_is_refused_as_setup_os_refuses_it(cli, lock) -> None:
    host = cli("setup", "--os", "ubuntu-24.04", "--with-python")
    assert host.code == 2 and RULE_2404 in host.err
    code, text, err = dockerfile(cli, "--base", "ubuntu:24.04")
    assert code == 2 and RULE_2404 in err and text == ""
    assert not (Path.cwd() / "dist").exists()
    code, text, err = dockerfile(cli, "--base", "ubuntu:24.04", "--allow-unsupported")
    assert code == 0 and "FROM ubuntu:24.04" in text
    assert "allowed (--allow-unsupported)" in err and RULE_2404 in err


def test_a_base_of_unknown_os_needs_allow_unsupported(cli, lock) -> None:
    assert dockerfile(cli, "--base", "python:3.12-slim")[0] == 2
    code, _, err = dockerfile(cli, "--base", "python:3.12-slim", "--allow-unsupported")
    assert code == 0 and "an OS the rules do not know" in err


@pytest.mark.parametrize(("image", "target"), [
    ("ubuntu:26.04", "ubuntu-26.04"), ("ubuntu:resolute", "ubuntu-26.04"),
    ("docker.io/library/ubuntu:24.04", "ubuntu-24.04"), ("ubuntu:22.04@sha256:" + "a" * 64, "ubuntu-22.04"),
    ("amazonlinux:2023", "al2023"), ("public.ecr.aws/amazonlinux/amazonlinux:2023.6", "al2023"),
    ("ubuntu", None), ("ubuntu:latest", None), ("ubuntu:24.040", None), ("myubuntu:24.04", None),
    ("registry:5000/ubuntu", None), ("amazonlinux:2", None)])
def test_the_base_images_os_by_its_tag(image: str, target: str | None) -> None:
    found = base_target(image)
    assert (found.id if found else None) == target


def test_no_lock_is_said_before_anything_is_written(cli) -> None:
    code, text, err = dockerfile(cli)
    assert code == 2 and text == "" and "--lock pylock.toml: no such file" in err
    assert "neuronctl lock" in err and not (Path.cwd() / "dist").exists()


# ------------------------------------------------------------ item 7: rule ranges are specifiers

HOSTILE_RANGE = '>=2.16\n,===a"\n,<99'


def _manifest_with_driver_need(need: str) -> dict:
    data = load_bundled_manifest().to_json()
    rule = next(r for r in data["rules"] if r.get("need", {}).get("driver")
                and r["kind"] == "runtime")
    rule["need"]["driver"] = need
    return data


def test_a_rule_range_that_is_not_a_specifier_set_is_refused_at_load(cli, tmp_path) -> None:
    data = _manifest_with_driver_need(HOSTILE_RANGE)
    # Its newlines are refused as data text (one printable line); without them, as a range.
    with pytest.raises(InputError, match=r"m\.json: rules\[\d+\]\.need\.driver: .*one line of printable"):
        parse_manifest(data, "m.json")
    with pytest.raises(InputError, match=r"m\.json: rules\[\d+\]\.need\.driver: .*not a version range"):
        parse_manifest(_manifest_with_driver_need(HOSTILE_RANGE.replace("\n", "")), "m.json")
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    r = cli("--manifest", str(path), "releases")
    assert r.code == 2 and "need.driver" in r.err and str(path) in r.err and "Traceback" not in r.err


@pytest.mark.parametrize(("given", "normal"), [
    (" >= 2.31 , < 3 ", ">=2.31,<3"), (">=2.31", ">=2.31"), ("==2.29.*", "==2.29.*")])
def test_ranges_are_kept_and_written_in_their_normal_form(given: str, normal: str) -> None:
    data = load_bundled_manifest().to_json()
    for rule in data["rules"]:
        if rule["kind"] == "runtime" and rule.get("need", {}).get("driver") \
                and set(rule.get("when", {})) == {"runtime"}:
            rule["need"]["driver"] = given
    release = parse_manifest(data, "m.json").get("2.33.1")
    text = render_dockerfile(release, base="ubuntu:26.04", lock="pylock.toml", repo=None,
                             fingerprint=KEY_FINGERPRINT,
                             tool=ToolSource(wheel=f"dist/{WHEEL}", sha256="0" * 64))
    assert f'com.neuronctl.driver-range="{normal}"' in text
    assert f'NEURONCTL_IMAGE_DRIVER_RANGE="{normal}"' in text


def test_a_dist_that_is_a_link_out_of_the_build_context_is_refused(cli, lock, tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (Path.cwd() / "dist").symlink_to(elsewhere)
    code, text, err = dockerfile(cli)
    assert code == 2 and "a link or not a folder" in err and text == ""
    assert list(elsewhere.iterdir()) == []
