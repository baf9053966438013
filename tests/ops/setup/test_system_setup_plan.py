"""neuronctl setup's planner and CLI against sysroot fixtures: each OS, a kernel without headers,
mixed generations, a held device, a container host; the rule refusals (exit 2 before anything
runs) and --allow-unsupported; the outputs (text, sh through sh -n and shellcheck, the JSON
envelope, -o written whole)."""

from __future__ import annotations

import json
import subprocess

import pytest
from support.setup_sysroots import (
    KERNEL,
    MIXED_GENERATIONS,
    SETUP_RELEASE,
    build_setup_host,
    hold_device,
    plan_for,
)
from support.shellcheck import needs_shellcheck, shellcheck

from neuronctl.errors import InputError
from neuronctl.ops.reporter import CollectingReporter
from neuronctl.ops.setup.apply import apply_plan
from neuronctl.ops.setup.model import SetupPlan
from neuronctl.ops.setup.script import render_sh
from neuronctl.release.manifest import load_bundled_manifest


def step(plan: SetupPlan, step_id: str):
    return next(s for s in plan.steps if s.id == step_id)


EACH_OS = pytest.mark.parametrize(("os_id", "family", "suite"), [
    ("ubuntu-22.04", "apt", "jammy"), ("ubuntu-24.04", "apt", "noble"),
    ("ubuntu-26.04", "apt", "resolute"), ("al2023", "dnf", None)])


@EACH_OS
def test_each_os_plans_its_family_and_the_script_is_clean(tmp_path, os_id, family, suite):
    root = build_setup_host(tmp_path / "root", os_id)
    plan = plan_for(root)
    assert plan.target.id == os_id and plan.target.family == family
    if suite:
        assert plan.variables["NEURON_SUITE"] == suite
    assert plan.packages == {p: v for p, v in load_bundled_manifest().get(SETUP_RELEASE).system.items()}
    script = tmp_path / "setup.sh"
    script.write_text(render_sh(plan))
    assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0
    assert [s.id for s in plan.steps][:2] == ["repo-key", "repo"]
    assert plan.steps[-1].id == "doctor"


@needs_shellcheck
@EACH_OS
def test_each_os_script_passes_shellcheck(tmp_path, os_id, family, suite):
    script = tmp_path / "setup.sh"
    script.write_text(render_sh(plan_for(build_setup_host(tmp_path / "h", os_id))))
    lint = shellcheck(script, "sh")
    assert lint.returncode == 0, lint.stdout


def test_a_kernel_without_headers_is_a_step_to_do(tmp_path):
    with_headers = plan_for(build_setup_host(tmp_path / "a"))
    without = plan_for(build_setup_host(tmp_path / "b", headers=False))
    assert step(with_headers, "kernel-headers").satisfied is True
    assert step(without, "kernel-headers").satisfied is False
    assert KERNEL in step(without, "kernel-headers").title
    assert without.variables["KERNEL"] == KERNEL


def test_mixed_generations_are_removed_and_other_versions_replaced(tmp_path):
    plan = plan_for(build_setup_host(tmp_path / "r", packages=MIXED_GENERATIONS))
    other = step(plan, "other-generation")
    assert other.satisfied is False
    assert other.commands == ("remove_installed aws-neuron-dkms aws-neuron-tools",)
    assert "replaces aws-neuronx-dkms 2.30.2.0" in step(plan, "packages").why
    clean = plan_for(build_setup_host(tmp_path / "c"))
    assert "other-generation" not in [s.id for s in clean.steps]


def test_a_host_already_set_up_has_its_steps_satisfied(tmp_path):
    system = load_bundled_manifest().get(SETUP_RELEASE).system
    root = build_setup_host(tmp_path / "r", packages={k: f"{v}-1" for k, v in system.items()},
                            held=tuple(system), loaded_driver=system["aws-neuronx-dkms"])
    plan = plan_for(root)
    for step_id in ("kernel-headers", "packages", "hold", "driver-reload"):
        assert step(plan, step_id).satisfied is True, step_id


def test_a_held_device_blocks_the_reload_and_apply_refuses_before_anything(tmp_path):
    root = hold_device(build_setup_host(tmp_path / "r", loaded_driver="2.30.2.0"))
    plan = plan_for(root)
    reload = step(plan, "driver-reload")
    assert reload.blocked and "pid 4242" in reload.blocked and "neuron0" in reload.blocked
    ran: list[str] = []

    def shell(script: str, env: object, timeout: float) -> object:
        ran.append(script)
        raise AssertionError("nothing may run")

    with pytest.raises(InputError, match="pid 4242"):
        apply_plan(plan, CollectingReporter(), is_root=True, shell=shell)  # type: ignore[arg-type]
    assert ran == []


def test_apply_says_root_is_needed_up_front(tmp_path):
    plan = plan_for(build_setup_host(tmp_path / "r"))
    with pytest.raises(InputError, match="run it as root"):
        apply_plan(plan, CollectingReporter(), is_root=False)


def test_a_container_host_gets_the_oci_hook(tmp_path):
    plan = plan_for(build_setup_host(tmp_path / "r", container_host=True))
    assert "aws-neuronx-oci-hook" in plan.packages
    assert "aws-neuronx-oci-hook" not in plan_for(build_setup_host(tmp_path / "s")).packages


def test_no_neuron_device_means_no_reload(tmp_path):
    plan = plan_for(build_setup_host(tmp_path / "r", chip=None))
    assert "driver-reload" not in [s.id for s in plan.steps]


@pytest.mark.parametrize("args", [
    ["--os", "ubuntu-24.04", "--with-python"],
    ["--os", "ubuntu-22.04", "--with-python"],
    ["--os", "ubuntu-26.04", "--chip", "inf1"],
    ["--release", "2.34.0", "--os", "ubuntu-26.04"],
    ["--os", "ubuntu-26.04", "--repo", "https://mirror.example/x\";rm -rf /;\""],
    ["--os", "ubuntu-26.04", "--key-fingerprint", "ABCD"],
    ["--os", "ubuntu-26.04", "--with-python", "--venv", "/opt/v'$(id)'"],
    ["--os", "ubuntu-26.04", "--with-python", "--venv", "relative/venv"],
])
def test_refusals_exit_2_before_anything(cli, args, tmp_path):
    out = tmp_path / "plan.sh"
    result = cli("setup", *args, "--format", "sh", "-o", str(out))
    assert result.code == 2, result.err
    assert not out.exists()
    assert "Traceback" not in result.err


def test_refusals_name_the_rule_and_its_source(cli):
    wheels = cli("setup", "--os", "ubuntu-24.04", "--with-python")
    assert "os.torchneuron-wheels-ubuntu-26.04" in wheels.err and "source: https://" in wheels.err
    inf1 = cli("setup", "--os", "ubuntu-22.04", "--chip", "inf1")
    assert "runtime.inf1-driver-2.24" in inf1.err


def test_inf1_read_from_the_host_is_refused(cli, tmp_path):
    root = build_setup_host(tmp_path / "r", chip="inf1")
    assert cli("setup", "--sysroot", str(root)).code == 2


def test_allow_unsupported_proceeds_with_a_note(cli):
    result = cli("setup", "--os", "ubuntu-24.04", "--with-python", "--allow-unsupported",
                 "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["schema"] == 1 and doc["command"] == "setup"
    assert any(n.startswith("allowed (--allow-unsupported)") for n in doc["setup"]["notes"])
    assert "python-stack" in [s["id"] for s in doc["setup"]["steps"]]


def test_json_envelope_on_failure_too(cli):
    result = cli("setup", "--os", "ubuntu-24.04", "--with-python", "--format", "json")
    assert result.code == 2
    assert json.loads(result.out)["error"]["kind"] == "input"


def test_default_is_a_plan_and_o_writes_the_script_whole(cli, tmp_path):
    root = build_setup_host(tmp_path / "r")
    text = cli("setup", "--sysroot", str(root))
    assert text.code == 0 and "Nothing was changed" in text.out
    out = tmp_path / "setup.sh"
    result = cli("setup", "--sysroot", str(root), "--format", "sh", "-o", str(out))
    assert result.code == 0
    assert out.read_text().startswith("#!/bin/sh\n") and "set -eu" in out.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".setup.sh")] == []


def test_yes_refuses_another_host(cli, tmp_path):
    root = build_setup_host(tmp_path / "r")
    assert cli("setup", "--sysroot", str(root), "--yes").code == 2


def test_a_sysroot_on_an_os_setup_does_not_know_is_refused(cli, tmp_path):
    root = build_setup_host(tmp_path / "r")
    (root / "etc/os-release").write_text('ID=debian\nVERSION_ID="12"\n')
    result = cli("setup", "--sysroot", str(root))
    assert result.code == 2 and "debian 12" in result.err
    assert cli("setup", "--sysroot", str(root), "--os", "ubuntu-26.04").code == 2


def test_config_system_repo_points_the_plan_at_a_mirror(tmp_path, cli, monkeypatch):
    """The user's own config (a project's is never read for it: test_trust_roots.py)."""
    from neuronctl.cache_dir import user_config_file

    root = build_setup_host(tmp_path / "root")
    mine = user_config_file()
    mine.parent.mkdir(parents=True)
    mine.write_text('system_repo = "https://mirror.internal.test/neuron/apt"\n')
    result = cli("setup", "--sysroot", str(root), "--format", "sh")
    assert result.code == 0, result.err
    assert "https://mirror.internal.test/neuron/apt" in result.out
    assert "apt.repos.neuron.amazonaws.com" not in result.out.split("set -eu", 1)[1]
