"""Reading a response body under its bounds, and naming what went wrong.

Everything a server sends is untrusted: a body is read only up to a limit (the size a lock or an
index declares, or a generous cap for pages and metadata), only under its request's guard, and
every way it can fail becomes a one-line error naming the (redacted) URL: bad input from the
server (InputError, exit 2), a fault worth another attempt (Transient), or a fault that is not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from neuronctl.errors import FaultError, InputError, Interrupted
from neuronctl.resolvers.http_deadline import DEADLINE, STOPPED, Guard

MiB = 1 << 20
MAX_PAGE = 64 * MiB
"""An index project page: PyPI's largest (thousands of files, JSON) are a few MB."""
MAX_BODY = 32 * MiB
"""Any other small response: a metadata sidecar, a range of a wheel's zip directory."""


class Transient(FaultError):
    """A fault another attempt may cure: the connection dropped, nothing came for the timeout."""

    def __init__(self, why: str, shown: str) -> None:
        super().__init__(f"{shown}: {why}")
        self.why = why


def cut_off(guard: Guard, shown: str, timeout: float) -> FaultError | None:
    """The error for a request its guard cut off, if it did."""
    if guard.reason == STOPPED:
        return Interrupted(f"{shown}: stopped")
    if guard.reason == DEADLINE:
        # Not Transient: a server that trickles would only repeat the wait.
        return FaultError(f"{shown}: not complete within {timeout:g}s{guard.allowance} (--timeout "
                          "bounds the whole request; the server sends too slowly)")
    return None


class Downgrade(Exception):
    """An https request redirected to plain http off this machine (refuse_downgrade)."""


def refuse_downgrade(response: Any, *args: Any, **kwargs: Any) -> Any:
    """A requests response hook, run on every hop before requests follows it: an https index
    that redirects to plain http off this machine is refused, not followed (requests would send
    ~/.netrc's credentials for that host in clear). releases update checks its hops the same way."""
    from urllib.parse import urljoin

    from neuronctl.routing import downgrades, redact_url

    location = response.headers.get("location") if response.is_redirect else None
    if location and downgrades(response.url, target := urljoin(response.url, location)):
        raise Downgrade(redact_url(target)[:120])
    return response


def classify(exc: BaseException, guard: Guard, shown: str, timeout: float) -> FaultError | InputError:
    """requests'/urllib3's exception (or an OSError) as neuronctl's error; never their text, which
    may hold the URL's credentials."""
    import requests
    from requests import exceptions as rex

    stopped = cut_off(guard, shown, timeout)
    if stopped is not None:
        return stopped
    if isinstance(exc, Downgrade):
        return InputError(f"{shown}: redirected from https to plain http off this machine ({exc}); "
                          "refusing to follow it")
    if isinstance(exc, rex.TooManyRedirects):
        return InputError(f"{shown}: too many redirects (a redirect loop)")
    if isinstance(exc, rex.InvalidSchema):
        return InputError(f"{shown}: redirected to a URL that is not http(s); refusing to follow it")
    if isinstance(exc, rex.ContentDecodingError):
        return InputError(f"{shown}: the response body does not decode as its Content-Encoding says")
    if isinstance(exc, rex.InvalidURL | rex.MissingSchema | rex.URLRequired | rex.InvalidHeader):
        return InputError(f"{shown}: not a valid URL ({type(exc).__name__})")
    if isinstance(exc, requests.Timeout):
        return Transient(f"timed out after {timeout:g}s", shown)
    if isinstance(exc, rex.ChunkedEncodingError):
        return Transient("the response ended early (shorter than it said, or cut off)", shown)
    if isinstance(exc, requests.RequestException | OSError):
        return Transient(f"connection failed ({type(exc).__name__})", shown)
    if isinstance(exc, ValueError):  # http.client.InvalidURL: spaces or control characters
        return InputError(f"{shown}: not a valid URL ({type(exc).__name__})")
    raise exc


class BoundedRaw:
    """Stands in for a response's urllib3 body (requests' iter_content and .content read through
    it): at most `limit` bytes, errors as neuronctl's own, the guard consulted at every step."""

    def __init__(self, raw: Any, limit: int, what: str, guard: Guard, shown: str, timeout: float) -> None:
        self._raw = raw
        self.limit = limit
        self.what = what
        self.guard = guard
        self.shown = shown
        self.timeout = timeout
        self.count = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def stream(self, amt: int | None = 65536, decode_content: bool | None = None) -> Iterator[bytes]:
        chunks = self._raw.stream(amt, decode_content=decode_content)
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except Exception as exc:  # urllib3's ProtocolError, DecodeError, ReadTimeoutError ...
                raise self._error(exc) from None
            self.count += len(chunk)
            if self.count > self.limit:
                raise InputError(f"{self.shown}: the response is larger than {self.what}; refusing it")
            yield chunk
        # A guard's cut looks like the end of a body that has no Content-Length.
        stopped = cut_off(self.guard, self.shown, self.timeout)
        if stopped is not None:
            raise stopped

    def _error(self, exc: Exception) -> FaultError | InputError:
        from urllib3 import exceptions as u3

        if isinstance(exc, u3.DecodeError):
            import requests

            exc = requests.exceptions.ContentDecodingError()
        elif isinstance(exc, u3.ReadTimeoutError):
            import requests

            exc = requests.Timeout()
        elif isinstance(exc, u3.ProtocolError):
            import requests

            exc = requests.exceptions.ChunkedEncodingError()
        return classify(exc, self.guard, self.shown, self.timeout)
