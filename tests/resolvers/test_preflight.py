"""Issue 25, item 5: lock, install and download check every host they need at once, before
resolving, and name every unreachable one in one error: its URL (credentials redacted), the kind
of failure, and how to route around it; a dead proxy is named by its variable. All on loopback."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.loopback import POLL_S, closed_port, closed_ports

from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.preflight import Host, check_hosts, classify

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_preflight.py)


@contextmanager
def silent_server() -> Iterator[int]:
    """Accepts connections (the kernel's backlog) and never answers a byte."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])


def error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("neuronctl: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_two_unreachable_indexes_are_reported_in_one_error(cli, uni):
    a, b = closed_ports(2)
    flags = [f for f in uni.index_flags() if "pytorch-cpu" not in f and "neuron=" not in f]
    r = cli("lock", *flags, "--index", f"pytorch-cpu=http://alice:s3cret@127.0.0.1:{a}/whl/cpu",
            "--index", f"neuron=http://127.0.0.1:{b}/simple", "--python", "3.12")
    assert r.code == 1, r.err
    line = error_line(r.err)
    assert line.startswith("neuronctl: error: 2 of 3 hosts unreachable")
    assert f"index 'pytorch-cpu' http://127.0.0.1:{a}/whl/cpu/: refused" in line
    assert f"index 'neuron' http://127.0.0.1:{b}/simple/: refused" in line
    assert "NEURONCTL_INDEX_PYTORCH_CPU=URL" in line and "NEURONCTL_INDEX_NEURON=URL" in line
    assert "s3cret" not in r.err and "alice" not in r.err
    assert "index 'pypi'" not in line  # the live one is not reported
    assert not Path("pylock.toml").exists()


def test_a_dead_proxy_is_named_by_its_variable(cli, monkeypatch):
    dead = closed_port()
    monkeypatch.setenv("NO_PROXY", "localhost")
    monkeypatch.setenv("no_proxy", "localhost")
    for var in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(var, f"http://bob:pw@127.0.0.1:{dead}")
    # 127.0.0.2 is loopback but not in NO_PROXY: requests sends it to the proxy
    r = cli("lock", "--index", "pypi=http://127.0.0.2:9/simple", "--index",
            "pytorch-cpu=http://127.0.0.3:9/whl/cpu", "--index", "neuron=http://127.0.0.4:9/simple",
            "--python", "3.12")
    assert r.code == 1, r.err
    line = error_line(r.err)
    assert line.count(": proxy: ") == 3, line
    assert re.search(rf"HTTP_PROXY=http://127\.0\.0\.1:{dead}", line, re.I), line
    assert "bob" not in r.err and ":pw@" not in r.err


def test_hosts_are_tried_at_once_not_one_after_another():
    with silent_server() as one, silent_server() as two, silent_server() as three:
        hosts = [Host(f"index '{n}'", f"http://127.0.0.1:{p}/simple/", "x")
                 for n, p in (("a", one), ("b", two), ("c", three))]
        started = time.monotonic()
        failed = check_hosts(hosts, Fetcher(timeout=1.5).session, timeout=1.5, environ={})
        elapsed = time.monotonic() - started
    assert [f.kind for f in failed] == ["timeout"] * 3
    assert elapsed < 3.0, elapsed  # one after another would take 4.5 s


def test_failures_are_classified_from_the_exception_chain():
    """DNS and TLS cannot be met on loopback without a resolver or a CA of our own: their
    classification is checked on the exception chains requests raises for them."""
    import ssl

    import requests

    def raised(inner: BaseException, outer: type[Exception]) -> BaseException:
        try:
            try:
                raise inner
            except BaseException as exc:
                raise outer("wrapped") from exc
        except Exception as exc:
            return exc

    url = "http://index.example/simple/"
    dns = raised(socket.gaierror(-2, "Name or service not known"), requests.ConnectionError)
    assert classify(dns, url, {})[0] == "DNS"
    tls = raised(ssl.SSLCertVerificationError("certificate verify failed"), requests.exceptions.SSLError)
    assert classify(tls, url, {})[0] == "TLS"
    refused = raised(ConnectionRefusedError(111, "refused"), requests.ConnectionError)
    assert classify(refused, url, {})[0] == "refused"
    slow = raised(TimeoutError("timed out"), requests.exceptions.ConnectTimeout)
    assert classify(slow, url, {})[0] == "timeout"


def test_install_checks_every_index_before_resolving(cli, tmp_path):
    a, b, c = closed_ports(3)
    r = cli("install", "--venv", str(tmp_path / "v"), "--venv-python", "3.12", "--dry-run",
            "--index", f"pypi=http://127.0.0.1:{a}/simple", "--index",
            f"pytorch-cpu=http://127.0.0.1:{b}/whl/cpu", "--index",
            f"neuron=http://127.0.0.1:{c}/simple")
    assert r.code == 1, r.err
    line = error_line(r.err)
    assert line.startswith("neuronctl: error: 3 of 3 hosts unreachable")
    assert all(f"127.0.0.1:{p}" in line for p in (a, b, c))
    assert not (tmp_path / "v").exists()


def test_download_checks_every_host_of_the_lock_at_once(cli, locked, tmp_path):
    text = locked.read_text()
    ports = sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", text)))
    assert len(ports) >= 2
    dead = {p: str(q) for p, q in zip(ports, closed_ports(len(ports)), strict=True)}
    moved = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{dead[m[1]]}", text)
    lock = tmp_path / "pylock.toml"
    lock.write_text(moved)
    r = cli("download", "--lock", str(lock), "-d", str(tmp_path / "wheels"))
    assert r.code == 1, r.err
    line = error_line(r.err)
    assert all(f"127.0.0.1:{dead[p]}/: refused" in line for p in ports), line
    assert not any((tmp_path / "wheels").glob("*.whl"))


def test_offline_tries_nothing(cli):
    r = cli("lock", "--index", f"pypi=http://127.0.0.1:{closed_port()}/simple", "--python", "3.12",
            "--offline")
    assert "hosts unreachable" not in r.err


def test_a_lock_with_many_hosts_is_tried_in_bounded_threads_and_reported_in_bounds():
    import threading

    from neuronctl.errors import FaultError
    from neuronctl.resolvers import preflight

    hosts = [Host(f"host {i}", f"http://127.0.0.1:{port}/", "x")
             for i, port in enumerate(closed_ports(40))]
    before = threading.active_count()
    seen: list[int] = []
    real = preflight._probe

    def counting(*args, **kwargs):  # the real probe, with the live thread count noted
        seen.append(threading.active_count())
        return real(*args, **kwargs)

    preflight._probe = counting  # type: ignore[assignment]
    try:
        with pytest.raises(FaultError) as raised:
            preflight.require_reachable(hosts, Fetcher(timeout=2).session, timeout=2, environ={})
    finally:
        preflight._probe = real  # type: ignore[assignment]
    assert raised.value.message.startswith("40 of 40 hosts unreachable")
    assert raised.value.message.endswith("| and 28 more")
    assert max(seen) <= before + preflight.WORKERS


@pytest.mark.parametrize("status,words", [(407, "proxy authentication required"),
                                          (502, "HTTP 502 from HTTP_PROXY=")])
def test_a_proxy_that_answers_with_a_refusal_is_the_proxys_failure(monkeypatch, status, words):
    import http.server
    import threading

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True).start()
    try:
        proxy = f"http://127.0.0.1:{server.server_address[1]}"
        monkeypatch.setenv("NO_PROXY", "localhost")
        monkeypatch.setenv("no_proxy", "localhost")
        for var in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(var, proxy)
        hosts = [Host("index 'a'", "http://127.0.0.2:9/simple/", "x")]
        failed = check_hosts(hosts, Fetcher(timeout=2).session, timeout=2)
    finally:
        server.shutdown()
    assert [f.kind for f in failed] == ["proxy"] and words in failed[0].why, failed
