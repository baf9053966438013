"""The checks a release manifest's sources pass where they enter (the parser, AWS's manifest
import, `releases update --from`): a URL that is one plain http(s) or file URL, an ISO date.
Apart from neuronctl.release.provenance (each value's source, for `releases show --sources`),
which a run that only parses the data does not load (issue 36)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

from neuronctl.errors import InputError

URL_SCHEMES = ("http", "https", "file")


def check_url(url: str, where: str) -> str:
    """A URL from a manifest, lock or page: no whitespace or control characters (they would
    start a new line or option in an engine's input), scheme http(s) or file only."""
    if not url or any(ch.isspace() or not ch.isprintable() for ch in url):
        raise InputError(f"{where}: {url[:80]!r} holds whitespace or control characters; "
                         "not a URL")
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as exc:  # "http://[" : an unbalanced bracket is no IPv6 host, nor a URL
        raise InputError(f"{where}: {url[:80]!r} is not a URL ({exc})") from None
    if scheme not in URL_SCHEMES:
        raise InputError(f"{where}: {url[:80]!r}: scheme {scheme or '(none)'!r} is not one of "
                         f"{', '.join(URL_SCHEMES)}")
    return url


def check_date(text: str, where: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise InputError(f"{where}: {text[:40]!r} is not an ISO date (YYYY-MM-DD)") from None
