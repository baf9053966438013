"""Network preflight: every host a command will need, checked at once before it resolves or
fetches anything, so that behind a firewall one error names every unreachable index (not the
first, then the next after that is fixed), with the kind of failure and how to route around it.

One HEAD per host root, in parallel threads, through the command's own requests Session (its
proxies from the environment, its per-origin credentials), with a short timeout. Any HTTP
answer means the host is reachable (a 404 or 405 is the index's business, judged later); only a
failure to get an answer is reported, classified: DNS, refused, timeout, proxy, TLS, or HTTP
5xx from a proxy or the server.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.errors import FaultError
from neuronctl.routing import redact_url

if TYPE_CHECKING:
    import requests

PREFLIGHT_TIMEOUT = 5.0
"""At most this long per host (all hosts at once): reachable hosts answer a HEAD in well under."""
WORKERS = 16
SHOWN = 12
"""At most this many hosts are described in the error; the rest are counted."""
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


class Host(Struct, frozen=True):
    """One place a command will reach: its name (an index's, or the host's), the URL to try,
    and how the user routes around it (`--index pypi=URL or NEURONCTL_INDEX_PYPI`)."""

    name: str
    url: str
    override: str


class Unreachable(Struct, frozen=True):
    """A host that gave no answer: what failed and why, for the one preflight error."""

    host: Host
    kind: str
    """DNS, refused, timeout, proxy, TLS, HTTP, connection."""
    why: str

    def describe(self) -> str:
        return (f"{self.host.name} {redact_url(self.host.url)}: {self.kind}: {self.why}; "
                f"{self.host.override}")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < 12:
        seen.append(current)
        nested = getattr(current, "reason", None)
        if isinstance(nested, BaseException) and nested not in seen:
            seen.append(nested)
        if current.args and isinstance(current.args[0], BaseException):
            seen.append(current.args[0])
        current = current.__cause__ or current.__context__
    return seen


def proxy_for(url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy variable (NAME=URL, credentials redacted) requests uses for `url`, if any."""
    from requests.utils import get_environ_proxies, select_proxy

    proxy = select_proxy(url, get_environ_proxies(url))
    if not proxy:
        return None
    name = next((v for v in PROXY_VARS if environ.get(v) == proxy), "a proxy variable")
    return f"{name}={redact_url(proxy)}"


def classify(exc: BaseException, url: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """(kind, why) for a failure to reach `url`; never the exception's text (it may carry the
    URL with credentials): its class and what it means."""
    from requests import exceptions as rex

    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    proxy = proxy_for(url, environ)
    if isinstance(exc, rex.ProxyError) or "ProxyError" in names:
        return "proxy", f"the proxy did not connect ({proxy or 'a proxy variable'}); fix it, or " \
                        "add the host to NO_PROXY"
    if isinstance(exc, rex.SSLError) or any(isinstance(e, ssl.SSLError) for e in chain):
        return "TLS", "the TLS handshake failed (certificate not trusted, or intercepted: set " \
                      "REQUESTS_CA_BUNDLE to your CA bundle)"
    if any(isinstance(e, socket.gaierror) for e in chain) or "NameResolutionError" in names:
        return "DNS", "the host name does not resolve" + (f" (via {proxy})" if proxy else "")
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "refused", "connection refused" + (f" (via {proxy})" if proxy else "")
    if isinstance(exc, rex.Timeout) or any(isinstance(e, TimeoutError | socket.timeout) for e in chain):
        return "timeout", "no answer in time" + (f" (via {proxy})" if proxy else "")
    return "connection", f"connection failed ({type(exc).__name__})" + (
        f" (via {proxy})" if proxy else "")


def _probe(session: requests.Session, host: Host, timeout: float,
           environ: Mapping[str, str]) -> Unreachable | None:
    try:
        response = session.head(host.url, timeout=(timeout, timeout), allow_redirects=False)
    except Exception as exc:  # requests', urllib3's or the socket's: classified, never shown
        kind, why = classify(exc, host.url, environ)
        return Unreachable(host, kind, why)
    status = response.status_code
    response.close()
    if status == 407:  # a plain-http request through a proxy that wants credentials
        return Unreachable(host, "proxy", f"HTTP 407 from {proxy_for(host.url, environ) or 'a proxy'}"
                                          " (proxy authentication required)")
    if status in (502, 503, 504):  # a proxy that cannot reach the host says so this way
        proxy = proxy_for(host.url, environ)
        return Unreachable(host, "proxy" if proxy else "HTTP",
                           f"HTTP {status}" + (f" from {proxy}" if proxy else " from the server"))
    return None


def check_hosts(hosts: Sequence[Host], session: requests.Session, *,
                timeout: float = PREFLIGHT_TIMEOUT,
                environ: Mapping[str, str] | None = None) -> list[Unreachable]:
    """Every host tried at once; the ones that did not answer, in the order given. A host still
    trying when the time is up (a DNS lookup requests' timeout does not bound) is a timeout."""
    env = os.environ if environ is None else environ
    unique = list({h.url: h for h in hosts if h.url.startswith(("http://", "https://"))}.values())
    results: dict[int, Unreachable | None] = {}
    todo = list(enumerate(unique))
    todo_lock = threading.Lock()

    def work() -> None:  # a lock's thousands of hosts are tried WORKERS at a time, not all at once
        while True:
            with todo_lock:
                if not todo:
                    return
                i, host = todo.pop(0)
            results[i] = _probe(session, host, timeout, env)

    # Daemon threads: one stuck in a DNS lookup (which requests' timeout does not bound) is left.
    threads = [threading.Thread(target=work, daemon=True, name=f"neuronctl-preflight-{n}")
               for n in range(min(WORKERS, len(unique)))]
    for t in threads:
        t.start()
    limit = timeout * 2 + 1
    deadline = time.monotonic() + limit
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    with todo_lock:
        todo.clear()  # what no worker started is not started after the deadline
    out = []
    for i, host in enumerate(unique):
        if i not in results:
            out.append(Unreachable(host, "timeout", f"no answer within {limit:g}s"))
        elif (failure := results[i]) is not None:
            out.append(failure)
    return out


def require_reachable(hosts: Sequence[Host], session: requests.Session, *,
                      timeout: float = PREFLIGHT_TIMEOUT,
                      environ: Mapping[str, str] | None = None) -> None:
    """check_hosts, then one FaultError naming every host that did not answer."""
    failed = check_hosts(hosts, session, timeout=timeout, environ=environ)
    if not failed:
        return
    tried = {h.url for h in hosts if h.url.startswith(("http://", "https://"))}
    count = f"{len(failed)} of {len(tried)}"
    more = f" | and {len(failed) - SHOWN} more" if len(failed) > SHOWN else ""
    raise FaultError(f"{count} hosts unreachable, nothing fetched: "
                     + " | ".join(f.describe() for f in failed[:SHOWN]) + more,
                     hint="mirror them or route around them (README: hosts neuronctl reaches), "
                          "or --offline with what the cache holds")
