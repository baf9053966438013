"""Engine choice and the pure install plan."""

import pytest

from neuronctl.backend.choose import choose_engine
from neuronctl.backend.external_tool import clean_environment
from neuronctl.backend.plan import diff
from neuronctl.errors import InputError
from neuronctl.locked_file import LockedFile


def test_the_engine_is_the_one_its_resolved_setting_names(tmp_path):
    """The precedence (flag > environment > config > default) is neuronctl.settings' alone
    (tests/core/test_settings.py); the choice takes the resolved value and names its source."""
    env = {"NEURONCTL_BACKEND": "pip", "PATH": str(tmp_path)}
    assert choose_engine("uv", "--backend", env, uv_path="/opt/uv").reason == "--backend uv"
    chosen = choose_engine("pip", "NEURONCTL_BACKEND", env, uv_path="/opt/uv")
    assert chosen.engine.name == "pip" and chosen.reason == "NEURONCTL_BACKEND pip"
    config = choose_engine("uv", "config backend", {"PATH": str(tmp_path)}, uv_path="/opt/uv")
    assert config.engine.name == "uv" and config.reason == "config backend uv"
    auto = choose_engine(None, "default", env, uv_path="/opt/uv")
    assert auto.engine.name == "uv" and auto.reason.startswith("auto: uv found")
    assert choose_engine("auto", "--backend", env, uv_path="/opt/uv").engine.name == "uv"
    with pytest.raises(InputError, match="config backend 'conda'"):
        choose_engine("conda", "config backend", {"PATH": str(tmp_path)})


def test_install_takes_the_environment_over_the_config_for_the_engine(tmp_path, monkeypatch):
    """The install command's engine comes from the one resolver: NEURONCTL_BACKEND beats config
    `backend`, and the reason names the variable."""
    from neuronctl.cli.cmd_install import _engine
    from neuronctl.config import Config
    from neuronctl.settings import Resolver

    config = Config({"backend": "uv"}, str(tmp_path / "pyproject.toml"), tmp_path)
    chosen = _engine(Resolver.of(config, environ={"NEURONCTL_BACKEND": "pip"}).resolve("engine"))
    assert chosen.engine.name == "pip" and chosen.reason == "NEURONCTL_BACKEND pip"
    with pytest.raises(InputError, match=r"config backend \(pyproject.toml\) 'conda'"):
        _engine(Resolver.of(Config({"backend": "conda"}, "pyproject.toml", tmp_path),
                            environ={}).resolve("engine"))


def test_auto_falls_back_to_pip_and_uv_must_exist(tmp_path, monkeypatch):
    import neuronctl.backend.choose as choose

    monkeypatch.setattr(choose, "find_uv", lambda env: None)
    chosen = choose_engine(None, "default", {"PATH": str(tmp_path)})
    assert chosen.engine.name == "pip" and "uv not found" in chosen.reason
    with pytest.raises(InputError, match="uv is not installed"):
        choose_engine("uv", "--backend", {"PATH": str(tmp_path)})


def test_engines_never_reach_an_index():
    from pathlib import Path

    from neuronctl.backend.pip_engine import PipEngine
    from neuronctl.backend.uv_engine import UvEngine

    reqs = Path("/t/requirements.txt")
    pip = PipEngine().install("/v/bin/python", reqs)
    assert {"--no-index", "--no-deps", "--require-hashes"} <= set(pip) and pip[-2:] == ["-r", str(reqs)]
    uv = UvEngine("/bin/uv").install("/v/bin/python", reqs)
    assert {"--no-index", "--no-deps", "--require-hashes", "--no-config"} <= set(uv) and "--offline" not in uv
    assert "--offline" in UvEngine("/bin/uv").install("/v/bin/python", reqs, offline=True)
    # No index flag of any kind, ever: each file comes from its own URL in the requirements.
    assert not [a for a in pip + uv if "index-url" in a or "find-links" in a]
    env = clean_environment({"PIP_INDEX_URL": "http://evil", "UV_EXTRA_INDEX_URL": "http://evil",
                             "PYTHONPATH": "/x", "PATH": "/usr/bin", "UV_HTTP_RETRIES": "0",
                             "PIP_RETRIES": "1", "PIP_FIND_LINKS": "/evil", "UV_HTTP_TIMEOUT": "1"})
    assert "PIP_INDEX_URL" not in env and "UV_EXTRA_INDEX_URL" not in env and "PYTHONPATH" not in env
    assert "PIP_FIND_LINKS" not in env and "UV_HTTP_TIMEOUT" not in env  # neuronctl sets its own
    assert env["UV_HTTP_RETRIES"] == "0" and env["PIP_RETRIES"] == "1"  # retries cannot add an index
    assert env["UV_NO_CONFIG"] == "1" and env["PATH"] == "/usr/bin"


def w(name, version):
    return LockedFile(name, version, f"{name}-{version}.whl", f"http://i/{name}", "0" * 64, 1)


def test_plan_diff_actions():
    plan = diff({"torch": "2.9.0", "torch-neuronx": "2.14.3.0", "nki": "0.8.0", "numpy": "2.1.0",
                 "torch-xla": "2.9.0", "torch_neuronx_extra": "1"},
                [w("torch", "2.14.0+cpu"), w("torch-neuronx", "2.14.3.0"), w("nki", "0.7.0"),
                 w("numpy", "2.1.0+local"), w("filelock", "3.16.1")],
                {"torch-xla": "legacy", "libneuronxla": "legacy (not installed)"})
    actions = {c.name: c.action for c in plan.changes}
    assert actions == {"torch": "upgrade", "torch-neuronx": "keep", "nki": "downgrade",
                       "numpy": "reinstall", "filelock": "install", "torch-xla": "remove"}
    assert [c.name for c in plan.removals] == ["torch-xla"]
    assert not diff({"a": "1"}, [w("a", "1")], {}).applies


def test_restore_commands_use_one_index_each():
    from neuronctl.backend.pip_engine import PipEngine
    from neuronctl.backend.plan import changed_between
    from neuronctl.backend.uv_engine import UvEngine

    before = {"torch": "2.9.0", "Torch_XLA": "2.9.0", "filelock": "3.16.1"}
    after = {"torch": "2.14.0+cpu", "filelock": "3.16.1", "nki": "0.7.0"}
    assert changed_between(before, after) == [("nki", None, "0.7.0"), ("torch", "2.9.0", "2.14.0+cpu"),
                                              ("torch-xla", "2.9.0", None)]
    index = {"torch": "http://torch", "torch-xla": "http://neuron"}
    cmds = PipEngine().restore_commands("/v/bin/python", before, after, index.__getitem__)
    assert cmds == [
        ["/v/bin/python", "-m", "pip", "install", "--no-deps", "--index-url", "http://neuron", "torch-xla==2.9.0"],
        ["/v/bin/python", "-m", "pip", "install", "--no-deps", "--index-url", "http://torch", "torch==2.9.0"],
        ["/v/bin/python", "-m", "pip", "uninstall", "--yes", "nki"],
    ]
    # uv's own form: a venv uv made has no pip, so `python -m pip` would fail there.
    uv = "/bin/uv", "pip"
    assert UvEngine("/bin/uv").restore_commands("/v/bin/python", before, after, index.__getitem__) == [
        [*uv, "install", "--python", "/v/bin/python", "--no-deps", "--no-config", "--index-url",
         "http://neuron", "torch-xla==2.9.0"],
        [*uv, "install", "--python", "/v/bin/python", "--no-deps", "--no-config", "--index-url",
         "http://torch", "torch==2.9.0"],
        [*uv, "uninstall", "--python", "/v/bin/python", "--no-config", "nki"],
    ]


def test_each_engine_takes_away_only_what_it_left_in_an_environment(tmp_path):
    """uv leaves an empty `.lock` at an environment's root: after a failed step it goes again
    where it was not there before; one that was there stays; pip leaves nothing to take away."""
    from neuronctl.backend.pip_engine import PipEngine
    from neuronctl.backend.uv_engine import UvEngine

    env = tmp_path / "env"
    env.mkdir()
    cleanup = UvEngine("/bin/uv").cleanup(str(env))
    (env / ".lock").touch()  # what uv leaves
    cleanup()
    assert not (env / ".lock").exists()
    (env / ".lock").touch()  # there before the engine ran: not the engine's to take away
    cleanup = UvEngine("/bin/uv").cleanup(str(env))
    cleanup()
    assert (env / ".lock").exists()
    (env / ".lock").unlink()
    cleanup = PipEngine().cleanup(str(env))
    (env / ".lock").touch()
    cleanup()
    assert (env / ".lock").exists()
