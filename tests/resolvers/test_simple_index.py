import json
from typing import ClassVar

import pytest
from support.loopback import QuietHandler, serving
from support.wheels import build_wheel

from neuronctl.errors import FaultError, InputError
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.simple_index import IndexClient, parse_project_page

SHA = "a" * 64

JSON_PAGE = json.dumps({
    "meta": {"api-version": "1.1"},
    "name": "nki",
    "files": [
        {"filename": "nki-0.7.0-py3-none-any.whl", "url": "/files/nki-0.7.0-py3-none-any.whl",
         "hashes": {"sha256": SHA}, "requires-python": ">=3.12", "core-metadata": {"sha256": SHA},
         "size": 1234, "upload-time": "2026-10-19T00:00:00Z"},
        {"filename": "nki-0.6.0-py3-none-any.whl", "url": "nki-0.6.0-py3-none-any.whl",
         "hashes": {"sha256": SHA}, "yanked": "broken build", "size": 99},
    ],
    "versions": ["0.6.0", "0.7.0"],
})

# Like the PyTorch index: HTML only, root-relative links, #sha256= fragments.
HTML_PAGE = f"""<!DOCTYPE html><html><body><h1>Links for torch</h1>
<a href="/whl/cpu/torch-2.14.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256={SHA}"
   data-requires-python="&gt;=3.10" data-dist-info-metadata="sha256={SHA}">torch-2.14.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<a href="/whl/cpu/torch-2.13.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256={SHA}" data-yanked="">torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
</body></html>"""


class Handler(QuietHandler):
    routes: ClassVar[dict] = {}
    hits: ClassVar[list] = []
    fail_first: ClassVar[dict] = {}

    def do_GET(self):
        self.hits.append((self.path, self.headers.get("Accept", "")))
        remaining = self.fail_first.get(self.path, 0)
        if remaining:
            self.fail_first[self.path] = remaining - 1
            self.send_error(503)
            return
        if self.path not in self.routes:
            self.send_error(404)
            return
        ctype, body = self.routes[self.path]
        self.reply(body, ctype)


@pytest.fixture
def server():
    Handler.routes, Handler.hits, Handler.fail_first = {}, [], {}
    with serving(Handler) as url:
        yield url


def client():
    return IndexClient(Fetcher(timeout=5, retries=2, backoff=0.01))


def test_json_index_with_content_negotiation(server):
    Handler.routes["/simple/nki/"] = ("application/vnd.pypi.simple.v1+json", JSON_PAGE)
    files = client().project_files(f"{server}/simple", "NKI")
    assert Handler.hits[0][1].startswith("application/vnd.pypi.simple.v1+json")
    assert [f.filename for f in files] == ["nki-0.7.0-py3-none-any.whl", "nki-0.6.0-py3-none-any.whl"]
    new, old = files
    assert new.url == f"{server}/files/nki-0.7.0-py3-none-any.whl"
    assert old.url == f"{server}/simple/nki/nki-0.6.0-py3-none-any.whl"
    assert new.hashes == {"sha256": SHA} and new.size == 1234
    assert new.requires_python == ">=3.12" and new.core_metadata == {"sha256": SHA}
    assert new.upload_time == "2026-10-19T00:00:00Z"
    assert old.yanked == "broken build" and new.yanked is False


def test_html_index_like_pytorch(server):
    Handler.routes["/whl/cpu/torch/"] = ("text/html", HTML_PAGE)
    files = client().project_files(f"{server}/whl/cpu", "torch")
    first, second = files
    assert first.filename == "torch-2.14.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert first.url == f"{server}/whl/cpu/torch-2.14.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert first.hashes == {"sha256": SHA}
    assert first.requires_python == ">=3.10"
    assert first.core_metadata == {"sha256": SHA}  # the older dist-info-metadata name (PEP 714)
    assert second.yanked is True


def test_503_then_success_is_retried(server):
    Handler.routes["/simple/nki/"] = ("application/vnd.pypi.simple.v1+json", JSON_PAGE)
    Handler.fail_first["/simple/nki/"] = 2
    assert len(client().project_files(f"{server}/simple", "nki")) == 2
    assert len(Handler.hits) == 3


def test_persistent_503_is_a_fault_naming_the_url_without_credentials(server):
    Handler.fail_first["/simple/nki/"] = 99
    host = server.removeprefix("http://")
    with pytest.raises(FaultError) as err:
        client().project_files(f"http://alice:s3cret@{host}/simple", "nki")
    assert "HTTP 503 (after 3 attempts)" in str(err.value)
    assert "s3cret" not in str(err.value) and host in str(err.value)


def test_unknown_project_is_none(server):
    assert client().project_files(f"{server}/simple", "nothing-here") is None


def test_unreachable_index_is_a_fault():
    with pytest.raises(FaultError, match="connection failed"):
        IndexClient(Fetcher(timeout=1, retries=1, backoff=0.01)).project_files("http://127.0.0.1:9/simple", "x")


@pytest.mark.parametrize(
    ("ctype", "body", "message"),
    [
        ("application/vnd.pypi.simple.v1+json", JSON_PAGE[: len(JSON_PAGE) // 2], "invalid JSON"),
        ("application/vnd.pypi.simple.v1+json", '{"meta": {"api-version": "1.0"}, "name": "x"}',
         "malformed page"),
        ("application/vnd.pypi.simple.v1+json",
         '{"meta": {"api-version": "1.0"}, "name": "x", "files": [{"filename": 3}]}', r"files\[0\]: expected"),
        ("application/json", "{}", "unsupported content type"),
    ],
)
def test_bad_index_responses_are_input_errors(ctype, body, message):
    with pytest.raises(InputError, match=message) as err:
        parse_project_page(body, ctype, "http://127.0.0.1:1/simple/x/", "x")
    assert "index response from http://127.0.0.1:1/simple/x/" in str(err.value)


def test_file_index_and_find_links(tmp_path):
    wheel = build_wheel(tmp_path / "flat", "nki", "0.7.0")
    build_wheel(tmp_path / "flat", "other", "1.0")
    files = client().project_files((tmp_path / "flat").as_uri(), "nki")
    assert [f.filename for f in files] == [wheel.name]
    assert files[0].url == wheel.resolve().as_uri() and files[0].size == wheel.stat().st_size
    assert client().project_files((tmp_path / "flat").as_uri(), "absent") is None
    page_dir = tmp_path / "simple" / "torch"
    page_dir.mkdir(parents=True)
    (page_dir / "index.html").write_text(
        f'<a href="../../flat/{wheel.name}#sha256={SHA}">{wheel.name}</a>')
    files = client().project_files((tmp_path / "simple").as_uri(), "torch")
    assert files[0].url == wheel.resolve().as_uri()
    with pytest.raises(InputError, match="no such directory"):
        client().project_files((tmp_path / "missing").as_uri(), "torch")


def test_find_links_file_with_an_unsafe_name_is_unusable_not_used(tmp_path):
    flat = tmp_path / "flat"
    good = build_wheel(flat, "nki", "0.7.0")
    (flat / "nki-0.7.0-py3-none-x\x1b[2J.whl").write_bytes(good.read_bytes())  # a tag may hold it
    files = client().project_files(flat.as_uri(), "nki")
    by_use = {f.unusable is None: f for f in files}
    assert by_use[True].filename == good.name
    assert by_use[False].unusable == "not a safe file name" and by_use[False].url == ""
    assert "\x1b" not in by_use[False].filename


def test_file_index_page_that_is_not_utf8_is_bad_input_naming_it(tmp_path):
    page = tmp_path / "simple" / "nki" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_bytes(b"<a href='x.whl'>\xff\xfe</a>")
    with pytest.raises(InputError, match="not UTF-8 text") as err:
        client().project_files((tmp_path / "simple").as_uri(), "nki")
    assert str(page) in str(err.value)
