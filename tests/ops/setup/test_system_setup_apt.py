"""The setup plan's apt commands, run for real: a signed loopback apt repository of fake
aws-neuronx-* .debs (versions from the bundled data), an isolated apt configuration over a bare
host fixture, `apt-get -s` resolving every pin (tests/support/apt_repo.py), the resolved packages put into
the fixture with dpkg --root. The generated sh script runs twice (the second run skips every
step), a wrong pin fails at its step, a key with another fingerprint is never trusted, and --yes's
operation stops at the first failure and continues on the re-run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from support.apt_repo import (
    FAKE_APT_GET,
    FAKE_MODPROBE,
    AptRepo,
    FakeDeb,
    apt_sandbox,
    build_repo,
    gpg_key,
    serve,
    short_home,
    write_tool,
)
from support.setup_sysroots import KERNEL, build_setup_host, plan_for

from neuronctl.ops.reporter import CollectingReporter
from neuronctl.ops.setup.apply import apply_plan
from neuronctl.ops.setup.facts import read_target
from neuronctl.ops.setup.model import SetupPlan, SetupRequest
from neuronctl.ops.setup.plan import make_plan
from neuronctl.ops.setup.script import render_sh
from neuronctl.release.manifest import load_bundled_manifest
from neuronctl.release.model import Release

RELEASE = "2.33.1"
# Debian revisions as the real packages carry them (runtime-lib and collectives have one).
REVISION = {"aws-neuronx-runtime-lib": "-8a6ab9e3b", "aws-neuronx-collectives": "-3e70920f2"}
NEURON_LS = """#!/bin/sh
cat <<'JSON'
[{"neuron_device": 0, "bdf": "cc:00.0", "nc_count": 4, "logical_neuroncore_config": 2,
  "memory_size": 103079215104, "neuroncore_ids": [0, 1, 2, 3], "neuron_processes": []}]
JSON
"""


def release(version: str = RELEASE) -> Release:
    return load_bundled_manifest().get(version)


def fake_debs() -> list[FakeDeb]:
    debs = [FakeDeb(f"linux-headers-{KERNEL}", "6.8.0-1015.16",
                    {f"usr/src/linux-headers-{KERNEL}/Makefile": "# fake headers\n"}),
            FakeDeb("aws-neuronx-oci-hook", "2.19.74.0"),
            FakeDeb("aws-neuron-dkms", "1.5.0.0")]  # the first generation, for a mixed host
    for version in ("2.33.0", RELEASE):  # two releases: the pin decides which one
        for name, v in release(version).system.items():
            files = {}
            if name == "aws-neuronx-runtime-lib":
                files["opt/aws/neuron/lib/libnrt.so.1"] = "fake libnrt\n"
            if name == "aws-neuronx-dkms":  # what its DKMS build leaves for the running kernel
                files[f"lib/modules/{KERNEL}/updates/dkms/neuron.ko"] = f"fake neuron {v}\n"
            if name == "aws-neuronx-tools":
                files["opt/aws/neuron/bin/neuron-ls"] = NEURON_LS
            deb = FakeDeb(name, v + REVISION.get(name, ""), files)
            if deb not in debs:
                debs.append(deb)
    return debs


@pytest.fixture(scope="module")
def apt_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AptRepo, str]]:
    work = tmp_path_factory.mktemp("neuron-apt")
    built = build_repo(work, "resolute", fake_debs())
    with serve(built.root) as url:
        yield built, url


def bare_host(tmp_path: Path) -> Path:
    root = build_setup_host(tmp_path / "root", "ubuntu-26.04", headers=False)
    for i in range(2):  # the hardware is there before the software (sysfs of the fixture)
        base = root / f"sys/class/neuron_device/neuron{i}"
        (base / "info/architecture").mkdir(parents=True)
        (base / "core_count").write_text("8\n")
        (base / "info/architecture/device_name").write_text("Trainium2\n")
        (base / "info/architecture/arch_type").write_text("NDv3\n")
        (base / "info/architecture/instance_type").write_text("Trn2\n")
    return root


def apt_env(tmp_path: Path, root: Path, repo: AptRepo, url: str, *,
            fingerprint: str | None = None, neuronctl: str = "/bin/true") -> dict[str, str]:
    sandbox = apt_sandbox(root, tmp_path / "apt")
    tools = tmp_path / "tools"
    gnupg = tmp_path / "gnupg-user"
    gnupg.mkdir(mode=0o700, exist_ok=True)
    return sandbox.env({
        "NEURONCTL_SETUP_ROOT": str(root), "NEURONCTL_SETUP_NEURON_REPO": url,
        "NEURONCTL_SETUP_NEURON_KEY_FPR": fingerprint or repo.fingerprint,
        "NEURONCTL_SETUP_APT_GET": str(write_tool(tools / "apt-get", FAKE_APT_GET)),
        "NEURONCTL_SETUP_MODPROBE": str(write_tool(tools / "modprobe", FAKE_MODPROBE)),
        "NEURONCTL_SETUP_NEURONCTL": neuronctl,
        # What a user's shell may hold: none of it changes the plan.
        "KERNEL": "0.0-wrong", "VENV": "/wrong", "KEYRING": "/wrong", "SETUP_ROOT": "/wrong",
        "FAKE_APT_LOG": str(tmp_path / "apt.log"),
        "FAKE_APT_POOL": str(repo.root / "pool" / "main"), "GNUPGHOME": str(short_home(gnupg))})


def run_script(plan: SetupPlan, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "setup.sh"
    script.write_text(render_sh(plan))
    return subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def dpkg_version(root: Path, name: str) -> str:
    out = subprocess.run(["dpkg-query", f"--root={root}", "-W", "-f=${Version} ${db:Status-Want}",
                          name], capture_output=True, text=True, check=False)
    return out.stdout if out.returncode == 0 else ""


def test_the_script_sets_up_a_bare_host_and_a_second_run_skips_every_step(tmp_path, apt_server):
    built, url = apt_server
    root = bare_host(tmp_path)
    env = apt_env(tmp_path, root, built, url)
    first = run_script(plan_for(root), env, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    for name, version in release().system.items():
        assert dpkg_version(root, name) == f"{version}{REVISION.get(name, '')} hold", name
    assert dpkg_version(root, f"linux-headers-{KERNEL}").startswith("6.8.0-1015.16")
    assert (root / "sys/module/neuron/version").read_text().strip() == "2.31.8.0"
    line = (root / "etc/apt/sources.list.d/neuron.list").read_text()
    assert line == f"deb [signed-by={root}/etc/apt/keyrings/neuron.gpg] {url} resolute main\n"
    # The second run: a fresh plan of the host as it is now, and the same script as before.
    log_before = (tmp_path / "apt.log").read_text()
    again = plan_for(root)
    assert [s.id for s in again.steps if s.satisfied is False] == []
    second = run_script(plan_for(bare_host(tmp_path / "unused")), env, tmp_path)
    assert second.returncode == 0, second.stderr
    skipped = [line for line in second.stdout.splitlines() if "done already, skipped" in line]
    assert len(skipped) == len(again.steps) - 1  # every step but the doctor, which always runs
    assert (tmp_path / "apt.log").read_text() == log_before  # nothing installed again


def test_a_wrong_pin_fails_at_its_step(tmp_path, apt_server):
    built, url = apt_server
    root = bare_host(tmp_path)
    rel = release()
    wrong = msgspec.structs.replace(rel, system={**rel.system, "aws-neuronx-runtime-lib": "2.35.34.0"})
    result = run_script(plan_for(root, release=wrong), apt_env(tmp_path, root, built, url), tmp_path)
    assert result.returncode != 0
    assert "Version '2.35.34.0*' for 'aws-neuronx-runtime-lib' was not found" in result.stderr
    assert "[4/7] packages: Install" in result.stdout and "[5/7]" not in result.stdout
    assert dpkg_version(root, "aws-neuronx-dkms") == ""  # one transaction: nothing of it went in


def test_every_pin_of_every_published_release_is_what_the_plan_asks_apt_for():
    for rel in load_bundled_manifest().releases:
        if not rel.system:
            continue
        target, facts = read_target(None, "ubuntu-22.04")
        plan = make_plan(SetupRequest(rel, target, facts, allow_unsupported=True))
        install = next(s for s in plan.steps if s.id == "packages").commands[-1]
        for name, version in rel.system.items():
            assert f"'{name}={version}*'" in install


def test_a_key_with_another_fingerprint_is_never_trusted(tmp_path, apt_server):
    built, url = apt_server
    root = bare_host(tmp_path)
    other = gpg_key(tmp_path / "other-gnupg", "Someone Else <else@example.invalid>")
    result = run_script(plan_for(root), apt_env(tmp_path, root, built, url, fingerprint=other),
                        tmp_path)
    assert result.returncode != 0
    assert f"not {other}: it is not trusted" in result.stderr
    assert not (root / "etc/apt/keyrings/neuron.gpg").exists()
    assert not (root / "etc/apt/keyrings/neuron.gpg.download").exists()
    assert dpkg_version(root, "aws-neuronx-dkms") == ""


def test_apt_refuses_the_repository_signed_by_another_key(tmp_path, apt_server):
    built, url = apt_server
    impostor = build_repo(tmp_path / "impostor", "resolute", fake_debs()[:2],
                          gnupg=tmp_path / "impostor-gnupg")
    root = bare_host(tmp_path)
    env = apt_env(tmp_path, root, built, url)
    assert run_script(plan_for(root), env, tmp_path).returncode == 0
    # The same host, its trusted key unchanged, pointed at a repository another key signs.
    with serve(impostor.root) as other_url:
        list_file = root / "etc/apt/sources.list.d/neuron.list"
        list_file.write_text(list_file.read_text().replace(url, other_url))
        update = subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True,
                                timeout=120, check=False)
    assert "NO_PUBKEY" in update.stdout + update.stderr or "not signed" in update.stderr


def test_yes_stops_at_the_first_failure_and_the_rerun_continues(tmp_path, apt_server):
    built, url = apt_server
    root = bare_host(tmp_path)
    env = apt_env(tmp_path, root, built, url)
    rel = release()
    wrong = msgspec.structs.replace(rel, system={**rel.system, "aws-neuronx-tools": "9.9.9.9"})
    reporter = CollectingReporter()
    failed = apply_plan(plan_for(root, release=wrong), reporter, is_root=True, environ=env)
    assert failed.failed == "packages"
    assert failed.done == ("repo-key", "repo", "kernel-headers")
    assert failed.not_done == ("hold", "driver-reload", "doctor")
    assert "9.9.9.9" in failed.output and "run `neuronctl setup --yes` again" in (failed.resume or "")
    assert any("[4/7] packages" in m for m in reporter.messages("step"))
    done = apply_plan(plan_for(root), CollectingReporter(), is_root=True, environ=env)
    assert done.ok, done.output
    assert done.skipped == ("repo-key", "repo", "kernel-headers")
    assert done.done == ("packages", "hold", "driver-reload", "doctor")


def test_bare_host_to_a_passing_level_1_doctor(tmp_path, apt_server):
    """The time from a fixture bare host to `neuronctl doctor --level 1` passing on it: plan,
    apply (the apt steps simulated as above), doctor on the result."""
    built, url = apt_server
    root = bare_host(tmp_path)
    doctor = tmp_path / "tools" / "neuronctl"
    write_tool(doctor, f'#!/bin/sh\nexec {sys.executable} -m neuronctl "$@" --json '
                       f'--sysroot {root} > {tmp_path}/doctor.json\n')
    env = apt_env(tmp_path, root, built, url, neuronctl=str(doctor))
    started = time.monotonic()
    outcome = apply_plan(plan_for(root), CollectingReporter(), is_root=True, environ=env)
    elapsed = time.monotonic() - started
    report = json.loads((tmp_path / "doctor.json").read_text())
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    print(f"bare host -> doctor --level 1: {elapsed:.1f}s, {report['summary']}")
    assert outcome.ok, outcome.output
    for check in ("hardware.driver", "runtime.compat", "packages.system", "host.os",
                  "device.holders"):
        assert statuses.get(check) == "pass", (check, statuses)
    assert elapsed < 120


def test_a_held_older_release_beside_the_first_generation_is_replaced(tmp_path, apt_server):
    """The host users come with: 2.33.0's packages held, an aws-neuron-dkms beside them."""
    built, url = apt_server
    root = bare_host(tmp_path)
    pool = built.root / "pool" / "main"
    old = release("2.33.0").system
    debs = [pool / f"{n}_{v}{REVISION.get(n, '')}_all.deb" for n, v in old.items()]
    debs.append(pool / "aws-neuron-dkms_1.5.0.0_all.deb")
    subprocess.run(["dpkg", f"--root={root}", "--force-not-root", "--force-bad-path", "-i",
                    *map(str, debs)], check=True, capture_output=True)
    subprocess.run(["dpkg", f"--root={root}", "--set-selections"], check=True,
                   input="".join(f"{n} hold\n" for n in old), text=True, capture_output=True)
    plan = plan_for(root)
    assert "aws-neuron-dkms" in next(s for s in plan.steps if s.id == "other-generation").why
    result = run_script(plan, apt_env(tmp_path, root, built, url), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for name, version in release().system.items():
        assert dpkg_version(root, name) == f"{version}{REVISION.get(name, '')} hold", name
    assert dpkg_version(root, "aws-neuron-dkms") == ""
    assert "Inst aws-neuronx-dkms [2.31.7.0] (2.31.8.0" in (tmp_path / "apt.log").read_text()
