"""Issue 31, items 1 and 6, tried as an attacker would: a cloned repository's pyproject.toml sets
a trust root (where release data comes from, the release data itself, the system repository,
what a node's health check drains for) and a command run in it must not use it; plain http is
refused for them; `releases update` refuses a rollback, changes a release it knows only with
--accept-changes, and says where the data in use came from. Real loopback servers (https with a
certificate trusted through REQUESTS_CA_BUNDLE), real files, the real CLI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.bundled_releases import NEXT, bundled_json
from support.loopback import QuietHandler, serving

from neuronctl.release.manifest import load_bundled_manifest, load_default_manifest, stored_manifest_path

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile3_trust_roots.py)

BUNDLED = load_bundled_manifest()


class Site:
    """What a loopback server answers (path -> status, body, headers) and what was asked."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self.hits: list[str] = []


def _handler(state: Site) -> type[QuietHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            state.hits.append(self.path)
            status, body, headers = state.pages.get(self.path, (404, b"no", {}))
            self.send_response(status)
            for name, value in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


@pytest.fixture(autouse=True)
def isolated(tls, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls[0]))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture
def https(tls) -> Iterator[tuple[Site, str]]:
    state = Site()
    with serving(_handler(state), tls) as url:
        yield state, url


@pytest.fixture
def plain() -> Iterator[tuple[Site, str]]:
    state = Site()
    with serving(_handler(state)) as url:
        yield state, url


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned repository, the working directory."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    monkeypatch.chdir(repo)
    return repo


def user_config_file() -> Path:
    """Where the user's own config is documented to be (conftest sets XDG_CONFIG_HOME)."""
    return Path(os.environ["XDG_CONFIG_HOME"]) / "neuronctl" / "config.toml"


def _write_project_config(repo: Path, body: str) -> None:
    (repo / "pyproject.toml").write_text(f"[tool.neuronctl]\n{body}\n")


def _mine(body: str) -> Path:
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body + "\n")
    return path


def _downgrade(data: dict) -> None:
    """A new release (the issue's "2.35.0"; NEXT): the newest stack's shape, 2.18.0's driver
    and runtime."""
    old = next(r for r in data["releases"] if r["version"] == "2.18.0")
    new = json.loads(json.dumps(next(r for r in data["releases"] if r["version"] == "2.33.1"))
                     .replace("2.14.3.0", "2.14.4.0"))
    new.update(version=NEXT, date="2027-01-20", sources={"*": "rn-2.33.1"})
    new["system"] = dict(old["system"])
    data["releases"].insert(0, new)


def _one_line_note(err: str, *parts: str) -> None:
    lines = [line for line in err.splitlines() if all(p in line for p in parts)]
    assert len(lines) == 1 and lines[0].startswith("neuronctl: note:"), err


# -- item 1: a project file never moves a trust root ---------------------------------------------

def test_a_projects_manifest_url_is_never_fetched(cli, checkout, https, tmp_path) -> None:
    state, url = https
    state.pages["/n2.json"] = (200, bundled_json(_downgrade), {})
    _write_project_config(checkout, f'manifest_url = "{url}/n2.json"')
    good = tmp_path / "mine.json"
    good.write_bytes(bundled_json())
    _mine(f'manifest_url = "{good.as_uri()}"')  # the user's own source: nothing new there
    r = cli("releases", "update")
    assert r.code == 0, r.err
    assert state.hits == []  # the project's URL was not even asked
    assert f"fetched {good.as_uri()}" in r.out and "nothing new" in r.out
    _one_line_note(r.err, str(checkout / "pyproject.toml"), "`manifest_url` is not used")
    assert not stored_manifest_path().exists()


def test_a_projects_release_data_file_is_not_used(cli, checkout) -> None:
    data = json.loads(bundled_json(_downgrade))
    (checkout / "rel.json").write_text(json.dumps(data))
    _write_project_config(checkout, 'manifest = "rel.json"')
    r = cli("releases", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["manifest"] == "bundled manifest" and doc["default"]["version"] != NEXT
    _one_line_note(r.err, "pyproject.toml", "`manifest` is not used")
    # the user's own config still chooses a file, as do the flag and the variable
    _mine(f'manifest = "{checkout / "rel.json"}"')
    mine = json.loads(cli("releases", "--json").out)
    assert mine["manifest"] == str(checkout / "rel.json")


def test_a_projects_system_repository_is_not_planned(cli, checkout) -> None:
    _write_project_config(checkout, 'system_repo = "https://mirror.attacker.test/neuron"')
    r = cli("setup", "--os", "ubuntu-24.04", "--chip", "trn2", "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)["setup"]
    assert plan["repo"] == "https://apt.repos.neuron.amazonaws.com"
    assert plan["origins"]["repository"].startswith("default: AWS's apt repository")
    _one_line_note(r.err, "pyproject.toml", "`system_repo` is not used")
    script = cli("setup", "--os", "ubuntu-24.04", "--chip", "trn2", "--format", "sh").out
    assert "attacker" not in script


def test_the_users_own_config_sets_a_trust_root_and_is_named(cli, checkout) -> None:
    mine = _mine('system_repo = "https://mirror.internal.test/neuron/apt"')
    r = cli("setup", "--os", "ubuntu-24.04", "--chip", "trn2", "--json")
    plan = json.loads(r.out)["setup"]
    assert plan["repo"] == "https://mirror.internal.test/neuron/apt"
    assert plan["origins"]["repository"] == f"`system_repo` in {mine}"
    assert "note:" not in r.err


# -- item 1: plain http is refused for the manifest and the system repository ----------------------

@pytest.mark.parametrize("way", ["flag", "env", "user config"])
def test_plain_http_release_data_is_refused_naming_where_it_came_from(
        cli, checkout, plain, monkeypatch, way) -> None:
    state, url = plain
    state.pages["/m.json"] = (200, bundled_json(), {})
    args = ["releases", "update"]
    named = {"flag": "--from", "env": "NEURONCTL_MANIFEST_URL", "user config":
             f"config manifest_url ({user_config_file()})"}[way]
    if way == "flag":
        args += ["--from", f"{url}/m.json"]
    elif way == "env":
        monkeypatch.setenv("NEURONCTL_MANIFEST_URL", f"{url}/m.json")
    else:
        _mine(f'manifest_url = "{url}/m.json"')
    r = cli(*args)
    assert r.code == 2 and named in r.err and "plain http" in r.err, r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) <= 2
    assert state.hits == [] and not stored_manifest_path().exists()


@pytest.mark.parametrize(("args", "env", "named"), [
    (["releases", "update"], {"NEURONCTL_MANIFEST_URL": "ftp://mirror.test/m.json"},
     "NEURONCTL_MANIFEST_URL"),
    (["releases", "update", "--from", "gopher://mirror.test/m.json"], {}, "--from"),
    (["setup", "--os", "ubuntu-24.04", "--chip", "trn2", "--repo", "ftp://mirror.test/n"], {},
     "--repo"),
])
def test_another_scheme_is_refused_naming_where_it_came_from(cli, monkeypatch, args, env, named):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    r = cli(*args)
    assert r.code == 2 and r.err.startswith(f"neuronctl: error: {named}: "), r.err
    assert "is not an https:// or file:// URL" in r.err and len(r.err.strip().splitlines()) == 1


def test_an_https_source_redirecting_to_plain_http_is_refused(cli, https, plain) -> None:
    site, url = https
    target, plain_url = plain
    target.pages["/m.json"] = (200, bundled_json(_downgrade), {})
    site.pages["/m.json"] = (302, b"", {"Location": f"{plain_url}/m.json"})
    r = cli("releases", "update", "--from", f"{url}/m.json")
    assert r.code == 2 and "redirected to" in r.err and "plain http" in r.err, r.err
    assert not stored_manifest_path().exists()


@pytest.mark.parametrize("way", ["flag", "user config"])
def test_a_plain_http_system_repository_is_refused(cli, checkout, way) -> None:
    args = ["setup", "--os", "ubuntu-24.04", "--chip", "trn2"]
    if way == "flag":
        args += ["--repo", "http://mirror.internal.test/neuron"]
        named = "--repo"
    else:
        mine = _mine('system_repo = "http://mirror.internal.test/n"')
        named = f"config system_repo ({mine})"
    for extra in ((), ("--dockerfile",)):
        r = cli(*args, *extra)
        assert r.code == 2 and named in r.err and "plain http" in r.err, r.err


# -- item 1: releases update refuses rollbacks and asks before changing a known release ------------

def test_a_rollback_is_refused_naming_release_package_and_versions(cli, https) -> None:
    state, url = https
    state.pages["/m.json"] = (200, bundled_json(_downgrade), {})
    newest = next(r for r in BUNDLED.releases if "aws-neuronx-dkms" in r.system)  # one that has it
    newest_dkms = newest.system["aws-neuronx-dkms"]
    old_dkms = BUNDLED.get("2.18.0").system["aws-neuronx-dkms"]
    r = cli("releases", "update", "--from", f"{url}/m.json", "--accept-changes")
    assert r.code == 2, r.err
    assert (f"release {NEXT} pins aws-neuronx-dkms {old_dkms}, older than {newest_dkms} in the "
            f"earlier release {newest.version}") in r.err
    assert "rollback" in r.err and "nothing was changed" in r.err
    assert not stored_manifest_path().exists()
    assert load_default_manifest().default.version != NEXT


def test_an_older_compiler_or_torch_neuronx_is_a_rollback_too(cli, https) -> None:
    state, url = https

    def older_compiler(data: dict) -> None:
        rel = next(r for r in data["releases"] if r["version"] == "2.33.1")
        rel["packages"]["neuronx-cc"] = ["2.0.0.1"]

    state.pages["/cc.json"] = (200, bundled_json(older_compiler), {})
    r = cli("releases", "update", "--from", f"{url}/cc.json", "--accept-changes")
    assert r.code == 2 and "release 2.33.1 pins neuronx-cc 2.0.0.1, older than" in r.err, r.err
    assert not stored_manifest_path().exists()


def test_a_pin_the_rollback_check_cannot_order_is_refused_not_skipped(cli, https) -> None:
    """A driver pinned as `2.18.0.0-dkms` (an RPM release field, not PEP 440) would pass a check
    that skips what it cannot parse: refused, fail closed."""
    state, url = https

    def unparsable(data: dict) -> None:
        new = json.loads(json.dumps(next(r for r in data["releases"] if r["version"] == "2.33.1"))
                         .replace("2.14.3.0", "2.14.4.0"))
        new.update(version=NEXT, date="2027-01-20", status="ga", sources={"*": "rn-2.33.1"})
        new["system"]["aws-neuronx-dkms"] = "2.18.0.0-dkms"
        data["releases"].insert(0, new)

    state.pages["/m.json"] = (200, bundled_json(unparsable), {})
    r = cli("releases", "update", "--from", f"{url}/m.json", "--accept-changes")
    assert r.code == 2, r.err
    assert f"release {NEXT} pins aws-neuronx-dkms '2.18.0.0-dkms', not a version" in r.err
    assert not stored_manifest_path().exists()


def test_a_redirect_hop_over_plain_http_is_refused_even_back_to_https(cli, https, plain) -> None:
    """https -> http -> https: whoever is on the plain hop chooses the data; every hop is checked,
    not only where the redirects end."""
    site, url = https
    hop, hop_url = plain
    hop.pages["/hop"] = (302, b"", {"Location": f"{url}/m.json"})
    site.pages["/start"] = (302, b"", {"Location": f"{hop_url}/hop"})
    site.pages["/m.json"] = (200, bundled_json(), {})
    r = cli("releases", "update", "--from", f"{url}/start")
    assert r.code == 2 and "redirected to" in r.err and "plain http" in r.err, r.err
    assert not stored_manifest_path().exists()


def test_an_added_release_is_listed_with_its_source_and_the_store_records_where_and_when(
        cli, https) -> None:
    state, url = https

    def newer(data: dict) -> None:
        new = json.loads(json.dumps(next(r for r in data["releases"] if r["version"] == "2.33.1"))
                         .replace("2.14.3.0", "2.14.4.0"))
        new.update(version=NEXT, date="2027-01-20", sources={"*": "rn-2.33.1"})
        data["releases"].insert(0, new)

    state.pages["/m.json"] = (200, bundled_json(newer), {})
    r = cli("releases", "update", "--from", f"{url}/m.json")
    assert r.code == 0, r.err
    assert f"added: {NEXT} (from {url}/m.json)" in r.out
    stored = json.loads(stored_manifest_path().read_text())["generated_from"]
    assert stored["fetched_from"] == f"{url}/m.json" and "T" in stored["fetched_at"]
    shown = json.loads(cli("releases", "--json").out)["data"]
    assert shown["origin"] == "stored" and shown["from"] == f"{url}/m.json"
    assert shown["fetched_at"] == stored["fetched_at"]
    assert f"fetched from {url}/m.json at {stored['fetched_at']}" in " ".join(
        cli("releases").out.split())


def test_a_changed_value_of_a_known_release_waits_for_accept_changes(cli, https) -> None:
    state, url = https

    def fill(data: dict) -> None:  # 2.34.0's system pins, not published in the bundled data
        rel = next(r for r in data["releases"] if r["version"] == "2.34.0")
        rel["system"] = {"aws-neuronx-dkms": "2.32.1.0"}

    state.pages["/f.json"] = (200, bundled_json(fill), {})
    r = cli("releases", "update", "--from", f"{url}/f.json", "--json")
    doc = json.loads(r.out)
    assert [c["key"] for c in doc["filled"]] == ["system.aws-neuronx-dkms"]
    assert doc["filled_applied"] is False and doc["stored"] is None
    assert not stored_manifest_path().exists()
    accepted = json.loads(cli("releases", "update", "--from", f"{url}/f.json", "--json",
                              "--accept-changes").out)
    assert accepted["filled_applied"] is True and accepted["stored"]
    assert load_default_manifest().get("2.34.0").system["aws-neuronx-dkms"] == "2.32.1.0"


# -- item 6: a repository cannot make a node's health check drain it ------------------------------

FAKE_SCONTROL = """#!/bin/sh
if [ "$1" = show ]; then
  printf 'NodeName=%s Arch=x86_64\\n   State=IDLE ThreadsPerCore=1\\n' "$3"
else
  echo "$*" >> "$SCONTROL_LOG"
fi
"""


@pytest.fixture
def slurm_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """scontrol as a recorder on PATH (its `show node` says IDLE): what a drain would run."""
    tools = tmp_path / "slurm-bin"
    tools.mkdir()
    (tools / "scontrol").write_text(FAKE_SCONTROL)
    (tools / "scontrol").chmod(0o755)
    log = tmp_path / "scontrol.log"
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SCONTROL_LOG", str(log))
    monkeypatch.setenv("SLURMD_NODENAME", "node7")
    monkeypatch.setenv("PJRT_DEVICE", "NEURON")  # packages.legacy-xla: a failure of severity fix
    return log


DRAIN = ("doctor", "--level", "1", "--only", "packages", "--slurm-drain", "--json")


def test_a_projects_drain_on_never_drains_the_node(cli, checkout, slurm_node) -> None:
    first = cli(*DRAIN, "--drain-on", "fail")  # what drain_on = fail would do: drain
    assert json.loads(first.out)["slurm_drain"]["action"] == "drain", first.out
    slurm_node.unlink()
    _write_project_config(checkout, 'drain_on = "warn"')
    r = cli(*DRAIN)
    assert json.loads(r.out)["slurm_drain"]["action"] != "drain"
    assert not slurm_node.exists() or "State=DRAIN" not in slurm_node.read_text()
    _one_line_note(r.err, "pyproject.toml", "`drain_on` is not used")


def test_a_projects_skip_cannot_hide_a_check_from_the_nodes_health_check(
        cli, checkout, slurm_node) -> None:
    _write_project_config(checkout, 'skip = ["packages.legacy-xla"]\nstrict = true')
    r = cli(*DRAIN, "--drain-on", "fail")
    doc = json.loads(r.out)
    assert "packages.legacy-xla" in {c["id"] for c in doc["checks"]}
    assert doc["slurm_drain"]["action"] == "drain"
    assert doc["summary"]["strict"] is False  # nor its strictness
    _one_line_note(r.err, "pyproject.toml", "`skip` is not used", "health check")
    # the same project file still counts for a plain doctor run in it
    plain = json.loads(cli("doctor", "--level", "1", "--only", "packages", "--json").out)
    assert "packages.legacy-xla" not in {c["id"] for c in plain["checks"]}


def test_the_users_own_config_still_sets_drain_on(cli, checkout, slurm_node) -> None:
    _mine('drain_on = "fail"')
    r = cli(*DRAIN)
    assert json.loads(r.out)["slurm_drain"]["action"] == "drain", r.out


@pytest.mark.parametrize("body", ["bogus_key = 1", 'timeout = "x"', "not toml ["])
def test_a_broken_project_file_cannot_stop_the_nodes_health_check(cli, checkout, slurm_node,
                                                                 body) -> None:
    """The check reads no project file: one its config reader refuses is named in a note and
    the node is still checked (and drained for what it finds); a plain doctor run there still
    refuses it, and a file the user names with --config is still theirs to get right."""
    (checkout / "pyproject.toml").write_text(f"[tool.neuronctl]\n{body}\n")
    r = cli(*DRAIN, "--drain-on", "fail")
    assert json.loads(r.out)["slurm_drain"]["action"] == "drain", r.err
    _one_line_note(r.err, "pyproject.toml", "not read: a node's health check reads no project file")
    gate = cli("doctor", "--level", "1", "--only", "packages", "--exit-on", "fail")
    assert gate.code == 1 and "not read" in gate.err, gate.err  # the failure found, not the file
    plain = cli("doctor", "--level", "1", "--only", "packages")
    assert plain.code == 2 and "pyproject.toml" in plain.err and "not read" not in plain.err
    named = cli("--config", "pyproject.toml", *DRAIN)
    assert named.code == 2 and "not read" not in named.err, named.err


def test_the_nodes_note_names_the_key_the_file_sets(cli, checkout, slurm_node) -> None:
    """`timeout` also bounds the checks where `check_timeout` is absent: the note names the key
    the file holds, not the one the user never wrote."""
    _write_project_config(checkout, "timeout = 5")
    r = cli(*DRAIN)
    _one_line_note(r.err, "pyproject.toml", "`timeout` is not used", "health check")
    assert "`check_timeout`" not in r.err, r.err
