"""The least any download-verify-then-apply installer does, with nothing else: fetch every wheel
of a pylock.toml (4 at a time, plain http.client into one reused buffer: no requests or urllib
start-up), check each sha256, and only then run the engine on the local files. Optionally a
command runs alongside the downloads (a new venv being created).

    python _verified_floor.py LOCK DEST --install '["uv", "pip", "install", ...]' [--alongside '[...]']

The install argv gets the downloaded files appended. Exit 1 on any mismatch, before installing.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import tomllib


def fetch(wheel: dict, dest: Path) -> Path:
    out = dest / wheel["name"]
    url = urlsplit(wheel["url"])
    conn = http.client.HTTPConnection(url.hostname, url.port)
    conn.request("GET", url.path)
    response = conn.getresponse()
    digest = hashlib.sha256()
    view = memoryview(bytearray(1 << 20))
    with out.open("wb") as fh:
        while n := response.readinto(view):
            digest.update(view[:n])
            fh.write(view[:n])
    conn.close()
    if response.status != 200 or digest.hexdigest() != wheel["hashes"]["sha256"]:
        sys.exit(f"{wheel['name']}: HTTP {response.status} or sha256 mismatch")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("lock", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--install", required=True)
    parser.add_argument("--alongside")
    args = parser.parse_args()
    wheels = [w for p in tomllib.loads(args.lock.read_text())["packages"] for w in p["wheels"]]
    args.dest.mkdir(parents=True, exist_ok=True)
    side = subprocess.Popen(json.loads(args.alongside)) if args.alongside else None
    with ThreadPoolExecutor(4) as pool:
        files = list(pool.map(lambda w: fetch(w, args.dest), wheels))
    if side is not None and side.wait() != 0:
        sys.exit("the command alongside failed")
    sys.exit(subprocess.run([*json.loads(args.install), *map(str, files)], check=False).returncode)


if __name__ == "__main__":
    main()
