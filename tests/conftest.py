from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "reference"
N2_MANIFEST = SHARED / "n2-manifest.json"
FACTS = SHARED / "NEURON-FACTS.md"

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Test modules still import helpers from one another by module name: every test folder on the path.
for _folder in sorted({p.parent for p in Path(__file__).resolve().parent.rglob("test_*.py")}):
    sys.path.append(str(_folder))

from support.standin import standin, standin_python  # noqa: E402, F401  (session fixtures: the stand-in backend)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Keep every test away from the real user's pip/uv settings, caches, config and EC2."""
    home = tmp_path_factory.mktemp("home")
    for key in list(os.environ):
        if key.startswith(("PIP_", "UV_", "NEURONCTL_", "NEURON_", "PJRT_", "GITHUB_", "AWS_")):
            monkeypatch.delenv(key, raising=False)
    # Before HOME moves: where this machine's Pythons are, so `--venv-python 3.12` finds them
    # with no pyenv on PATH (a fresh machine's shell sets no PYENV_ROOT).
    import pwd

    monkeypatch.setenv("PYENV_ROOT", os.environ.get("PYENV_ROOT")
                       or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv"))
    monkeypatch.setenv("HOME", str(home))
    # The target rule picks an activated venv: the suite never works on the caller's.
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))  # releases update's store
    # os.devnull is pip's documented "load no config file at all" (site-wide ones included).
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")  # uv must never fetch a Python from GitHub
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    monkeypatch.setenv("COLUMNS", "200")
    # Anything that forgets to point at a loopback index fails fast here, never reaching out.
    for name in ("PYPI", "PYTORCH_CPU", "NEURON"):
        monkeypatch.setenv(f"NEURONCTL_INDEX_{name}", "http://127.0.0.1:9/simple")
    # And anything else that reaches past loopback (requests, pip, uv all honour these) is refused.
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, "http://127.0.0.1:9")
    for key in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(key, "127.0.0.1,localhost")
    workdir = home / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    yield workdir


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run neuronctl in-process; returns exit code, stdout and stderr."""
    from neuronctl.cli.main import run

    def invoke(*args: str) -> Result:
        capsys.readouterr()
        code = run(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real venvs (Python 3.12 for native, 3.11 for legacy) with the test wheels installed."""
    from support.stacks import build_stacks

    return build_stacks(tmp_path_factory.mktemp("stacks"))


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory):
    """The lock/install test universe's wheels, built once."""
    from support.universe import build_universe

    return build_universe(tmp_path_factory.mktemp("universe"))


@pytest.fixture
def uni(wheels):
    """Loopback PyPI-, PyTorch- and Neuron-like indexes serving those wheels, fresh per test."""
    from support.universe import running

    with running(wheels) as u:
        yield u


@pytest.fixture
def locked(cli, uni) -> Path:
    """The universe locked for Python 3.12, as ./pylock.toml (each test's own working folder)."""
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 0, r.err
    return Path("pylock.toml").resolve()


@pytest.fixture(scope="module")
def stack_wheels(tmp_path_factory: pytest.TempPathFactory):
    """The native and legacy stacks' wheels (tests/stacks.py), built once per module."""
    from support.stacks import wheel_set

    return wheel_set(tmp_path_factory.mktemp("stack-wheels"))
