"""An https index never hands neuronctl on to plain http off this machine: not by a redirect (which
requests would follow, adding ~/.netrc's credentials for the new host, in clear), nor by a page's
link to a file. A real loopback HTTPS server (its certificate trusted through REQUESTS_CA_BUNDLE)
and a netrc entry for the host it points at; nothing leaves 127.0.0.0/8."""

from __future__ import annotations

import http.server
from pathlib import Path
from typing import ClassVar

import pytest
from support.loopback import QuietHandler, self_signed, serving

from neuronctl.errors import InputError
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.simple_index import parse_project_page

pytestmark = pytest.mark.hostile

ELSEWHERE = "http://mirror.corp.example"
"""A plain-http host off this machine, which ~/.netrc has a password for."""


class Redirecting(QuietHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        target = {"/off/": f"{ELSEWHERE}/simple/torch/", "/loop/": "/here/"}.get(self.path)
        if target is not None:
            self.send_response(302)
            self.send_header("Location", target)
            self.end_headers()
            return
        body = b"<html><body></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def https_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "tls").mkdir()
    cert, key = self_signed(tmp_path / "tls")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    (Path.home() / ".netrc").write_text("machine mirror.corp.example login alice password HUSH42\n")
    (Path.home() / ".netrc").chmod(0o600)
    handler: type[http.server.BaseHTTPRequestHandler] = type("H", (Redirecting,), {"hits": []})
    with serving(handler, (cert, key)) as url:
        yield url, handler


def test_a_redirect_from_https_to_plain_http_elsewhere_is_refused_not_followed(https_index):
    url, handler = https_index
    fetcher = Fetcher(timeout=5.0)
    with pytest.raises(InputError, match="redirected from https to plain http off this machine") as err:
        fetcher.get_page(f"{url}/off/", "text/html")
    assert "mirror.corp.example" in str(err.value) and "HUSH42" not in str(err.value)
    assert handler.hits == ["/off/"]  # refused before requests could follow it
    assert fetcher.get_page(f"{url}/loop/", "text/html") is not None  # https to https: followed
    assert handler.hits == ["/off/", "/loop/", "/here/"]


@pytest.mark.parametrize(("page", "link", "refused"), [
    ("https://index.example/simple/demo/", f"{ELSEWHERE}/demo-1.0-py3-none-any.whl", True),
    ("https://index.example/simple/demo/", "http://127.0.0.1:9/demo-1.0-py3-none-any.whl", False),
    ("https://index.example/simple/demo/", "https://files.example/demo-1.0-py3-none-any.whl", False),
    ("http://127.0.0.1:9/simple/demo/", f"{ELSEWHERE}/demo-1.0-py3-none-any.whl", False),
])
def test_an_https_page_linking_a_plain_http_file_elsewhere_is_refused(page, link, refused):
    body = f'<html><body><a href="{link}">demo-1.0-py3-none-any.whl</a></body></html>'
    (found,) = parse_project_page(body, "text/html", page, "demo")
    if refused:  # listed as unusable, with why, should the resolution need it
        assert found.url == "" and "an https page links a plain http file off this machine" in str(
            found.unusable)
    else:
        assert found.url == link and not found.unusable
