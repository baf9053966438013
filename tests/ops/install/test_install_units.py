"""The pure pieces of `neuronctl install`, over hand-made inputs (no interpreter, no network):
which wheels a lock selects for a target, the plan policy (what is removed, what needs
confirming), and the preflight checks."""

from __future__ import annotations

import typing
from pathlib import Path

import msgspec
import pytest
from packaging.pylock import Pylock

from neuronctl.errors import InputError, OperationFailed
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.plan import (
    LEGACY_WHY,
    PLACEHOLDER_WHY,
    confirm_removals,
    make_plan,
    removals,
)
from neuronctl.ops.install.preflight import NO_HARDWARE, check_chip, release_note
from neuronctl.ops.install.source import check_python, from_lock, lock_pythons
from neuronctl.probes.hardware import HardwareReport
from neuronctl.probes.pyenv import InstalledDist, PythonEnv
from neuronctl.release.manifest import load_bundled_manifest
from neuronctl.resolvers.targets import PlatformTarget

MANIFEST = load_bundled_manifest()
X86_312 = PlatformTarget("3.12", "manylinux_2_28_x86_64")
X86_313 = PlatformTarget("3.13", "manylinux_2_28_x86_64")
ARM_312 = PlatformTarget("3.12", "manylinux_2_28_aarch64")
LOCK = Path("/locks/pylock.toml")


def fake_sha(n: int) -> str:
    return f"{n:064x}"


def fake_wheel_entry(name: str, version: str, tag: str, n: int, **extra) -> dict:
    filename = f"{name.replace('-', '_')}-{version}-{tag}.whl"
    return {"name": filename, "url": f"http://127.0.0.1:9/files/{filename}", "size": 10,
            "hashes": {"sha256": fake_sha(n)}, **extra}


def lock_doc(*packages: dict, **top) -> dict:
    return {"lock-version": "1.0", "created-by": "test", "packages": list(packages), **top}


def env_for(target: PlatformTarget, *dists: tuple[str, str], tags: bool = True, **extra) -> PythonEnv:
    return PythonEnv(python=f"{target.python}.0", implementation="cpython", executable="/x/python",
                     prefix="/x", base_prefix="/base", platform="linux", machine=target.arch,
                     system="Linux", libc=("glibc", "2.28"), markers=target.markers,
                     tags=tuple(str(t) for t in target.tags) if tags else (),
                     distributions={n: InstalledDist(n, v) for n, v in dists}, **extra)


def select(doc: dict, target: PlatformTarget, env: PythonEnv | None = None, release: str | None = None):
    return from_lock(LOCK, Pylock.from_dict(doc), env or env_for(target), target, MANIFEST, release)


NUMPY = {"name": "numpy", "version": "2.1.0",
         "wheels": [fake_wheel_entry("numpy", "2.1.0", "cp312-cp312-manylinux_2_17_x86_64", 1),
                    fake_wheel_entry("numpy", "2.1.0", "cp313-cp313-manylinux_2_17_x86_64", 2),
                    fake_wheel_entry("numpy", "2.1.0", "cp312-cp312-manylinux_2_17_aarch64", 3)]}


# -- which wheels a lock selects ------------------------------------------------------------------


@pytest.mark.parametrize(("target", "expected"), [(X86_312, 1), (X86_313, 2), (ARM_312, 3)])
def test_the_wheel_for_the_targets_python_and_platform_is_selected(target, expected):
    source = select(lock_doc(NUMPY), target)
    (only,) = source.wanted
    assert (only.name, only.version, only.sha256) == ("numpy", "2.1.0", fake_sha(expected))
    assert only.url.endswith(only.filename) and only.size == 10
    assert source.describe == f"lock {LOCK}" and source.lock == LOCK


def test_without_the_interpreters_own_tags_the_targets_tags_decide():
    source = select(lock_doc(NUMPY), X86_313, env_for(X86_313, tags=False))
    assert [w.sha256 for w in source.wanted] == [fake_sha(2)]


def test_a_package_whose_marker_does_not_hold_is_left_out():
    only_313 = {"name": "tomli", "version": "2.0.0", "marker": 'python_version < "3.13"',
                "wheels": [fake_wheel_entry("tomli", "2.0.0", "py3-none-any", 4)]}
    assert [w.name for w in select(lock_doc(NUMPY, only_313), X86_312).wanted] == ["numpy", "tomli"]
    assert [w.name for w in select(lock_doc(NUMPY, only_313), X86_313).wanted] == ["numpy"]


def test_one_package_locked_twice_for_the_same_environment_is_ambiguous():
    with pytest.raises(InputError, match="Multiple packages with the name 'numpy'") as err:
        select(lock_doc(NUMPY, dict(NUMPY)), X86_312)
    assert err.value.message.startswith(f"{LOCK}: ")


def test_two_versions_told_apart_by_markers_are_not_ambiguous():
    old = {**NUMPY, "version": "1.26.0", "marker": 'python_version < "3.13"',
           "wheels": [fake_wheel_entry("numpy", "1.26.0", "cp312-cp312-manylinux_2_17_x86_64", 5)]}
    new = {**NUMPY, "marker": 'python_version >= "3.13"'}
    assert [w.version for w in select(lock_doc(old, new), X86_312).wanted] == ["1.26.0"]
    assert [w.version for w in select(lock_doc(old, new), X86_313).wanted] == ["2.1.0"]


def test_no_wheel_for_the_target_is_bad_input_naming_the_lock():
    arm_only = {**NUMPY, "wheels": [NUMPY["wheels"][2]]}
    with pytest.raises(InputError) as err:
        select(lock_doc(arm_only), X86_312)
    assert err.value.message.startswith(f"{LOCK}: ") and "numpy" in err.value.message


def test_requires_python_and_environments_are_checked_first():
    with pytest.raises(InputError, match=r"requires-python >=3\.13, but the target is Python 3\.12\.0") as err:
        select(lock_doc(NUMPY, **{"requires-python": ">=3.13"}), X86_312)
    assert "--venv-python" in (err.value.hint or "")
    with pytest.raises(InputError, match="is none of the lock's environments"):
        select(lock_doc(NUMPY, environments=['platform_machine == "aarch64"']), X86_312)
    assert select(lock_doc(NUMPY, environments=['platform_machine == "aarch64"']), ARM_312).wanted


def test_a_wheel_by_path_is_found_beside_the_lock():
    local = {"name": "nki", "version": "0.7.0",
             "wheels": [{"name": "nki-0.7.0-py3-none-any.whl", "path": "wheels/nki-0.7.0-py3-none-any.whl",
                         "hashes": {"sha256": fake_sha(6)}}]}
    (only,) = select(lock_doc(local), X86_312).wanted
    assert only.url == "file:///locks/wheels/nki-0.7.0-py3-none-any.whl"


def test_only_wheels_with_a_sha256_are_installed():
    sdist_only = {"name": "tomli", "version": "2.0.0",
                  "sdist": {"name": "tomli-2.0.0.tar.gz", "url": "http://127.0.0.1:9/t.tar.gz",
                            "hashes": {"sha256": fake_sha(7)}}}
    with pytest.raises(InputError, match="installs wheels only"):
        select(lock_doc(sdist_only), X86_312)
    md5_only = {**NUMPY, "wheels": [{**NUMPY["wheels"][0], "hashes": {"md5": "0" * 32}}]}
    with pytest.raises(InputError, match="has no sha256"):
        select(lock_doc(md5_only), X86_312)


def test_the_recorded_release_and_indexes_come_with_the_source():
    doc = lock_doc(NUMPY, tool={"neuronctl": {"release": "2.33.0", "torch": "2.14",
                                              "indexes": {"pypi": "http://127.0.0.1:9/simple"}}})
    source = select(doc, X86_312)
    assert source.release == "2.33.0" and source.framework is not None
    assert source.framework.torch.startswith("2.14") and source.indexes == {"pypi": "http://127.0.0.1:9/simple"}
    assert select(lock_doc(NUMPY), X86_312, release="2.33.0").release == "2.33.0"  # --release / config
    unknown = lock_doc(NUMPY, tool={"neuronctl": {"release": "9.9"}})
    with pytest.raises(InputError, match=r"\[tool.neuronctl\] release '9.9'"):
        select(unknown, X86_312)


def test_the_pythons_a_lock_is_for_pick_a_new_venvs_interpreter():
    recorded = lock_doc(NUMPY, tool={"neuronctl": {"targets": [{"python": "3.13"}, {"python": "3.12"},
                                                               {"python": "3.13"}]}})
    assert lock_pythons(Pylock.from_dict(recorded)) == ("3.13", "3.12")
    ranged = lock_doc(NUMPY, **{"requires-python": ">=3.12,<3.14"})
    assert lock_pythons(Pylock.from_dict(ranged)) == ("3.12", "3.13")
    assert lock_pythons(Pylock.from_dict(lock_doc(NUMPY))) == ()


# -- the plan policy ---------------------------------------------------------------------------------

NATIVE = (LockedFile("torch-neuronx", "2.14.3.0", "t.whl", "http://127.0.0.1:9/t.whl", fake_sha(8), 1),
          LockedFile("torch", "2.14.0+cpu", "torch.whl", "http://127.0.0.1:9/torch.whl", fake_sha(9), 1))
LEGACY_TNX = "2.9.0.2.15.32035+de43f57c"


def test_moving_to_native_removes_the_legacy_stack_and_placeholders():
    env = env_for(X86_312, ("torch-neuronx", LEGACY_TNX), ("torch-xla", "2.9.0"),
                  ("libneuronxla", "2.2.0"), ("neuronx-cc", "1.0"), ("torch", "2.9.0"),
                  ("requests", "2.32.0"))
    assert removals(env, NATIVE) == {"torch-neuronx": LEGACY_WHY, "torch-xla": LEGACY_WHY,
                                     "libneuronxla": LEGACY_WHY, "neuronx-cc": PLACEHOLDER_WHY}
    plan = make_plan(env, NATIVE)
    actions = {c.name: c.action for c in plan.changes}
    # What the source brings is upgraded, not removed; what the policy names goes; the rest stays.
    assert actions == {"torch-neuronx": "upgrade", "torch": "upgrade", "torch-xla": "remove",
                       "libneuronxla": "remove", "neuronx-cc": "remove"}
    assert {c.name: c.why for c in plan.removals}["neuronx-cc"] == PLACEHOLDER_WHY


def test_a_legacy_source_removes_nothing():
    legacy = (LockedFile("torch-neuronx", LEGACY_TNX, "t.whl", "http://127.0.0.1:9/t.whl", fake_sha(10), 1),)
    env = env_for(X86_312, ("torch-xla", "2.9.0"), ("libneuronxla", "2.2.0"))
    assert removals(env, legacy) == {} and not make_plan(env, legacy).removals


def test_a_plan_that_changes_nothing_is_empty():
    env = env_for(X86_312, ("torch-neuronx", "2.14.3.0"), ("torch", "2.14.0+cpu"))
    plan = make_plan(env, NATIVE)
    assert plan.empty and {c.action for c in plan.changes} == {"keep"}


def _removing_plan():
    return make_plan(env_for(X86_312, ("torch-xla", "2.9.0")), NATIVE)


def test_removals_need_yes_or_a_persons_answer():
    asked: list[str] = []

    def answer(reply: bool):
        def confirm(question: str) -> bool:
            asked.append(question)
            return reply
        return confirm

    confirm_removals(_removing_plan(), True, None)  # --yes: nobody is asked
    confirm_removals(make_plan(env_for(X86_312), NATIVE), False, None)  # nothing to remove
    with pytest.raises(InputError, match=r"the plan removes torch-xla 2\.9\.0; pass --yes to confirm"):
        confirm_removals(_removing_plan(), False, None)
    with pytest.raises(OperationFailed, match="not confirmed; nothing changed"):
        confirm_removals(_removing_plan(), False, answer(False))
    confirm_removals(_removing_plan(), False, answer(True))
    assert asked == ["Remove torch-xla 2.9.0?", "Remove torch-xla 2.9.0?"]


# -- preflight ---------------------------------------------------------------------------------------


def hardware(chip: str | None) -> HardwareReport:
    empty = {f.name: () if typing.get_origin(f.type) is tuple else None
             for f in msgspec.structs.fields(HardwareReport) if f.required}
    return HardwareReport(**{**empty, "device_count": 1 if chip else 0, "chip": chip})


def test_the_target_python_must_fit_the_stack():
    check_python(("3.12", "3.13"), "3.13.1")
    check_python((), "3.9.0")  # a stack that names none takes any
    with pytest.raises(InputError, match=r"the target is Python 3\.11\.9; this stack needs Python 3\.12, 3\.13") as err:
        check_python(("3.12", "3.13"), "3.11.9")
    assert err.value.hint == "install into a new venv: --venv DIR --venv-python 3.12"


def test_the_chip_must_fit_when_there_is_one():
    framework = MANIFEST.get("2.33.0").default_framework()
    assert framework is not None and "trn1" not in framework.chips
    with pytest.raises(InputError, match="this host has trn1"):
        check_chip(hardware("trn1"), framework)
    assert check_chip(hardware("trn2"), framework) is None
    assert check_chip(hardware(None), framework) == NO_HARDWARE  # preparing for another host
    assert check_chip(hardware("trn1"), None) is None  # a lock that records no stack


def test_a_release_that_is_not_ga_is_noted():
    note = release_note(MANIFEST, "2.33.0")
    assert note is not None and note.startswith("Neuron 2.33.0 is a beta release")
    ga = next(r.version for r in MANIFEST.releases if r.status == "ga")
    assert release_note(MANIFEST, ga) is None and release_note(MANIFEST, None) is None


@pytest.mark.parametrize("status, found", [(0, True), (3, False)])
def test_a_python_on_path_is_taken_only_when_it_runs(tmp_path, status, found):
    """A pyenv shim exists for every version but fails unless one is selected: it is run once
    (from "/", through the one process runner) and skipped when it fails."""
    from neuronctl.ops.interpreters import find_interpreter

    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "python3.99"
    shim.write_text(f"#!/bin/sh\n[ \"$(pwd)\" = / ] || exit 9\nexit {status}\n")
    shim.chmod(0o755)
    env = {"PATH": str(tmp_path / "bin"), "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    assert find_interpreter("3.99", env) == (str(shim) if found else None)
