"""`neuronctl init` writes [tool.neuronctl] and leaves every other byte of pyproject.toml alone."""

from pathlib import Path

from neuronctl.tomlfile import read_toml

ORIGINAL = '''# top comment
[project]
name = "demo"   # trailing comment
version = "0.1"
dependencies = [
    "requests",  # keep me
]

[tool.ruff]
line-length = 99

[tool.neuronctl]
strict = true   # my own key stays
python = "3.13"

[tool.other]
x = 1
'''


def test_init_creates_pyproject(cli):
    r = cli("init")
    assert r.code == 0, r.err
    table = read_toml(Path("pyproject.toml"), "pyproject")["tool"]["neuronctl"]
    assert table == {"release": "2.33.1", "torch": "2.14", "python": ["3.12"]}
    r = cli("init")
    assert r.code == 0 and "already up to date" in r.out


def test_init_updates_only_its_table(cli):
    Path("pyproject.toml").write_text(ORIGINAL)
    r = cli("init", "--release", "2.33.0", "--torch", "2.13")
    assert r.code == 0, r.err
    text = Path("pyproject.toml").read_text()
    start = text.index("[tool.neuronctl]")
    end = text.index("[tool.other]")
    assert text[:start] == ORIGINAL[:ORIGINAL.index("[tool.neuronctl]")]
    assert text[end:] == ORIGINAL[ORIGINAL.index("[tool.other]"):]
    block = text[start:end]
    assert "strict = true   # my own key stays" in block
    table = read_toml(Path("pyproject.toml"), "pyproject")["tool"]["neuronctl"]
    assert table["python"] == "3.13" and table["torch"] == "2.13" and table["release"] == "2.33.0"
    # The written config drives lock's defaults.
    assert cli("lock", "--check").code == 1


def test_init_bad_input_changes_nothing(cli):
    Path("pyproject.toml").write_text(ORIGINAL)
    for args, text in ((["--release", "1.0.0"], "unknown Neuron release"),
                       (["--torch", "2.5"], "offers torch"),
                       (["--python", "3.11"], "supports Python")):
        r = cli("init", *args)
        assert r.code == 2 and text in r.err
    Path("broken").mkdir()
    (Path("broken") / "pyproject.toml").write_text("[tool\n")
    import os

    os.chdir("broken")
    r = cli("init")
    assert r.code == 2 and "invalid TOML" in r.err
    assert Path("pyproject.toml").read_text() == "[tool\n"
    os.chdir("..")
    assert Path("pyproject.toml").read_text() == ORIGINAL


def test_init_edits_a_symlinked_pyproject_at_its_target(cli, tmp_path):
    """A link to a file inside the project (a link out of it is refused: test_init_links)."""
    shared = Path.cwd() / "shared" / "pyproject.toml"
    shared.parent.mkdir()
    shared.write_text(ORIGINAL)
    Path("pyproject.toml").symlink_to(shared)
    r = cli("init", "--torch", "2.13")
    assert r.code == 0, r.err
    assert Path("pyproject.toml").is_symlink() and Path("pyproject.toml").resolve() == shared
    assert read_toml(shared, "pyproject")["tool"]["neuronctl"]["torch"] == "2.13"


def test_docs_and_init_agree_on_keys_in_the_table(cli):
    """docs/lock.md (the reference moved out of the README): settings init does not set stay (with their comments); a key neuronctl does not
    know is an error naming the file and the key, so a typo is never silently ignored."""
    readme = " ".join((Path(__file__).resolve().parents[2] / "docs" / "lock.md").read_text().split())
    assert "your own keys inside it, stay" not in readme
    assert "a key neuronctl does not know is an error" in readme
    Path("pyproject.toml").write_text(ORIGINAL.replace("python = ", "backend = \"uv\"  # mine\npython = "))
    assert cli("init", "--torch", "2.13").code == 0
    assert 'backend = "uv"  # mine' in Path("pyproject.toml").read_text()
    before = ORIGINAL.replace("strict = true", "relase = \"2.33.0\"")
    Path("pyproject.toml").write_text(before)
    r = cli("init")
    assert r.code == 2 and "unknown key 'relase'" in r.err and "pyproject.toml" in r.err
    assert Path("pyproject.toml").read_text() == before


def test_init_writes_the_platforms_it_is_given(cli):
    """--platform was accepted and silently ignored; it is validated and written, and lock uses it."""
    r = cli("init", "--platform", "manylinux2014_aarch64", "--platform", "manylinux_2_28_x86_64")
    assert r.code == 0, r.err
    table = read_toml(Path("pyproject.toml"), "pyproject")["tool"]["neuronctl"]
    assert table["platform"] == ["manylinux_2_17_aarch64", "manylinux_2_28_x86_64"]
    before = Path("pyproject.toml").read_text()
    r = cli("init", "--platform", "win_amd64")
    assert r.code == 2 and "--platform 'win_amd64'" in r.err
    assert Path("pyproject.toml").read_text() == before
    assert cli("init").out.endswith("already up to date\n")  # kept when not given


def test_init_json_outcome(cli):
    import json

    doc = json.loads(cli("init", "--json").out)
    assert doc["command"] == "init" and doc["created"] is True and doc["written"] is True
    assert doc["changed"] == ['release = "2.33.1"', 'torch = "2.14"', 'python = ["3.12"]']
    again = json.loads(cli("init", "--json").out)
    assert again["written"] is False and again["changed"] == []


def test_init_is_an_operation_with_an_outcome(tmp_path):

    import pytest

    from neuronctl.errors import InputError
    from neuronctl.ops.init import InitRequest, init_project
    from neuronctl.ops.reporter import CollectingReporter
    from neuronctl.release.manifest import load_manifest

    path = tmp_path / "pyproject.toml"
    path.write_text(ORIGINAL)
    reporter = CollectingReporter()
    outcome = init_project(InitRequest(path, load_manifest(None), torch="2.13"), reporter)
    assert not outcome.created and outcome.changed == ('release = "2.33.1"', 'torch = "2.13"')
    assert reporter.messages("done") == [f"updated {path}"]
    with pytest.raises(AttributeError, match="immutable"):
        outcome.created = True  # type: ignore[misc]
    same = init_project(InitRequest(path, load_manifest(None), torch="2.13"))
    assert not same.written
    written = path.read_text()
    with pytest.raises(InputError, match="supports Python"):
        init_project(InitRequest(path, load_manifest(None), pythons=("3.11",)))
    assert path.read_text() == written
