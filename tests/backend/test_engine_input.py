"""The engines, attacked (second pass): no code from the working directory runs as the engine,
and no value from a lock or an index page can add a line or an option to the engine's input.

Real engines into real venvs, real locks and index pages; the other attacks on the engines are in
test_find_links_swap.py (a wheelhouse file swapped under pip) and
test_engine_timeout.py (a trickling server against --timeout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.locks import demo_wheel, write_lock
from support.loopback import QuietHandler, serving
from support.venvs import copied_venv, said, sha256_of
from support.wheels import find_python, site_packages

from neuronctl.backend.pip_engine import PipEngine
from neuronctl.backend.uv_engine import UvEngine
from neuronctl.errors import InputError
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.requirements import render
from neuronctl.resolvers.pylock import load_pylock
from neuronctl.resolvers.simple_index import parse_project_page

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_engine.py)

NOWHERE = "http://127.0.0.1:9/files/"


def wheel_entry(wheel: Path, url: str | None = None) -> dict[str, object]:
    return {"name": wheel.name, "url": url or NOWHERE + wheel.name, "size": wheel.stat().st_size,
            "hashes": {"sha256": sha256_of(wheel)}}


def plant_impostors(folder: Path, marker: Path) -> None:
    """./pip, ./venv and ./ensurepip packages whose __main__ leaves `marker` and exits 0, as a
    cloned repository could hold them."""
    for module in ("pip", "venv", "ensurepip"):
        (folder / module).mkdir()
        (folder / module / "__init__.py").write_text("")
        (folder / module / "__main__.py").write_text(
            f"open({str(marker)!r}, 'a').write({module!r} + '\\n')\nprint('Successfully installed')\n")


# Item 1: no code from the working directory


@pytest.mark.parametrize("minor", ["3.10", "3.12"])
def test_a_pip_in_the_working_directory_never_runs_as_the_engine(cli, tmp_path, pip_venvs, minor):
    house = tmp_path / "house"
    wheel = demo_wheel(house)
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", wheel_entry(wheel)))
    python = copied_venv(pip_venvs, minor, tmp_path / "env")
    marker = tmp_path / "impostor-ran"
    plant_impostors(Path.cwd(), marker)
    r = cli("install", "--lock", str(lock), "--find-links", str(house), "--offline",
            "--python", str(python), "--engine", "pip", "--no-check")
    assert not marker.exists(), f"the working directory's {marker.read_text().split()} ran"
    assert r.code == 0, r.err
    assert said(python) == "SAID = 'good'\n"  # really installed, by the real pip


def test_a_venv_module_in_the_working_directory_never_makes_the_new_venv(cli, tmp_path):
    """`python -m venv` (and the `-m ensurepip` it runs) from a directory of neuronctl's own."""
    house = tmp_path / "house"
    wheel = demo_wheel(house)
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", wheel_entry(wheel)))
    marker = tmp_path / "impostor-ran"
    plant_impostors(Path.cwd(), marker)
    venv = tmp_path / "new"
    r = cli("install", "--lock", str(lock), "--find-links", str(house), "--offline",
            "--venv", str(venv), "--venv-python", find_python("3.10"), "--engine", "pip",
            "--no-check")
    assert not marker.exists(), f"the working directory's {marker.read_text().split()} ran"
    assert r.code == 0, r.err
    assert said(venv / "bin" / "python") == "SAID = 'good'\n"
    assert (site_packages(venv) / "pip").is_dir()  # the real ensurepip seeded it


# Item 2: a URL cannot add a line or an option


BAD_URLS = [
    NOWHERE + "demo-1.0-py3-none-any.whl\nevil @ " + NOWHERE + "evil.whl",
    NOWHERE + "demo-1.0-py3-none-any.whl\n-r /root/.netrc",
    NOWHERE + "demo-1.0-py3-none-any.whl -r /root/.netrc",
    NOWHERE + "demo-1.0-py3-none-any.whl\t--index-url=http://127.0.0.1:9/",
    NOWHERE + "demo-1.0-py3-none-any.whl\r--extra-index-url http://127.0.0.1:9/",
    NOWHERE + "\x1b]52;c;aGk=\x07demo-1.0-py3-none-any.whl",
    NOWHERE + "demo\u2028-1.0-py3-none-any.whl",
    NOWHERE + "demo\x00-1.0-py3-none-any.whl",
    "ftp://127.0.0.1/demo-1.0-py3-none-any.whl",
    "javascript:alert(1)//demo-1.0-py3-none-any.whl",
    "data:application/zip;base64,UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==",
    "demo-1.0-py3-none-any.whl",
]


@pytest.mark.parametrize("url", BAD_URLS, ids=range(len(BAD_URLS)))
def test_a_lock_url_that_is_not_one_plain_url_is_exit_2_naming_the_lock_and_package(cli, tmp_path, url):
    wheel = demo_wheel(tmp_path / "house")
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", wheel_entry(wheel, url)))
    with pytest.raises(InputError, match=r"\(demo 1\.0\): wheels\[0\]: the URL"):
        load_pylock(lock)
    r = cli("install", "--lock", str(lock), "--venv", str(tmp_path / "env"), "--dry-run")
    assert r.code == 2, r.err + r.out
    assert str(lock) in r.err and "(demo 1.0)" in r.err and "Traceback" not in r.err
    assert "\x1b" not in r.err and "\x07" not in r.err
    assert not (tmp_path / "env").exists()


def test_a_second_requirement_hidden_in_a_url_is_never_installed(cli, tmp_path, pip_venvs):
    """The attack end to end with the real pip: a newline in the url adds `evil @ file:...`, and
    the lock's sha256 (the attacker's) is the one pip checks it against; before, pip installed
    both, exit 0. Refused at load: nothing installed, exit 2."""
    house = tmp_path / "house"
    good, evil = demo_wheel(house), demo_wheel(tmp_path / "elsewhere", "evil", said="evil")
    injected = f"{good.as_uri()} --hash=sha256:{sha256_of(good)}\nevil @ {evil.as_uri()}"
    entry = {**wheel_entry(good, injected), "hashes": {"sha256": sha256_of(evil)}}
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", entry))
    python = copied_venv(pip_venvs, "3.12", tmp_path / "env")
    r = cli("install", "--lock", str(lock), "--python", str(python), "--engine", "pip", "--no-check")
    assert said(python, "evil") is None and said(python) is None
    assert r.code == 2, r.err + r.out
    assert "(demo 1.0)" in r.err and "whitespace or control characters" in r.err


@pytest.mark.parametrize("field", ["name", "version", "filename", "url", "sha256"])
def test_no_value_of_the_engine_input_can_start_a_line_or_an_option(field):
    """The engine's input is built from values each checked again where it is made, whoever
    made them (a lock, a resolution, a wheelhouse, the seed pip)."""
    good = {"name": "demo", "version": "1.0", "filename": "demo-1.0-py3-none-any.whl",
            "url": NOWHERE + "demo-1.0-py3-none-any.whl", "sha256": "a" * 64}
    LockedFile(**good).checked()  # type: ignore[arg-type]
    for bad in ("\n-r /root/.netrc", " --index-url http://127.0.0.1:9/", "\r#"):
        with pytest.raises(InputError):
            LockedFile(**{**good, field: good[field] + bad}).checked()  # type: ignore[arg-type]
        with pytest.raises(InputError):  # and the engine's input never holds one unchecked
            render([LockedFile(**{**good, field: good[field] + bad})], PipEngine(), {})  # type: ignore[arg-type]


def test_an_environment_variable_in_a_url_is_never_expanded_by_pip(cli, tmp_path, pip_venvs,
                                                                monkeypatch):
    """pip puts `${NAME}` in a requirements file's lines to the value of that environment
    variable: a lock whose url holds `${AWS_SECRET_ACCESS_KEY}` would send the secret to its
    server. The engine gets the URL with `{` `}` percent-encoded: the server sees the name."""
    monkeypatch.setenv("NEURONCTL_TEST_SECRET", "s3cr3t-value")
    wheel = demo_wheel(tmp_path / "house")
    paths: list[str] = []

    class Recorder(QuietHandler):
        def do_GET(self) -> None:
            paths.append(self.path)
            self.send_error(404)

    with serving(Recorder) as base:
        url = f"{base}/${{NEURONCTL_TEST_SECRET}}/{wheel.name}"
        lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", wheel_entry(wheel, url)))
        python = copied_venv(pip_venvs, "3.12", tmp_path / "env")
        r = cli("install", "--lock", str(lock), "--python", str(python), "--engine", "pip",
                "--no-check")
    assert r.code != 0 and said(python) is None
    assert paths, "pip never asked the server"
    assert all("s3cr3t" not in p for p in paths), paths
    text = render([LockedFile("demo", "1.0", wheel.name, url, sha256_of(wheel))], PipEngine(), {})
    assert "${" not in text and "%7BNEURONCTL_TEST_SECRET%7D" in text


@pytest.mark.parametrize("link", [
    "demo-1.0-py3-none-any.whl -r /root/.netrc",
    "demo-1.0-py3-none-any.whl\n-r /root/.netrc",
    "demo-1.0-py3-none-any.whl\t",
    "\x1b[2Jdemo-1.0-py3-none-any.whl",
    "ftp://127.0.0.1/demo-1.0-py3-none-any.whl",
])
def test_an_index_page_link_that_is_not_one_plain_url_makes_that_file_unusable(link):
    """urljoin drops tabs and newlines without a word (and keeps spaces): the link is checked
    as the page wrote it, and the file is unusable, named in the resolution's error."""
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "demo", "files": [
        {"filename": "demo-1.0-py3-none-any.whl", "url": link, "hashes": {"sha256": "a" * 64}},
        {"filename": "demo-1.1-py3-none-any.whl", "url": "demo-1.1-py3-none-any.whl",
         "hashes": {"sha256": "b" * 64}}]})
    bad, ok = parse_project_page(body, "application/vnd.pypi.simple.v1+json",
                                 "http://127.0.0.1:9/simple/demo/", "demo")
    assert bad.unusable and not bad.url
    assert ok.url == "http://127.0.0.1:9/simple/demo/demo-1.1-py3-none-any.whl" and not ok.unusable


def test_uv_input_holds_each_url_as_one_toml_string(tmp_path):
    """uv's pylock.toml: the same checked, encoded URL, one TOML string per value."""
    from neuronctl.tomlfile import read_toml

    url = NOWHERE + "${HOME}/d\u00e9mo-1.0-py3-none-any.whl"
    text = render([LockedFile("demo", "1.0", "demo-1.0-py3-none-any.whl", url, "a" * 64)], UvEngine("uv"), {})
    (tmp_path / "pylock.toml").write_text(text)
    (pkg,) = read_toml(tmp_path / "pylock.toml", "lock")["packages"]
    assert pkg["wheels"][0]["url"] == NOWHERE + "$%7BHOME%7D/d%C3%A9mo-1.0-py3-none-any.whl"


@pytest.mark.parametrize("name", ["-r/root/.netrc", "--index-url=http://127.0.0.1:9/", "a b", "x\ny"])
def test_a_removal_never_puts_an_option_on_the_engines_argv(name, tmp_path):
    """The names removed come from the probed environment's metadata: one that reads as an
    option (`pip uninstall --yes -r FILE`) is refused, not run."""
    from neuronctl.backend.pip_engine import PipEngine
    from neuronctl.backend.plan import Change, Plan
    from neuronctl.backend.uv_engine import UvEngine
    from neuronctl.ops.install.apply import apply_steps
    from neuronctl.ops.install.target import InstallTarget

    plan = Plan((Change("remove", name, "1.0", None, None, "legacy"),))
    target = InstallTarget(str(tmp_path / "env" / "bin" / "python"))
    for engine in (PipEngine(), UvEngine("/usr/bin/uv")):
        with pytest.raises(InputError, match="not a valid package name"):
            apply_steps(plan, tmp_path / "requirements.txt", target, engine)


def test_a_uv_or_python_in_the_working_directory_is_never_found_through_a_relative_path(tmp_path):
    """PATH=.:... (or an empty entry) names the working directory: a ./uv or ./python3.12 there
    is not taken for the engine or a new venv's base."""
    import os

    from neuronctl.backend.choose import find_uv
    from neuronctl.ops.interpreters import find_interpreter

    for name in ("uv", "python3.12"):
        fake = Path.cwd() / name
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
    for path in (".", "", f"bin{os.pathsep}.", f".{os.pathsep}/nonexistent"):
        env = {"PATH": path, "PYENV_ROOT": str(tmp_path / "no-pyenv")}
        uv = find_uv(env)
        assert uv is None or (Path(uv).is_absolute() and Path(uv).parent != Path.cwd()), uv
        assert find_interpreter("3.12", env) is None
