"""torch's own bug-report facts (torch.utils.collect_env.get_env_info()), from the target interpreter.

torch knows its own build best (debug build, CUDA/cuDNN/HIP, XNNPACK, the allocator config), so
its collect_env is run rather than rewritten: probes/scripts/torch_env.py runs in the target
through target_run (a private channel, a deadline, the process group killed at the end). What it
writes is untrusted: each line is checked for shape, type and size, free text is made printable
and loses credentials, and only then is anything shown.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Literal

from msgspec import Struct, field

from neuronctl.probes.target_run import TargetScript, last_line, printable
from neuronctl.redact import redact

HELLO = {"torch_env": "neuronctl-torch-env", "version": 1}
CHANNEL_CAP = 512 * 1024
FIELD_CAP = 128 * 1024
"""One field's text: lscpu's output and a CUDA machine's `pip list` lines run to a few KiB."""
LINE_CAP = 4096
FIELD_COUNT_CAP = 64
FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")

Status = Literal["ok", "absent", "error", "timeout"]
Value = str | bool | None | dict[str, str]


class MalformedFacts(ValueError):
    """A line on the channel that is not what the script writes."""


class TorchEnvFacts(Struct, frozen=True):
    """What torch's collect_env says of the target, for a bundle (or why it said nothing)."""

    status: Status
    """ok: collect_env answered; absent: no torch in the target; error: torch or the script
    failed; timeout: killed at the deadline."""
    detail: str = ""
    python_build: str | None = None
    """sys.version of the target, on one line (the build string collect_env shows)."""
    python_bits: int | None = None
    python_platform: str | None = None
    fields: Mapping[str, Value] = field(default_factory=dict)
    """get_env_info()'s fields under torch's own names, in its order."""
    wall_ms: float = 0.0


def clean(text: str, cap: int = FIELD_CAP) -> str:
    """Untrusted multi-line text: bounded, without credentials, only printable characters, tabs
    and newlines (redacted whole, then cut, so that no cut splits a credential from its '@')."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "?" for ch in redact(text)[:cap])


def _value(name: str, raw: object) -> Value:
    if raw is None or isinstance(raw, bool):
        return raw
    if isinstance(raw, int | float):
        return str(raw)
    if isinstance(raw, str):
        return clean(raw)
    if isinstance(raw, dict) and len(raw) <= FIELD_COUNT_CAP:
        return {printable(str(k), 128): printable(str(v), LINE_CAP) for k, v in raw.items()}
    raise MalformedFacts(f"{printable(name, 64)}: not a string, a flag or a small table")


def parse_fields(raw: object) -> dict[str, Value]:
    if not isinstance(raw, dict) or len(raw) > FIELD_COUNT_CAP:
        raise MalformedFacts("collect_env: not a JSON object of at most 64 fields")
    fields: dict[str, Value] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
            raise MalformedFacts(f"collect_env: field name {printable(str(name), 64)!r}")
        fields[name] = _value(name, value)
    return fields


def _python(raw: object) -> tuple[str, int, str]:
    if not isinstance(raw, dict):
        raise MalformedFacts("python: not a JSON object")
    build, bits, plat = raw.get("build"), raw.get("bits"), raw.get("platform")
    if not isinstance(build, str) or not isinstance(plat, str):
        raise MalformedFacts("python: build or platform is not a string")
    if not isinstance(bits, int) or isinstance(bits, bool) or bits not in (32, 64):
        raise MalformedFacts("python: bits is not 32 or 64")
    return printable(build, LINE_CAP), bits, printable(plat, LINE_CAP)


def _record(line: bytes) -> dict[str, object]:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        raise MalformedFacts("a line that is not JSON") from None
    if not isinstance(value, dict):
        raise MalformedFacts("a line that is not a JSON object")
    return value


def parse_torch_env(lines: list[bytes], timeout: float | None, returncode: int | None,
                    stderr_tail: str, wall_ms: float) -> TorchEnvFacts:
    """What the script wrote, and how its interpreter ended, as facts (never raises)."""
    if not lines or _safe_record(lines[0]) != HELLO:
        why = f"timed out after {timeout:g}s" if returncode is None and timeout else (
            f"exit {returncode}: {last_line(stderr_tail)}")
        return TorchEnvFacts("error", f"the interpreter did not run the script ({why})",
                             wall_ms=wall_ms)
    try:
        python = _python(_record(lines[1]).get("python")) if len(lines) > 1 else None
        answer = _record(lines[2]) if len(lines) > 2 else None
        facts = _answer(answer) if answer is not None else None
    except MalformedFacts as exc:
        return TorchEnvFacts("error", f"unreadable output from the target ({exc})", wall_ms=wall_ms)
    build, bits, plat = python if python else (None, None, None)
    if facts is None:
        detail = (f"timed out after {timeout:g}s (importing torch or running collect_env)"
                  if returncode is None else f"exit {returncode}: {last_line(stderr_tail)}")
        status: Status = "timeout" if returncode is None else "error"
        return TorchEnvFacts(status, detail, build, bits, plat, wall_ms=wall_ms)
    return TorchEnvFacts(facts[0], facts[1], build, bits, plat, facts[2], wall_ms)


def _safe_record(line: bytes) -> object:
    try:
        return _record(line)
    except MalformedFacts:
        return None


def _answer(record: dict[str, object]) -> tuple[Status, str, dict[str, Value]]:
    state = record.get("torch")
    if state == "absent":
        return "absent", "torch is not installed in the target environment", {}
    if state == "error":
        error = record.get("error")
        return "error", printable(error if isinstance(error, str) else "unknown error"), {}
    if state == "ok":
        return "ok", "", parse_fields(record.get("collect_env"))
    raise MalformedFacts("torch: not ok, absent or error")


class TorchEnvRun:
    """The script running in the background (importing torch and its collect_env take seconds);
    result() waits at most until `timeout` seconds after the start."""

    def __init__(self, python: str, timeout: float, *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None) -> None:
        self.timeout = timeout
        self._start = time.monotonic()
        self._script: TargetScript | None = None
        self._error = ""
        try:
            self._script = TargetScript(python, "torch_env.py", [], env=env, cwd=cwd, contain=True)
        except OSError as exc:
            self._error = f"cannot run {python}: {exc.strerror or exc}"

    def result(self) -> TorchEnvFacts:
        if self._script is None:
            return TorchEnvFacts("error", printable(self._error))
        left = max(self.timeout - (time.monotonic() - self._start), 0.01)
        run = self._script.collect(left, CHANNEL_CAP)
        lines = [line for line in run.channel.split(b"\n") if line]
        if run.channel_overflow:
            return TorchEnvFacts("error", f"the target wrote more than {CHANNEL_CAP // 1024} KiB",
                                 wall_ms=run.wall_ms)
        return parse_torch_env(lines, self.timeout, run.returncode, run.stderr_tail, run.wall_ms)

    def kill(self) -> None:
        if self._script is not None:
            self._script.kill()
