import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronctl import __version__


def test_version_and_help(cli):
    r = cli("--version")
    assert r.code == 0 and r.out.strip() == f"neuronctl {__version__}"
    h = cli("--help")
    assert h.code == 0
    for name in ("doctor", "releases", "detect", "env", "probe"):
        assert name in h.out


def test_python_dash_m_and_no_eager_heavy_imports():
    code = (
        "import sys\n"
        "from neuronctl.cli.main import run\n"
        "rc = run(['--version'])\n"
        "heavy = [m for m in ('rich', 'rich.table', 'requests', 'torch', 'tomlkit') if m in sys.modules]\n"
        "print(rc, heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("0 []")
    helped = subprocess.run([sys.executable, "-c", code.replace("'--version'", "'--help'")],
                            capture_output=True, text=True, check=True)
    assert helped.stdout.strip().endswith("0 []")
    mod = subprocess.run([sys.executable, "-m", "neuronctl", "--version"], capture_output=True,
                         text=True, check=True)
    assert mod.stdout.startswith("neuronctl ")


def test_unknown_command_and_flag_exit_2(cli):
    assert cli("frobnicate").code == 2
    r = cli("releases", "--bogus")
    assert r.code == 2 and "no such option" in r.err


@pytest.mark.parametrize("group", [(), ("fleet",)])
def test_a_group_without_a_command_shows_its_help_then_one_error_line(cli, group):
    """click 8.2+ raises a group's whole help as the error's text: it is shown as help on
    stderr, with its lines, then the one error line and hint every usage error has (exit 2)."""
    r = cli(*group)
    lines = r.err.splitlines()
    assert r.code == 2 and r.out == ""
    assert lines[0].startswith(f"Usage: neuronctl {' '.join(group)}".rstrip()), r.err
    assert "Commands:" in lines and len(lines) > 10
    assert lines[-2:] == ["neuronctl: error: no command given",
                          f"hint: see: {' '.join(('neuronctl', *group))} --help"]


def test_a_manifest_that_cannot_be_read_is_named_with_who_named_it(cli, isolated_env, monkeypatch):
    """--manifest, NEURONCTL_MANIFEST and the user's config `manifest` each name a file; a
    missing or broken one is exit 2 in one line that says which of them named it."""
    missing = isolated_env / "missing.json"
    r = cli("--manifest", str(missing), "releases")
    assert (r.code, r.err.splitlines()[0]) == (2, f"neuronctl: error: --manifest {missing}: no such file")
    r = cli("releases", "show", "2.33.1", "--manifest", str(missing))
    assert r.code == 2 and f"--manifest {missing}: no such file" in r.err
    broken = isolated_env / "broken.json"
    broken.write_text("{")
    monkeypatch.setenv("NEURONCTL_MANIFEST", str(broken))
    r = cli("releases")
    assert r.code == 2 and f"error: NEURONCTL_MANIFEST {broken}: invalid JSON" in r.err, r.err
    monkeypatch.delenv("NEURONCTL_MANIFEST")
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "neuronctl" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'manifest = "{missing}"\n')
    r = cli("releases")
    assert r.code == 2 and f"error: config manifest ({user}) {missing}: no such file" in r.err, r.err
    assert "Traceback" not in r.err


def test_config_from_pyproject_is_used_and_validated(cli, isolated_env):
    (isolated_env / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.neuronctl]\nmanifest = "missing.json"\n')
    r = cli("releases")  # a trust root: a project's is noted, not used (the file is never read)
    assert r.code == 0 and "`manifest` is not used" in r.err
    r = cli("--config", str(isolated_env / "pyproject.toml"), "releases")  # a file you name is
    assert r.code == 2  # yours
    assert "missing.json: no such file" in r.err
    (isolated_env / "pyproject.toml").write_text('[tool.neuronctl]\ncolour = "red"\n')
    r = cli("releases")
    assert r.code == 2
    assert "[tool.neuronctl]: unknown key 'colour'" in r.err
    (isolated_env / "pyproject.toml").write_text('[tool.neuronctl]\ntimeout = "soon"\n')
    r = cli("releases")
    assert r.code == 2 and "timeout: expected a number of seconds" in r.err
    (isolated_env / "pyproject.toml").write_text('[tool.neuronctl\n')
    r = cli("releases")
    assert r.code == 2 and "invalid TOML" in r.err


def test_explicit_config_missing(cli, tmp_path):
    r = cli("--config", str(tmp_path / "none.toml"), "releases")
    assert r.code == 2 and "no such config file" in r.err


def test_config_is_neuronctls_config_on_every_command_coverage_too(cli, tmp_path):
    """One word per idea: after any command, --config is neuronctl's config file. coverage's
    model config.json is --model-config (its --config once meant that, and hid this one)."""
    for command in ("releases", "coverage"):
        r = cli(command, "--config", str(tmp_path / "none.toml"))
        assert r.code == 2 and "no such config file" in r.err, (command, r.err)
    assert "--model-config FILE" in cli("coverage", "--help").out
    model = tmp_path / "config.json"  # a script still written for the old spelling
    model.write_text('{"model_type": "llama"}')
    r = cli("coverage", "--config", str(model))
    assert r.code == 2 and "invalid TOML" in r.err
    assert "hint: --config names neuronctl's own config" in r.err and "--model-config" in r.err


def test_no_color_and_json_schema(cli):
    r = cli("--no-color", "releases", "show", "2.33.0")
    assert "\x1b[" not in r.out
    data = json.loads(cli("releases", "show", "2.33.0", "--json").out)
    assert data["schema"] == 1


def test_internal_error_is_one_line_without_traceback(monkeypatch, cli):
    import neuronctl.release.manifest as manifest

    def boom(*_a, **_k):
        raise RuntimeError("kaput")

    monkeypatch.setattr(manifest, "load_bundled_manifest", boom)
    r = cli("releases")
    assert r.code == 1
    assert r.err.strip() == ("neuronctl: error: internal error: RuntimeError: kaput "
                             "(run with -v for the traceback)")
    verbose = cli("-v", "releases")
    assert "Traceback" in verbose.err


@pytest.mark.slow
def test_wheel_has_only_the_neuronctl_namespace(tmp_path):
    import zipfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(tmp_path), str(repo)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("neuronctl-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"neuronctl"}
    for sub in ("resolvers", "probes", "backend", "cli", "data"):
        assert f"neuronctl/{sub}/__init__.py" in names
    assert "neuronctl/data/releases.json" in names
