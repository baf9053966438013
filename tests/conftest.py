from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli_run import Result
from support.standin import standin, standin_python  # noqa: F401  (session fixtures: the stand-in backend)


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background by a shell without job control (`bash .ci/run &` in a
    script, a CI step's `( ... & )`) starts with SIGINT ignored, and every process it starts
    inherits that: the tests that stop neuronctl with Ctrl-C's signal would wait out their
    timeouts instead. The suite's own processes take SIGINT as an interactive run's do (a handler
    here is reset to the default in each child, where Python installs KeyboardInterrupt)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


@pytest.fixture
def engines_fail_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engines retry no failed request (UV_HTTP_RETRIES, PIP_RETRIES: settings neuronctl hands
    on to them): a test whose server fails for good does not wait out their back-off."""
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    monkeypatch.setenv("PIP_RETRIES", "0")


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
    """The native and legacy stacks' wheels (tests/support/stacks.py), built once per module."""
    from support.stacks import wheel_set

    return wheel_set(tmp_path_factory.mktemp("stack-wheels"))


@pytest.fixture(scope="session")
def pip_venvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A venv with pip for Python 3.10 (no -P there) and 3.12, built once a session (seconds
    each); tests never change them, they take copies (support.venvs.copied_venv)."""
    from support.venvs import pip_venvs_in

    return pip_venvs_in(tmp_path_factory.mktemp("pip-venvs"))


@pytest.fixture
def sysroot_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lets the captured tree's own tools (a fake neuron-ls) run: a module whose trees carry one
    that its tests mean to run says so with pytestmark = pytest.mark.usefixtures("sysroot_tools")."""
    monkeypatch.setenv("NEURONCTL_SYSROOT_TOOLS", "1")


@pytest.fixture
def trn2(tmp_path: Path) -> Path:
    """A trn2 host fixture (support.sysroots), the test's own."""
    from support.sysroots import build_host

    return build_host(tmp_path / "trn2", "trn2")
