"""No secret in any output (issue 11 §2), and index names that match nothing are errors (issue 12).

A private index with Basic auth works end to end, while its password appears in no output, lock
or error; credentials go to their own origin only; every text crossing the error boundary is
redacted."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import ClassVar
from urllib.parse import urljoin

import pytest
from support.loopback import QuietHandler, serving
from support.private_index import ENCODED, GOOD, PASSWORD, USER, assert_no_secret, private_universe

from neuronctl.backend.pip_engine import PipEngine
from neuronctl.errors import InputError
from neuronctl.ops.index_routing import IndexSources, route_indexes
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.routing import IndexURL, load_default_routing


def test_private_index_with_basic_auth_locks_and_the_password_is_nowhere(cli, wheels):
    with private_universe(wheels) as (uni, private_seen, others_seen):
        secret_url = uni.urls["pypi"].replace("http://", f"http://{ENCODED}@")
        flags = [f"--index=pypi={secret_url}", f"--index=pytorch-cpu={uni.urls['pytorch-cpu']}",
                 f"--index=neuron={uni.urls['neuron']}", "--python", "3.12"]
        r = cli("lock", *flags)
        assert r.code == 0, r.err
        lock = Path("pylock.toml").read_text()
        assert_no_secret(r.out, r.err, lock)
        assert uni.urls["pypi"] in lock and "typing-extensions" in lock
        assert private_seen and set(private_seen) == {GOOD}  # every request authenticated
        assert others_seen and set(others_seen) == {None}  # and no other origin got them
        r = cli("lock", *flags, "--json")
        assert r.code == 0, r.err
        assert_no_secret(r.out, r.err)
        assert json.loads(r.out)["routing"]["indexes"]["pypi"] == uni.urls["pypi"]
        # The check names the command to refresh the lock, credentials left to ~/.netrc.
        r = cli("lock", *flags, "--python", "3.13", "--check")
        assert r.code == 1
        assert_no_secret(r.out, r.err)
        assert f"--index=pypi={uni.urls['pypi']}" in r.err and "--python-version=3.13" in r.err
        # Without the password the index refuses: the credentials above really were used.
        r = cli("lock", f"--index=pypi={uni.urls['pypi']}", *flags[1:], "-o", "pylock.other.toml")
        assert r.code == 1 and "401" in r.err


class RedirectHome(QuietHandler):
    """Answers /same with a redirect to /landing on itself and /away with one to `elsewhere`;
    records the Authorization header of each request."""

    elsewhere = ""
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        target = {"/same": "/landing", "/away": self.elsewhere}.get(self.path)
        if target:
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.reply("ok")


def test_credentials_go_to_their_own_origin_only_even_across_redirects():
    class Elsewhere(RedirectHome):
        seen: ClassVar[list[tuple[str, str | None]]] = []

    class Home(RedirectHome):
        seen: ClassVar[list[tuple[str, str | None]]] = []

    with serving(Elsewhere) as other, serving(Home) as home:
        Home.elsewhere = other + "/stolen"
        index = IndexURL(home.replace("http://", f"http://{ENCODED}@") + "/simple")
        routing = load_default_routing().with_index("pypi", index)
        fetcher = Fetcher(retries=0, timeout=5, credentials=routing.credentials())
        for path in ("/simple/x/", "/same", "/away"):
            assert fetcher.get(urljoin(str(index) + "/", path)).status_code == 200
        assert fetcher.get(other + "/direct").status_code == 200
    assert dict(Home.seen) == {"/simple/x/": GOOD, "/same": GOOD, "/landing": GOOD, "/away": GOOD}
    assert dict(Elsewhere.seen) == {"/stolen": None, "/direct": None}


def test_index_url_shows_no_credentials_in_any_string_form():
    url = IndexURL(f"https://{ENCODED}@private.example:8443/simple/")
    assert url == "https://private.example:8443/simple"
    for text in (str(url), repr(url), f"{url}", f"{url!r}", json.dumps(url), urljoin(url + "/", "torch/"),
                 repr(copy.deepcopy(url)), repr(pickle.loads(pickle.dumps(url))), repr([url])):
        assert_no_secret(text)
        assert "private.example:8443" in text
    routing = load_default_routing().with_index("pypi", url)
    assert routing.credentials() == {("https", "private.example", 8443): (USER, PASSWORD)}
    assert_no_secret(repr(routing), json.dumps(routing.to_json()), routing.url_for("numpy"))


def test_restore_commands_never_embed_credentials():
    routing = route_indexes(IndexSources(environ={}, index_flags=[
        f"pypi=https://{ENCODED}@private.example/simple"]))
    for url_for in (routing.url_for, lambda _name: f"https://{ENCODED}@private.example/simple"):
        cmds = PipEngine().restore_commands("/v/bin/python", {"numpy": "1.0"}, {"numpy": "2.0", "x": "1"}, url_for)
        text = json.dumps(cmds)
        assert_no_secret(text)
        assert "https://private.example/simple" in text and "numpy==1.0" in text


@pytest.mark.parametrize("args, env", [
    (["lock", f"--index=http://{ENCODED}@127.0.0.1:9/simple"], {}),  # no NAME=
    (["lock", f"--index=pypi={ENCODED}@127.0.0.1:9/simple"], {}),  # no scheme
    (["lock"], {"NEURONCTL_INDEX_PYPI": f"{ENCODED}@127.0.0.1:9/simple"}),  # no scheme, from env
    (["lock", f"--index=pypi=http://{ENCODED}@127.0.0.1:port/simple"], {}),  # port not a number
    (["lock", "--timeout", f"http://{ENCODED}@h"], {}),  # click quotes the value back
    (["lock", f"--route=torch=http://{ENCODED}@h"], {}),  # unknown index named by a URL
    # a long password: a message that cut the URL before redacting it lost the '@' marking it
    (["releases", "update", "--from", f"http://{ENCODED}{'x' * 130}@m.example/m.json"], {}),
    (["releases", "update"], {"NEURONCTL_MANIFEST_URL": f"http://{ENCODED}{'x' * 130}@m.example/m"}),
    (["setup", "--repo", f"ftp://{ENCODED}{'x' * 90}@repo.example/apt"], {}),
    (["lock", f"--index=pypi=ftp://{ENCODED}{'x' * 130}@m.example/simple"], {}),
])
def test_rejected_values_are_exit_2_without_their_credentials(cli, monkeypatch, args, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    r = cli(*args)
    assert r.code == 2, r.err
    assert "internal error" not in r.err
    assert_no_secret(r.out, r.err)


def test_internal_errors_and_tracebacks_pass_the_redactor(cli, monkeypatch):
    import neuronctl.cli.cmd_env as cmd_env

    def boom(*_args: object) -> None:
        raise RuntimeError(f"InvalidURL: http://{ENCODED}@h:x/ with Authorization: Bearer HUSHtok")

    monkeypatch.setattr(cmd_env, "collect", boom)
    for flags in ([], ["-v"]):
        r = cli(*flags, "env")
        assert r.code == 1 and "internal error: RuntimeError" in r.err
        assert_no_secret(r.out, r.err)
    assert "Traceback" in r.err


def test_unknown_index_names_are_exit_2_listing_the_known_ones(cli, monkeypatch, isolated_env):
    r = cli("lock", "--index=neurn=http://127.0.0.1:9/simple")
    assert r.code == 2 and "unknown index 'neurn'" in r.err and "did you mean 'neuron'" in r.err
    assert "neuron, pypi, pytorch-cpu" in r.err
    r = cli("lock", "--route=torch=pytorchcpu")
    assert r.code == 2 and "unknown index 'pytorchcpu'" in r.err and "pytorch-cpu" in r.err
    monkeypatch.setenv("NEURONCTL_INDEX_PYTORCHCPU", "http://127.0.0.1:9/simple")
    r = cli("lock")
    assert r.code == 2 and "NEURONCTL_INDEX_PYTORCHCPU" in r.err
    assert "did you mean 'NEURONCTL_INDEX_PYTORCH_CPU'?" in r.err
    monkeypatch.delenv("NEURONCTL_INDEX_PYTORCHCPU")
    (isolated_env / "pyproject.toml").write_text(
        '[tool.neuronctl]\nindexes = { nueron = "http://127.0.0.1:9/simple" }\n')
    r = cli("lock")
    assert r.code == 2 and "indexes: nueron" in r.err and "unknown index 'nueron'" in r.err
    (isolated_env / "pyproject.toml").write_text('[tool.neuronctl]\nroutes = { torch = "nueron" }\n')
    r = cli("lock")
    assert r.code == 2 and "routes: torch" in r.err and "unknown index 'nueron'" in r.err


def test_a_projects_index_over_plain_http_off_this_machine_is_refused(cli, monkeypatch,
                                                                      isolated_env):
    """A checkout's pyproject.toml may name a mirror over https (or a loopback one), never a plain
    http host (what it serves could be changed on the way, and ~/.netrc's password for it would
    go in clear); the user's own config, the environment and --index still may."""
    for name in ("PYPI", "PYTORCH_CPU", "NEURON"):
        monkeypatch.delenv(f"NEURONCTL_INDEX_{name}", raising=False)
    (isolated_env / "pyproject.toml").write_text(
        f'[tool.neuronctl]\nindexes = {{ neuron = "http://{ENCODED}@mirror.example/simple" }}\n')
    r = cli("lock", "--offline")
    assert r.code == 2 and "indexes: neuron" in r.err and "is plain http" in r.err, r.err
    assert "NEURONCTL_INDEX_NEURON" in r.err and len(r.err.strip().splitlines()) == 1
    assert_no_secret(r.out, r.err)
    mine = isolated_env / "mine.toml"  # a file the user names is theirs
    mine.write_text('[tool.neuronctl]\nindexes = { neuron = "http://mirror.example/simple" }\n')
    assert "is plain http" not in cli("--config", str(mine), "lock", "--offline").err
    monkeypatch.setenv("NEURONCTL_INDEX_NEURON", "http://mirror.example/simple")
    assert "is plain http" not in cli("lock", "--offline").err
    # a look-alike name (a Greek omicron) is no index name at all
    (isolated_env / "pyproject.toml").write_text(
        '[tool.neuronctl]\nindexes = { "neur\u03bfn" = "https://m.example/simple" }\n'
        'routes = { nki = "neur\u03bfn" }\n')
    r = cli("lock", "--offline")
    assert r.code == 2 and "invalid index name" in r.err, r.err


def test_an_engines_failure_lines_are_redacted_before_they_are_cut():
    """pip prints the requirement with the credentials neuronctl gave it; a token of a thousand
    characters put the '@' past the cut, and the rest of the password was shown."""
    from neuronctl.backend.external_tool import failure_lines

    said = f"ERROR: Could not install requirement demo@ http://{ENCODED}{'Q' * 400}@127.0.0.1/x"
    lines = failure_lines(said)
    assert lines and lines[0].startswith("ERROR: Could not install requirement demo@ http://")
    assert_no_secret(*lines)
    assert "QQQQ" not in "".join(lines)


def test_the_users_and_the_projects_indexes_layer_one_index_at_a_time(tmp_path):
    """Each index is its own value: a project's table replaces the user's entries it names and no
    others (an empty table once dropped the user's mirrors, and the run went to the public
    indexes), and an error names the file the entry is in."""
    from neuronctl.config import Config
    from neuronctl.ops.index_routing import index_sources
    from neuronctl.settings import Resolver

    def routed(project: dict, user: dict) -> dict[str, str]:
        mine = Config({"indexes": user}, str(tmp_path / "user.toml"), tmp_path, named=True)
        config = Config(project, str(tmp_path / "pyproject.toml"), tmp_path)
        routing = route_indexes(index_sources(Resolver.of(config, environ={}, user=mine)))
        return {name: str(url) for name, url in routing.indexes.items()}

    mirrors = {"neuron": "https://mine.example/neuron", "pypi": "https://mine.example/pypi"}
    assert routed({"indexes": {}}, mirrors)["neuron"] == "https://mine.example/neuron"
    assert routed({"indexes": {"pypi": ""}}, mirrors)["pypi"] == "https://mine.example/pypi"
    both = routed({"indexes": {"pypi": "https://team.example/pypi"}}, mirrors)
    assert both["neuron"] == "https://mine.example/neuron" and both["pypi"] == "https://team.example/pypi"
    for host in ("team.example", "127.team.example", "127.0.0.1.team.example"):
        with pytest.raises(InputError, match=r"pyproject\.toml: indexes: pypi: .* is plain http"):
            routed({"indexes": {"pypi": f"http://{host}/pypi"}}, mirrors)  # the project's: refused
    with pytest.raises(InputError, match="holds a backslash"):  # loopback to Python, not to uv
        routed({"indexes": {"pypi": "http://evil.example\\@127.0.0.1/simple"}}, mirrors)
    for host in ("127.0.0.1", "127.1.2.3", "[::1]", "localhost"):
        assert routed({"indexes": {"pypi": f"http://{host}:8/s"}}, mirrors)["pypi"].startswith("http://")
    plain = {"neuron": "http://mine.example/neuron"}  # the user's own network: theirs to choose
    assert routed({"indexes": {}}, plain)["neuron"] == "http://mine.example/neuron"
    with pytest.raises(InputError, match=r"user\.toml: indexes: nueron"):
        routed({}, {"nueron": "https://x.example/simple"})
    # a project's entry that replaces one of yours says so, naming both files (no credentials)
    notes: list[str] = []
    mine = Config({"indexes": {"corp": f"https://{ENCODED}@corp.example/s"},
                   "routes": {"nki": "corp", "neuronx-cc": "corp"}},
                  str(tmp_path / "user.toml"), tmp_path, named=True)
    config = Config({"routes": {"nki": "pypi"}, "indexes": {"corp": "https://team.example/s"}},
                    str(tmp_path / "pyproject.toml"), tmp_path)
    route_indexes(index_sources(Resolver.of(config, notes.append, environ={}, user=mine)))
    assert any("pyproject.toml: routes: nki = 'pypi' replaces 'corp' from" in n and "user.toml" in n
               for n in notes), notes
    assert any("indexes: corp = 'https://team.example/s' replaces 'https://corp.example/s'" in n
               for n in notes), notes
    assert_no_secret(*notes)


def test_a_new_index_needs_a_route_and_a_locks_recorded_names_are_known():
    url = "http://127.0.0.1:9/simple"
    routing = route_indexes(IndexSources(environ={}, index_flags=[f"private={url}"],
                                         route_flags=["typing-extensions=private"]))
    assert routing.index_for("typing_extensions") == "private" and routing.url_for("x") != url
    routing = route_indexes(IndexSources({"private": url}, {"nki": "private"}, environ={}))
    assert routing.index_for("nki") == "private"
    routing = route_indexes(IndexSources(environ={}, index_flags=[f"private={url}"]),
                            recorded={"private": url})
    assert routing.indexes["private"] == url
    routing = route_indexes(IndexSources(environ={"NEURONCTL_INDEX_MIRROR": url}),
                            recorded={"mirror": "http://127.0.0.1:8/simple"})
    assert routing.indexes["mirror"] == "http://127.0.0.1:8/simple"  # the lock's, as documented


def test_a_lock_may_not_choose_plain_http_off_this_machine(cli, tmp_path, monkeypatch):
    """A lock is a checkout's file: a wheel URL or a recorded index over plain http to another
    host is refused before anything is fetched (pip, uv and neuronctl would send ~/.netrc's
    password for it in clear), unless the user set an index on that origin themselves."""
    from support.locks import write_lock

    mirror = "http://mirror.corp.example"
    wheel = {"name": "demo-1.0-py3-none-any.whl", "url": f"{mirror}/packages/demo-1.0-py3-none-any.whl",
             "hashes": {"sha256": "0" * 64}}
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", wheel))
    for args in (["download", "--lock", str(lock), "-d", str(tmp_path / "wh")],
                 ["install", "--lock", str(lock), "--venv", str(tmp_path / "v"), "--dry-run"]):
        r = cli(*args)
        assert r.code == 2 and "is plain http off this machine, which a lock may not choose" in r.err, r.err
        assert not (tmp_path / "wh").exists() and not (tmp_path / "v").exists()
    with pytest.raises(InputError, match=r"the lock's index corp: .* plain http off this machine"):
        route_indexes(IndexSources(environ={}), recorded={"corp": f"{mirror}/simple"})
    # the user's own index on that origin: theirs to choose
    routing = route_indexes(IndexSources(environ={"NEURONCTL_INDEX_PYPI": f"{mirror}/simple"}),
                            recorded={"corp": f"{mirror}/simple"})
    routing.check_lock_url(wheel["url"], "the lock")
    monkeypatch.setenv("NEURONCTL_INDEX_PYPI", f"{mirror}/simple")
    r = cli("install", "--lock", str(lock), "--venv", str(tmp_path / "v"), "--dry-run")
    assert "which a lock may not choose" not in r.err, r.err


def test_check_lists_each_change_once_and_shows_no_recorded_credentials(cli, uni):
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    text = Path("pylock.toml").read_text()
    planted = text.replace(uni.urls["pypi"], uni.urls["pypi"].replace("http://", f"http://{ENCODED}@"))
    assert planted != text
    Path("pylock.toml").write_text(planted)
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--torch", "2.13", "--check")
    assert r.code == 1
    assert_no_secret(r.out, r.err)
    lines = [ln for ln in r.err.splitlines() if "out of date" in ln]
    assert len(lines) == len(set(lines))
    assert sum("torch-neuronx" in ln for ln in lines) == 1 and sum("'2.13.0'" in ln for ln in lines) == 1
    assert not any("indexes" in ln for ln in lines)  # the same index, credentials or not
    assert f"hint: refresh it with: neuronctl lock --torch=2.13 --index=pypi={uni.urls['pypi']} " in r.err
    assert r.err.rstrip().endswith("--python-version=3.12")


def test_lock_notes_a_beta_release_once_and_not_under_json_or_quiet(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 0, r.err
    assert r.err.count("beta") == 1 and "Neuron 2.33.1 is a beta release" in r.err
    assert "beta" not in r.out
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--json")
    assert r.code == 0 and "beta" not in r.err
    r = cli("-q", "lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 0 and "beta" not in r.err


def test_install_from_a_private_index_downloads_with_credentials_and_shows_none(cli, wheels, tmp_path):
    with private_universe(wheels) as (uni, private_seen, others_seen):
        secret_url = uni.urls["pypi"].replace("http://", f"http://{ENCODED}@")
        venv = tmp_path / "env"
        r = cli("install", f"--index=pypi={secret_url}", f"--index=pytorch-cpu={uni.urls['pytorch-cpu']}",
                f"--index=neuron={uni.urls['neuron']}", "--release", "2.33.0", "--torch", "2.13",
                "--venv", str(venv), "--venv-python", "3.13", "--engine", "uv", "--no-check", "--json")
        assert r.code == 0, r.err + r.out
        assert_no_secret(r.out, r.err)
        whole = [path for _method, path, ranged in uni.pypi.hits if path.endswith(".whl") and not ranged]
        assert whole  # the install's own downloads (not the resolver's) came from the private index
        assert set(private_seen) == {GOOD} and set(others_seen) == {None}
