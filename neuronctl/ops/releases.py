"""`releases import` and `releases update` as operations: AWS's n2-manifest.json (or a neuronctl
manifest), read (bounded) and converted to neuronctl's manifest format; `import` writes it where
asked, `update` merges it into the data in use and stores that in the user data directory."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from msgspec import Struct

from neuronctl.atomic import write_text_atomic
from neuronctl.errors import FaultError, InputError
from neuronctl.ops.reporter import NullReporter, Reporter, Written
from neuronctl.release.aws_import import convert_n2
from neuronctl.release.manifest import decode_json, parse_manifest, read_json_file
from neuronctl.release.merge import Merge, check_merged, merge
from neuronctl.release.model import MAX_JSON_BYTES, Manifest
from neuronctl.release.rollback import refuse_rollbacks
from neuronctl.release.source_checks import check_url
from neuronctl.routing import redact_url
from neuronctl.settings import secure_url


class ReleasesImport(Struct, frozen=True):
    """An AWS release table converted to a neuronctl manifest, and where it was written."""

    source: Path
    manifest: Manifest
    text: str
    """The converted manifest as neuronctl reads it (JSON)."""
    written: Path | None
    """Where it was written, if anywhere."""

    def to_json(self) -> dict[str, Any]:
        return {"source": str(self.source),
                "output": str(self.written) if self.written else None,
                "generated_from": dict(self.manifest.generated_from),
                "releases": [r.to_json() for r in self.manifest.releases]}


def import_aws_manifest(source: Path, write_to: Path | None = None,
                        reporter: Reporter | None = None) -> ReleasesImport:
    """Convert `source`; write the result to `write_to` when given. Bad input (a file that is no
    n2 manifest, a malformed field) is an InputError naming the file and field; nothing is
    written then."""
    reporter = reporter or NullReporter()
    manifest = convert_n2(read_json_file(source), str(source))
    text = json.dumps(manifest.to_json(), indent=1) + "\n"
    if write_to is not None:
        write_text_atomic(write_to, text)
        reporter.emit(Written(f"wrote {len(manifest.releases)} releases to {write_to}", "import",
                              path=str(write_to), count=len(manifest.releases)))
    return ReleasesImport(source, manifest, text, write_to)




# ------------------------------------------------------------------------------ releases update

DEFAULT_MANIFEST_URL = ("https://raw.githubusercontent.com/aws-neuron/aws-neuron-sdk/master/"
                        "src/helperscripts/n2-manifest.json")
FETCH_TIMEOUT_S = 30.0


class ReleasesUpdate(Struct, frozen=True):
    """What `releases update` fetched, found and stored."""

    source: str
    merge: Merge
    stored: Path | None
    """Where the merged data was written (None: nothing changed, nothing written)."""
    releases: int

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "stored": str(self.stored) if self.stored else None,
                "releases": self.releases, **self.merge.to_json()}


def _fetch_url(url: str, timeout: float) -> bytes:
    """GET a manifest: bounded in size (the manifest limit) and in time (`timeout` in all: one
    socket read at a time, so a server trickling bytes cannot hold it); no content encoding (a
    compressed body could be a bomb)."""
    import time

    import requests
    import urllib3

    deadline = time.monotonic() + timeout
    shown = redact_url(url)
    try:
        with requests.get(url, stream=True, timeout=(min(timeout, 10.0), min(timeout, 10.0)),
                          headers={"Accept": "application/json",
                                   "Accept-Encoding": "identity"}) as resp:
            if resp.status_code != 200:
                raise FaultError(f"{shown}: HTTP {resp.status_code}; nothing was changed")
            # Every hop, not only where the redirects end: https -> http -> https lets whoever
            # is on the plain hop choose the data.
            for hop in [*(r.url for r in resp.history[1:]), resp.url]:  # history[0]: the source
                check_url(hop, f"{shown} redirected to")
                secure_url(hop, f"{shown} redirected to")
            if resp.headers.get("Content-Encoding", "identity").lower() != "identity":
                raise InputError(f"{shown}: served with Content-Encoding "
                                 f"{resp.headers['Content-Encoding'][:40]!r}; expected none")
            chunks, size = [], 0
            while chunk := resp.raw.read1(1 << 16):
                size += len(chunk)
                if size > MAX_JSON_BYTES:
                    raise InputError(f"{shown}: larger than {MAX_JSON_BYTES >> 20} MB; not a "
                                     "manifest")
                if time.monotonic() > deadline:
                    raise FaultError(f"{shown}: not fetched within {timeout:g} s; nothing was "
                                     "changed")
                chunks.append(chunk)
            return b"".join(chunks)
    except (requests.RequestException, OSError, urllib3.exceptions.HTTPError) as exc:
        raise _unfetched(exc, url) from None  # OSError, urllib3: read1's, below requests


def _unfetched(exc: BaseException, url: str) -> FaultError:
    """A fetch that failed, as a user fixes it: the host, the kind of failure (DNS, refused,
    timeout, proxy, TLS: the network preflight's words), and the way round it (--from FILE)."""
    import os

    from neuronctl.resolvers.preflight import classify

    kind, why = classify(exc, url, os.environ)
    host = urlsplit(url).hostname or "the host"
    return FaultError(f"{redact_url(url)}: cannot fetch from {host}: {why} ({kind}); nothing was "
                      "changed", hint="where this machine cannot reach it, download the manifest "
                                      "elsewhere and run `neuronctl releases update --from FILE`")


def fetch_manifest(source: str, timeout: float = FETCH_TIMEOUT_S) -> Manifest:
    """A manifest from a URL (http, https, file) or a path, read through the same bounded,
    checked loader as every manifest; AWS's n2 format is converted as `releases import` does."""
    scheme = urlsplit(source).scheme.lower()
    if "://" in source or (scheme and len(scheme) > 1):
        check_url(source, "releases update --from")
        secure_url(source, "releases update --from")
        if scheme == "file":
            path = Path(url2pathname(urlsplit(source).path))
            data: object = read_json_file(path)
        else:
            data = decode_json(_fetch_url(source, timeout), redact_url(source))
    else:
        data = read_json_file(Path(source))
    where = redact_url(source)
    if isinstance(data, dict) and "neuron_releases" in data:
        return convert_n2(data, where)
    return parse_manifest(data, where, origin="fetched")


def update_releases(in_use: Manifest, source: str, *, accept: bool, store: Path,
                    today: dt.date | None = None, timeout: float = FETCH_TIMEOUT_S,
                    reporter: Reporter | None = None) -> ReleasesUpdate:
    """Fetch `source`, merge it into the data in use (release.merge) and store the result
    atomically at `store`, which is used from then on; the store records the source and the
    time. A rollback (release.rollback) or bad input anywhere: nothing is written."""
    reporter = reporter or NullReporter()
    fetched = fetch_manifest(source, timeout)
    now = dt.datetime.now(dt.timezone.utc)
    day = (today or now.date()).isoformat()
    is_url = "://" in source
    address = redact_url(source) if is_url else Path(source).resolve().as_uri()
    result = merge(in_use, fetched, accept=accept, source_url=address, today=day,
                   at=now.isoformat(timespec="seconds"))
    merged = check_merged(result.data, str(store))
    refuse_rollbacks(merged, result.touched, address)
    if not result.changed:
        return ReleasesUpdate(source, result, None, len(in_use.releases))
    store.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(store, json.dumps(result.data, indent=1) + "\n")
    reporter.emit(Written(f"stored {len(merged.releases)} releases in {store}", "update",
                          path=str(store), count=len(merged.releases)))
    return ReleasesUpdate(source, result, store, len(merged.releases))


__all__ = ["DEFAULT_MANIFEST_URL", "ReleasesImport", "ReleasesUpdate", "fetch_manifest",
           "import_aws_manifest", "update_releases"]
