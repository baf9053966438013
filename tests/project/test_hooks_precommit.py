"""The pre-commit hook (.pre-commit-hooks.yaml), run by the real `pre-commit` tool as a user's
project runs it: a .pre-commit-config.yaml naming this repository (a git copy of the checkout) at
a commit, so pre-commit clones it and builds the hook's own environment with `language: python`
(virtualenv, then `pip install .`), offline from a wheelhouse of neuronctl's dependencies
(PIP_NO_INDEX / PIP_FIND_LINKS, pip's own settings). The lock is real, from loopback indexes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.hooks_wheelhouse import checkout_copy, offline_pip_env, write_project

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GIT_ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
          "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
          "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ID}).stdout.strip()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """This repository as pre-commit fetches it: a git repository with the manifest committed."""
    repo = checkout_copy(tmp_path_factory.mktemp("hook-repo") / "neuronctl")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "neuronctl")
    return repo, git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    """pre-commit's cache (the cloned repo and the hook's env), shared by this module's tests."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def hook_project(cli, uni, monkeypatch, hook_repo):
    work = write_project(Path.cwd(), uni, monkeypatch)
    assert cli("lock").code == 0
    repo, rev = hook_repo
    config = {"repos": [{"repo": str(repo), "rev": rev, "hooks": [{"id": "neuronctl-lock-check"}]}]}
    (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (work / "README.md").write_text("demo\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    return work


def pre_commit(work: Path, wheelhouse: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ID, **offline_pip_env(wheelhouse), "PRE_COMMIT_HOME": str(home),
           "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_the_hook_passes_on_a_current_lock_and_fails_on_a_stale_one(hook_project, wheelhouse, pre_commit_home):
    r = pre_commit(hook_project, wheelhouse, pre_commit_home, "--all-files")
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^neuronctl lock --check\.+Passed$", r.stdout, re.M), r.stdout
    # The hook's environment holds neuronctl, built from the repository pre-commit cloned.
    scripts = list(pre_commit_home.glob("repo*/py_env-*/bin/neuronctl"))
    assert scripts, sorted(p.name for p in pre_commit_home.iterdir())

    pyproject = hook_project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('python = "3.12"', 'python = "3.13"'))
    git(hook_project, "add", "pyproject.toml")
    r = pre_commit(hook_project, wheelhouse, pre_commit_home, "--files", "pyproject.toml")
    assert r.returncode == 1
    assert re.search(r"^neuronctl lock --check\.+Failed$", r.stdout, re.M), r.stdout
    assert "targets" in r.stdout  # the check's own reason reaches the user


def test_the_hook_runs_only_for_the_project_and_lock_files(hook_project, wheelhouse, pre_commit_home):
    pyproject = hook_project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('python = "3.12"', 'python = "3.13"'))
    r = pre_commit(hook_project, wheelhouse, pre_commit_home, "--files", "README.md")
    assert r.returncode == 0 and re.search(r"\(no files to check\)Skipped", r.stdout), r.stdout
    r = pre_commit(hook_project, wheelhouse, pre_commit_home, "--files", "pylock.toml")
    assert r.returncode == 1, r.stdout


def test_the_manifest_is_the_one_documented():
    hook, migrate = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "neuronctl-lock-check" and hook["entry"] == "neuronctl lock --check"
    assert migrate["id"] == "neuronctl-migrate" and migrate["entry"] == "neuronctl migrate"
    assert migrate["language"] == "python" and migrate["pass_filenames"] is True
    scanned = re.compile(migrate["files"])
    for name in ("train.py", "nb.ipynb", "requirements.txt", "pyproject.toml", "setup.cfg",
                 "run.sh", ".github/workflows/ci.yml", "Dockerfile", "docker/Dockerfile.trn2"):
        assert scanned.search(name), name
    for name in ("README.md", "model.pt", "notes.rst"):
        assert not scanned.search(name), name
    assert hook["language"] == "python" and hook["pass_filenames"] is False
    files = re.compile(hook["files"])
    for name in ("pyproject.toml", "pylock.toml", "pylock.cuda.toml"):
        assert files.search(name), name
    for name in ("README.md", "mypylock.toml", "pylock.toml.bak", "src/pyproject.toml"):
        assert not files.search(name), name


def test_the_migrate_hook_fails_on_xla_code_and_passes_native_code(tmp_path, wheelhouse, pre_commit_home,
                                                                   hook_repo):
    """`neuronctl-migrate` as a project runs it: the files being committed are scanned; an
    XLA-era file fails the commit with its finding, native code passes."""
    repo, rev = hook_repo
    work = tmp_path / "work"
    work.mkdir()
    config = {"repos": [{"repo": str(repo), "rev": rev, "hooks": [{"id": "neuronctl-migrate"}]}]}
    (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (work / "native.py").write_text("import torch\nx = torch.ones(2).to('neuron')\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    r = pre_commit(work, wheelhouse, pre_commit_home, "--all-files")
    assert r.returncode == 0 and "neuronctl migrate" in r.stdout and "Passed" in r.stdout, r.stdout
    (work / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    git(work, "add", "-A")
    r = pre_commit(work, wheelhouse, pre_commit_home, "--files", "train.py")
    assert r.returncode == 1 and "NRN103" in r.stdout and "train.py" in r.stdout, r.stdout
