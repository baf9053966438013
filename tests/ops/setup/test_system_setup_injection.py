"""neuronctl setup against hostile input: every byte from the sysroot, the manifest's rules or
the command line that reaches the generated shell script or Dockerfile is checked, so none of
it can add a command; a key file carrying a second key is never trusted."""

from __future__ import annotations

import subprocess

import msgspec
import pytest
from support.apt_repo import KEY_FILE, gpg_key, serve
from support.setup_sysroots import build_setup_host, hold_device, plan_for
from support.shellcheck import needs_shellcheck, shellcheck

from neuronctl.errors import InputError
from neuronctl.ops.reporter import CollectingReporter
from neuronctl.ops.setup.apply import apply_plan
from neuronctl.ops.setup.dockerfile import ToolSource, render_dockerfile
from neuronctl.ops.setup.model import SetupPlan
from neuronctl.ops.setup.plan import check_repo_url
from neuronctl.ops.setup.repos import KEY_FINGERPRINT
from neuronctl.ops.setup.script import render_sh
from neuronctl.release.manifest import load_bundled_manifest

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_system_setup_injection.py)

MARK = "touch /tmp/neuronctl-owned"


def code_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if not line.lstrip().startswith("#")]


def test_a_kernel_release_that_is_not_a_token_is_not_written(tmp_path):
    root = build_setup_host(tmp_path / "r", kernel="6.8.0\n" + MARK)
    plan = plan_for(root)
    assert plan.variables["KERNEL"] == "$(uname -r)"
    assert MARK not in render_sh(plan)


def test_a_codename_that_is_not_a_word_falls_back_to_the_targets(tmp_path):
    root = build_setup_host(tmp_path / "r", "ubuntu-24.04")
    text = (root / "etc/os-release").read_text().replace("VERSION_CODENAME=noble",
                                                           "VERSION_CODENAME='noble$(id)'")
    (root / "etc/os-release").write_text(text)
    assert plan_for(root).variables["NEURON_SUITE"] == "noble"


def test_a_package_version_with_shell_in_it_is_dropped(tmp_path):
    root = build_setup_host(tmp_path / "r", packages={"aws-neuronx-dkms": "2.30.2.0$(reboot)"})
    plan = plan_for(root)
    assert "aws-neuronx-dkms" not in plan.facts.packages
    assert "reboot" not in render_sh(plan)


def test_a_holders_command_line_cannot_leave_its_comment(tmp_path):
    root = hold_device(build_setup_host(tmp_path / "r", loaded_driver="2.30.2.0"),
                       command="python3\n" + MARK)
    plan = plan_for(root)
    script = render_sh(plan)
    assert MARK not in "\n".join(code_lines(script))
    clean = render_sh(plan_for(hold_device(build_setup_host(tmp_path / "c", loaded_driver="2.30.2.0"))))
    assert code_lines(script) == code_lines(clean)


def _with_hostile_rule_words(plan: SetupPlan) -> SetupPlan:
    """The plan with a rule's words that try to leave their comment on a line of their own."""
    return msgspec.structs.replace(plan, notes=(f"allowed: words\n{MARK}\n",))


def test_rule_words_with_a_newline_stay_in_their_comment(tmp_path):
    plan = plan_for(build_setup_host(tmp_path / "r"))
    hostile = _with_hostile_rule_words(plan)
    assert code_lines(render_sh(hostile)) == code_lines(render_sh(plan))
    script = tmp_path / "s.sh"
    script.write_text(render_sh(hostile))
    assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0


@needs_shellcheck
def test_rule_words_with_a_newline_leave_a_script_shellcheck_passes(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text(render_sh(_with_hostile_rule_words(plan_for(build_setup_host(tmp_path / "r")))))
    lint = shellcheck(script, "sh")
    assert lint.returncode == 0, lint.stdout


def test_rule_ids_cannot_break_a_label():
    release = load_bundled_manifest().get("2.33.1")
    rules = tuple(msgspec.structs.replace(r, id=r.id + '" \\\n RUN ' + MARK + ' $x')
                  for r in release.rules)
    text = render_dockerfile(msgspec.structs.replace(release, rules=rules), base="ubuntu:26.04",
                             lock="pylock.toml", repo=None, fingerprint=KEY_FINGERPRINT,
                             tool=ToolSource(wheel="dist/neuronctl-0.1.0-py3-none-any.whl",
                                             sha256="ab" * 32))
    assert not any(line.lstrip(" &").startswith("RUN touch") for line in text.splitlines())
    assert "$x" not in text
    label = next(line for line in text.splitlines() if "com.neuronctl.driver-rules" in line)
    assert label.count('"') == 2


@pytest.mark.parametrize("url", [
    "ftp://mirror.example/neuron", "https://mirror.example/a b", "https://m.example/'x'",
    "https://m.example/$(id)", "https://m.example/`id`", "https://m.example/\\x",
    "https://m.example/\nrm", "mirror.example", "https://" + "a" * 500,
    "https://user:secret@mirror.example/neuron"])
def test_repo_urls_that_could_inject_are_refused(url):
    with pytest.raises(InputError):
        check_repo_url(url, "--repo")


def test_a_key_file_carrying_a_second_key_is_never_trusted(tmp_path):
    good = tmp_path / "good"
    fpr = gpg_key(good)
    evil = tmp_path / "evil"
    gpg_key(evil, "Evil <evil@example.invalid>")
    served = tmp_path / "served"
    served.mkdir()
    keys = b"".join(subprocess.run(["gpg", "--homedir", str(h), "--batch", "--armor", "--export"],
                                   check=True, capture_output=True).stdout for h in (good, evil))
    (served / KEY_FILE).write_bytes(keys)
    root = build_setup_host(tmp_path / "root")
    home = tmp_path / "home-gnupg"
    home.mkdir(mode=0o700)
    with serve(served) as url:
        env = {"PATH": "/usr/bin:/bin", "NEURONCTL_SETUP_ROOT": str(root),
               "NEURONCTL_SETUP_NEURON_REPO": url, "NEURONCTL_SETUP_NEURON_KEY_FPR": fpr, "GNUPGHOME": str(home), "no_proxy": "127.0.0.1"}
        outcome = apply_plan(plan_for(root), CollectingReporter(), is_root=True, environ=env)
    assert outcome.failed == "repo-key" and outcome.done == ()
    assert "it is not trusted" in outcome.output
    assert not (root / "etc/apt/keyrings/neuron.gpg").exists()


def test_a_holders_token_is_not_in_the_plan(tmp_path):
    root = hold_device(build_setup_host(tmp_path / "r", loaded_driver="2.30.2.0"),
                       command="python3 train.py --token=supersecret123")
    plan = plan_for(root)
    assert "pid 4242" in (next(s for s in plan.steps if s.id == "driver-reload").blocked or "")
    assert "supersecret123" not in render_sh(plan)
    assert "supersecret123" not in str(plan.to_json())
