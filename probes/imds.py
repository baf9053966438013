"""EC2 instance metadata (IMDSv2): the instance type, with short timeouts so an off-EC2 run is not slowed.

Token first (PUT /latest/api/token), then GET /latest/meta-data/instance-type. Honours the AWS
SDK conventions AWS_EC2_METADATA_DISABLED and AWS_EC2_METADATA_SERVICE_ENDPOINT.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Mapping

from msgspec import Struct

DEFAULT_ENDPOINT = "http://169.254.169.254"
TOKEN_TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN_HEADER = "X-aws-ec2-metadata-token"


class ImdsResult(Struct, frozen=True):
    """The instance type EC2's metadata service gave, or None and why not."""

    instance_type: str | None
    detail: str


def imds_instance_type(env: Mapping[str, str] | None = None, timeout: float = 0.3) -> ImdsResult:
    env = os.environ if env is None else env
    if env.get("AWS_EC2_METADATA_DISABLED", "").strip().lower() == "true":
        return ImdsResult(None, "IMDS disabled by AWS_EC2_METADATA_DISABLED")
    endpoint = (env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    # Never let a proxy setting route the link-local metadata address elsewhere.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        put = urllib.request.Request(f"{endpoint}/latest/api/token", method="PUT",
                                     headers={TOKEN_TTL_HEADER: "21600"})
        with opener.open(put, timeout=timeout) as resp:
            token = resp.read().decode().strip()
        get = urllib.request.Request(f"{endpoint}/latest/meta-data/instance-type",
                                     headers={TOKEN_HEADER: token})
        with opener.open(get, timeout=timeout) as resp:
            value = resp.read().decode().strip()
    except urllib.error.HTTPError as exc:
        return ImdsResult(None, f"IMDS at {endpoint} answered HTTP {exc.code}")
    except (OSError, ValueError) as exc:
        return ImdsResult(None, f"IMDS at {endpoint} not reachable ({type(exc).__name__})")
    return ImdsResult(value or None, f"IMDSv2 at {endpoint}")
