"""Index credentials applied where a request is made, and only to the origin they belong to.

Index URLs reach the resolvers without their credentials (`neuronctl.routing.IndexURL`), so no
page URL, file URL, message or lock can carry them. The session's auth adds them back for the
index's own origin (scheme, host, port); every other request is authenticated as requests does it
by default (credentials in the URL, else ~/.netrc). requests drops the Authorization header on a
redirect to another host, port or scheme, so credentials do not follow a redirect off the origin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from neuronctl.routing import Origin, url_origin

if TYPE_CHECKING:
    import requests.auth


def origin_auth(credentials: Mapping[Origin, tuple[str, str]]) -> requests.auth.AuthBase:
    """A requests auth that sends Basic credentials to their own origin only."""
    import requests.auth
    import requests.utils

    class OriginAuth(requests.auth.AuthBase):
        def __init__(self, by_origin: Mapping[Origin, tuple[str, str]]) -> None:
            self._by_origin = dict(by_origin)

        def __repr__(self) -> str:
            return f"OriginAuth({len(self._by_origin)} origin(s))"

        def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
            url = r.url or ""
            origin = url_origin(url)
            found = self._by_origin.get(origin) if origin is not None else None
            if found is None:
                # A session-wide auth replaces requests' own defaults; keep them for other hosts.
                from_url = requests.utils.get_auth_from_url(url)
                found = from_url if any(from_url) else requests.utils.get_netrc_auth(url)
            if found is not None:
                r = requests.auth.HTTPBasicAuth(*found)(r)
            return r

    return OriginAuth(credentials)
