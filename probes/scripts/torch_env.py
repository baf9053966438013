# ruff: noqa: UP006, UP035  (runs on Python 3.6+: no builtin generics)
"""torch's own bug-report facts, run inside the target interpreter (see probes/torch_env.py).

argv: CHANNEL_FD. Writes to the channel, one JSON document a line: a hello line; the interpreter's
build (sys.version, as torch's collect_env shows it); then what torch.utils.collect_env's
get_env_info() returns, as a JSON object of its fields, or why it could not run. The interpreter's
line comes before torch is imported, so a torch that hangs or crashes on import still leaves it.
"""

import importlib
import importlib.util
import json
import os
import platform
import sys
import traceback
from typing import IO, Any, Dict, List

HELLO = {"torch_env": "neuronctl-torch-env", "version": 1}


def open_channel(argv: List[str]) -> IO[str]:
    """The private channel named in argv: not inherited by anything torch starts, and this folder
    not on sys.path (it is not part of the environment being inspected)."""
    fd = int(argv[1])
    os.set_inheritable(fd, False)
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]
    return os.fdopen(fd, "w", encoding="utf-8")


def send(channel: IO[str], record: Dict[str, Any]) -> None:
    channel.write(json.dumps(record, default=str) + "\n")
    channel.flush()


def interpreter() -> Dict[str, Any]:
    return {"python": {"build": sys.version.replace("\n", " "), "bits": sys.maxsize.bit_length() + 1,
                       "platform": platform.platform()}}


def torch_facts() -> Dict[str, Any]:
    try:
        if importlib.util.find_spec("torch") is None:
            return {"torch": "absent"}
    except (ImportError, ValueError):
        return {"torch": "absent"}
    try:
        # By name: this file is also type-checked where torch is absent or typed otherwise.
        collect_env = importlib.import_module("torch.utils.collect_env")
    except Exception:  # whatever a broken torch raises on import is the answer
        return {"torch": "error", "error": traceback.format_exc(limit=1).strip().splitlines()[-1]}
    try:
        info = collect_env.get_env_info()
        fields = info._asdict()
    except Exception:
        return {"torch": "error",
                "error": "get_env_info: " + traceback.format_exc(limit=1).strip().splitlines()[-1]}
    return {"torch": "ok", "collect_env": dict(fields)}


def main() -> int:
    channel = open_channel(sys.argv)
    send(channel, HELLO)
    send(channel, interpreter())
    # collect_env's own subprocesses (pip list, nvidia-smi, lscpu) write to their pipes, never ours.
    send(channel, torch_facts())
    return 0


if __name__ == "__main__":
    sys.exit(main())
