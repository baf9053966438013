"""`neuronctl releases update` against a real loopback HTTPS server (its certificate trusted
through REQUESTS_CA_BUNDLE; plain http is refused, test_trust_roots.py): a new release,
values not published before, a conflicting value, a manifest that drops a release, and hostile
manifests (oversized, deeply nested, wrong types, bad URLs); the stored data is used from then
on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
from packaging.version import Version
from support.bundled_releases import COMPILED, NEXT, RAW, VERSIONS, bundled_json
from support.loopback import QuietHandler, serving

from neuronctl.release.manifest import load_bundled_manifest, load_default_manifest, stored_manifest_path

BUNDLED = load_bundled_manifest()


class Site:
    """What the loopback server answers: path -> (status, body)."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, bytes]] = {}
        self.hits: list[str] = []


@pytest.fixture(autouse=True)
def trusted(tls, monkeypatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls[0]))


@pytest.fixture
def site(tls) -> Iterator[tuple[Site, str]]:
    state = Site()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            state.hits.append(self.path)
            status, body = state.pages.get(self.path, (404, b"no"))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler, tls) as url:
        yield state, url


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "data"


def _new_release(data: dict) -> None:
    """NEXT (a release no data has yet): 2.33.1's stack with a torch-neuronx newer than any
    release's (the same would be a rollback, release.rollback)."""
    old = json.dumps(next(r for r in data["releases"] if r["version"] == "2.33.1"))
    new = json.loads(old.replace("2.14.3.0", "2.14.4.0"))
    new.update(version=NEXT, date="2027-01-20")
    new["sources"] = {"*": "rn-2.33.1"}
    data["releases"].insert(0, new)


def _n2_2_34() -> bytes:
    """AWS's format, as a later n2-manifest.json would give 2.34.0's pins."""
    inst = ["trn2", "trn3"]
    py = ["3.12", "3.13", "3.14"]

    def pkg(name: str, version: str, pythons: list[str] = py) -> dict:
        return {"name": name, "version": version, "supported_instances": inst,
                "supported_python_versions": pythons}

    return json.dumps({
        "manifest_version": "2.34.0", "manifest_date": "11/30/2026",
        "repos_n2": [{"repo_type": "whl", "repo_url": "https://pip.repos.neuron.amazonaws.com/"}],
        "neuron_releases": [{"neuron_version": "2.34.0", "packages": [
            pkg("torch-neuronx", "2.14.3.1"), pkg("neuronx-cc", "2.29.100.0"), pkg("nki", "0.8.0"),
            pkg("libneuronxla", "3.0.13000.0"), pkg("aws-neuronx-dkms", "2.32.1.0", []),
            pkg("aws-neuronx-runtime-lib", "2.36.10.0", []),
            pkg("aws-neuronx-collectives", "2.36.10.0", []),
            pkg("aws-neuronx-tools", "2.34.10.0", [])]}]}).encode()


def test_a_new_release_is_added_stored_and_used_from_then_on(cli, site, data_home):
    state, url = site
    state.pages["/m.json"] = (200, bundled_json(_new_release))
    r = cli("releases", "update", "--from", f"{url}/m.json")
    assert r.code == 0, r.err
    assert f"added: {NEXT}" in r.out and f"stored {len(VERSIONS) + 1} releases in" in r.out
    store = stored_manifest_path()
    assert store == data_home / "neuronctl" / "releases.json" and store.is_file()
    assert load_default_manifest().default.version == NEXT
    listing = cli("releases")
    assert any(line.startswith(f"{NEXT}: ") for line in listing.out.splitlines())
    assert f"release data: stored ({store}, fetched from {url}/m.json at 20" in " ".join(
        listing.out.split())
    shown = cli("releases", "show", NEXT, "--sources").out
    assert f"{url}/m.json (read " in shown  # every value's source is the fetched manifest
    # --manifest still overrides the stored data
    bundled = data_home / "bundled.json"
    bundled.write_bytes(bundled_json())
    assert NEXT not in cli("--manifest", str(bundled), "releases").out


def test_values_not_published_are_filled_from_aws_format_only_when_accepted(cli, site):
    state, url = site
    state.pages["/n2.json"] = (200, _n2_2_34())
    before = load_default_manifest().get("2.34.0")
    assert not before.complete
    listed = cli("releases", "update", "--from", f"{url}/n2.json")
    assert listed.code == 0, listed.err
    # a release neuronctl knows changes only when accepted: listed, nothing written
    assert ("filled (not applied; was not published): 2.34.0 system.aws-neuronx-dkms: not "
            "published -> 2.32.1.0") in listed.out
    assert "--accept-changes" in listed.out and not stored_manifest_path().exists()
    assert not load_default_manifest().get("2.34.0").complete
    r = cli("releases", "update", "--from", f"{url}/n2.json", "--json", "--accept-changes")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["filled_applied"] is True
    filled = {c["key"]: c["fetched"] for c in doc["filled"] if c["release"] == "2.34.0"}
    assert filled["packages.neuronx-cc"] == ["2.29.100.0"]
    assert filled["system.aws-neuronx-dkms"] == "2.32.1.0"
    assert doc["conflicts"] == []
    after = load_default_manifest().get("2.34.0")
    assert after.complete and after.package_version("nki") == "0.8.0"
    assert "neuronx-cc" not in after.constraints
    # now wholly published: the default, unless a newer release is too
    assert Version(load_default_manifest().default.version) >= Version("2.34.0")
    assert "2.33.0" in doc["dropped"]  # the n2 file lists only 2.34.0: the others are kept
    assert load_default_manifest().find("2.33.0") is not None


def test_a_conflicting_value_is_listed_and_applied_only_when_accepted(cli, site):
    state, url = site

    def change(data: dict) -> None:
        rel = next(r for r in data["releases"] if r["version"] == "2.33.1")
        rel["system"]["aws-neuronx-dkms"] = "2.31.9.0"

    state.pages["/c.json"] = (200, bundled_json(change))
    r = cli("releases", "update", "--from", f"{url}/c.json")
    assert r.code == 0, r.err
    assert "conflict (not applied): 2.33.1 system.aws-neuronx-dkms: 2.31.8.0 -> 2.31.9.0" in r.out
    assert "neuronctl releases update --accept-changes" in r.out
    assert not stored_manifest_path().exists()  # nothing new otherwise: nothing written
    r = cli("releases", "update", "--from", f"{url}/c.json", "--accept-changes")
    assert "conflict (applied): 2.33.1 system.aws-neuronx-dkms" in r.out
    rel = load_default_manifest().get("2.33.1")
    assert rel.system["aws-neuronx-dkms"] == "2.31.9.0"
    assert rel.sources["system.aws-neuronx-dkms"] == "releases-update"


def test_a_manifest_that_drops_a_release_deletes_nothing(cli, site):
    state, url = site

    def drop(data: dict) -> None:
        data["releases"] = [r for r in data["releases"] if r["version"] != "2.33.0"]
        _new_release(data)

    state.pages["/d.json"] = (200, bundled_json(drop))
    r = cli("releases", "update", "--from", f"{url}/d.json")
    assert r.code == 0, r.err
    assert "not in the fetched manifest (kept): 2.33.0" in r.out
    assert load_default_manifest().find("2.33.0") is not None


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(("body", "message"), [
    (b" " * ((64 << 20) + 10), "larger than 64 MB"),
    (_nested(200_000), "nested too deeply"),
    (json.dumps({"schema": 1, "releases": "2.35.0"}).encode(), "releases: expected a list"),
    (json.dumps({"schema": 1, "releases": [{"version": 2.35}]}).encode(), "version: expected a string"),
    (json.dumps({"neuron_releases": [{"neuron_version": "2.35.0", "packages": {}}]}).encode(),
     "packages: expected a list"),
    (b"\xff\xfe not json", "not UTF-8"),
    (b"{", "invalid JSON"),
    (bundled_json(lambda d: d["sources"]["n2"].update(url="https://x/\r\nInjected: 1")),
     "expected one line of printable text, got '\\r'"),
    (bundled_json(lambda d: d["sources"]["n2"].update(url="https://x/ Injected")),
     "whitespace or control characters"),
    (bundled_json(lambda d: d["releases"][0]["notes"].append("x\n::error title=Build::fake")),
     f"].notes[{len(RAW['releases'][0]['notes'])}]: expected one line of printable text, got '\\n'"),
    (bundled_json(lambda d: d["sources"]["n2"].update(url="javascript:alert(1)")), "scheme 'javascript'"),
    (json.dumps({"repos_n2": [{"repo_url": "ftp://mirror/x"}], "neuron_releases": []}).encode(),
     "scheme 'ftp'"),
    # values that reach the doctor's fix commands and the lock's requirements
    (bundled_json(lambda d: d["releases"][1]["system"].update({"aws-neuronx-dkms": "2.31.8.0'; touch x #"})),
     "is not a package version"),
    (bundled_json(lambda d: d["releases"][1]["packages"].update({"nki": ["0.7.0 --index-url http://x"]})),
     "is not a PEP 440 version"),
    (bundled_json(lambda d: d["releases"][1]["packages"].update({"../../etc/x": ["1.0"]})),
     "not a package name"),
])
def test_hostile_manifests_are_refused_and_nothing_is_written(cli, site, body, message):
    state, url = site
    state.pages["/h.json"] = (200, body)
    r = cli("releases", "update", "--from", f"{url}/h.json")
    assert r.code == 2, (r.out, r.err)
    assert message in r.err and "Traceback" not in r.err
    assert not stored_manifest_path().exists()


@pytest.mark.parametrize("source", ["https://127.0.0.1:1/a b.json", "https://127.0.0.1:1/a\nb",
                                    "javascript:alert(1)", "gopher://127.0.0.1/x"])
def test_a_bad_url_is_refused_before_anything_is_fetched(cli, source):
    r = cli("releases", "update", "--from", source)
    assert r.code == 2 and ("releases update --from" in r.err or r.err.startswith(
        "neuronctl: error: --from: ")), r.err


def test_an_http_error_is_a_fault_and_changes_nothing(cli, site):
    _state, url = site
    r = cli("releases", "update", "--from", f"{url}/missing.json")
    assert r.code == 1 and "HTTP 404; nothing was changed" in r.err
    assert not stored_manifest_path().exists()


def test_the_url_comes_from_env_then_the_users_own_config(cli, site, monkeypatch, tmp_path):
    state, url = site
    state.pages["/env.json"] = (200, bundled_json(_new_release))
    state.pages["/cfg.json"] = (200, bundled_json())
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "xdg" / "neuronctl" / "config.toml"
    mine.parent.mkdir(parents=True)
    mine.write_text(f'manifest_url = "{url}/cfg.json"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert "nothing new" in cli("releases", "update").out
    assert state.hits == ["/cfg.json"]
    monkeypatch.setenv("NEURONCTL_MANIFEST_URL", f"{url}/env.json")
    assert f"added: {NEXT}" in cli("releases", "update").out
    assert state.hits[-1] == "/env.json"


def test_a_corrupt_store_is_refused_with_the_way_out(cli, data_home):
    store = stored_manifest_path()
    store.parent.mkdir(parents=True)
    store.write_text('{"schema": 1, "releases": []}')
    r = cli("releases")
    assert r.code == 2 and str(store) in r.err and "remove" in r.err


def test_newer_bundled_data_wins_over_an_older_store(data_home):
    store = stored_manifest_path()
    store.parent.mkdir(parents=True)
    old = json.loads(bundled_json(_new_release))
    compiled = date.fromisoformat(COMPILED)
    old["compiled"] = (compiled - timedelta(days=1)).isoformat()  # before the bundled data's
    store.write_text(json.dumps(old))
    assert load_default_manifest().origin == "bundled"
    old["compiled"] = (compiled + timedelta(days=1)).isoformat()
    store.write_text(json.dumps(old))
    assert load_default_manifest().origin == "stored"


def test_a_trickling_server_cannot_hold_the_fetch(tmp_path, tls):
    """One byte every 0.2 s: the fetch ends at its deadline, not when the body does."""
    import time

    from neuronctl.errors import FaultError
    from neuronctl.ops.releases import update_releases

    class Trickle(QuietHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass

    with serving(Trickle, tls) as url:
        start = time.monotonic()
        with pytest.raises(FaultError, match=r"not fetched within 1\.5 s"):
            update_releases(BUNDLED, f"{url}/slow.json", accept=False,
                            store=tmp_path / "releases.json", timeout=1.5)
        assert time.monotonic() - start < 4
    assert not (tmp_path / "releases.json").exists()


def test_a_compressed_body_is_refused(cli, tls):

    class Gzip(QuietHandler):
        def do_GET(self) -> None:
            import gzip

            body = gzip.compress(bundled_json())
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Gzip, tls) as gz:
        r = cli("releases", "update", "--from", f"{gz}/m.json")
    assert r.code == 2 and "Content-Encoding 'gzip'" in r.err
    assert not stored_manifest_path().exists()
