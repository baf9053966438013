"""What the engine installs from, written for it: exactly the plan's files, each with the URL it
is fetched from and its sha256, and nothing that could name an index. uv gets a PEP 751
`pylock.toml` of those files (it fetches each once and resolves nothing), pip a requirements file
of `name @ URL --hash=sha256:...` lines (with --require-hashes).

Credentials: an index given with `user:password@` in its URL (--index, NEURONCTL_INDEX_*, config)
is the only secret neuronctl holds, and the engine gets it inside this file, in the URLs of that
index's own origin (scheme, host, port) only: never on the engine's argv (which `ps` shows) and
never in its environment. The file is private (a 0700 directory, mode 0600) and deleted when the
engine is done. Credentials kept in ~/.netrc stay there: both engines read it as neuronctl does.
What is shown (a dry run, JSON, errors) is always the redacted form.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from neuronctl.backend.engine import Engine
from neuronctl.locked_file import LockedFile
from neuronctl.routing import Origin, redact_url, url_origin
from neuronctl.safety import checked_url

URL_SAFE = "!#$&'()*+,/:;=?@[]-._~%"
"""RFC 3986's reserved and unreserved characters (letters and digits are always kept) and '%':
anything else in a URL is percent-encoded for the engine. `{` and `}` are among the rest, so no
`${NAME}` reaches pip, which would put that environment variable's value into the URL."""



def engine_url(url: str) -> str:
    """The URL as the engine is given it: checked (one plain http(s)/file URL) and with every
    character outside RFC 3986 percent-encoded (the same URL to any server)."""
    return quote(checked_url(url, "engine input"), safe=URL_SAFE)


def _with_credentials(url: str, credentials: Mapping[Origin, tuple[str, str]]) -> str:
    url = engine_url(url)
    origin = url_origin(url)
    found = credentials.get(origin) if origin is not None else None
    if found is None:
        return url
    parts = urlsplit(url)
    user, password = (quote(part, safe="") for part in found)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"{user}:{password}@{host}", parts.path, parts.query,
                       parts.fragment))


def shown_lines(files: Sequence[LockedFile]) -> tuple[str, ...]:
    """The files as they may be printed (a dry run, JSON): no credentials."""
    return tuple(f.requirement(redact_url(f.url)) for f in files)


def render(files: Sequence[LockedFile], engine: Engine,
           credentials: Mapping[Origin, tuple[str, str]]) -> str:
    """The engine's input for exactly `files` (the engine writes its own form), each checked
    again here, whoever made it."""
    return engine.render_input([f.checked() for f in files],
                               lambda f: _with_credentials(f.url, credentials))


@contextlib.contextmanager
def written(files: Sequence[LockedFile], engine: Engine,
            credentials: Mapping[Origin, tuple[str, str]], *,
            private_copies: Callable[[Path], str] | None = None) -> Iterator[Path]:
    """The engine's input for `files`, private to this user, removed afterwards.
    `private_copies`: local files are verified copies in that private folder (private_copy.py:
    for an engine that opens a file again after it checked it), named in errors by this."""
    import tempfile  # only an install that runs an engine writes its input

    with tempfile.TemporaryDirectory(prefix="neuronctl-install-") as folder:  # mode 0700
        if private_copies:
            from neuronctl.ops.install.private_copy import private_copies as copies

            files = copies(files, Path(folder) / "files", private_copies)
        text = render(files, engine, credentials)
        path = Path(folder) / engine.input_name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        yield path
