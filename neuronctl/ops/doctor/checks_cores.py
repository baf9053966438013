"""`runtime.cores`: the NeuronCores the runtime will be asked for, against the cores there are.

The environment read is the doctor's own (Facts.environ, os.environ unless given): a target
interpreter the doctor inspects is run with that environment too, so it is the one a job
started from this shell would get.

Sources (RELEASE-FACTS section 10 and 5):
- NEURON_RT_VISIBLE_CORES: an integer or a range ("0-3") of NeuronCores; takes precedence over
  NEURON_RT_NUM_CORES; indices run from 0 to devices x cores - 1. NEURON_RT_NUM_CORES: how many
  free cores to reserve, 0 = all. NEURONCORE_GROUP_SIZES: deprecated, use either of those.
  https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/neuron-runtime/guides/configuration-guide.rst
  (comma lists of integers and ranges are accepted too, as the brief for this check asks; the
  guide's own examples show one integer or one range).
- NEURON_LOGICAL_NC_CONFIG: 1 or 2 only, Trn2/Trn3, must match the compiler's
  --logical-nc-config / -lnc; Trn2's default is 2.
  https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/about-neuron/arch/neuron-features/logical-neuroncore-config.rst
"""

from __future__ import annotations

import re
import shlex
from collections import Counter

from msgspec import Struct

from neuronctl.chips import get_chip
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.registry import HARDWARE, check
from neuronctl.ops.doctor.runner import CheckOutcome

MAX_CORE = 65535
MAX_ENV_CHARS = 4096
LNC_DEFAULT = {"trn2": 2}
"""The documented default LNC per chip (Trn2: 2). Trn3's default is not in the sources."""
_PART = re.compile(r"(\d{1,5})(?:-(\d{1,5}))?")
_LNC_FLAG = re.compile(r"^(?:--logical-nc-config|--lnc|-lnc)(?:=(.*))?$")


class CoreSet(Struct, frozen=True):
    """NEURON_RT_VISIBLE_CORES parsed: the cores, or why it cannot be."""

    cores: tuple[int, ...]
    error: str | None = None
    duplicates: tuple[int, ...] = ()


def parse_visible_cores(text: str) -> CoreSet:
    """"3", "0-3", "0,2-3": the cores named; an error for anything else (a reversed range, an
    empty part, a number past MAX_CORE)."""
    if len(text) > MAX_ENV_CHARS:
        return CoreSet((), f"longer than {MAX_ENV_CHARS} characters")
    cores: list[int] = []
    for part in text.strip().split(","):
        match = _PART.fullmatch(part.strip())
        if match is None:
            return CoreSet((), f"{part.strip()[:40]!r} is not a core index or a range like 0-3")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            return CoreSet((), f"range {first}-{last} runs backwards")
        if last > MAX_CORE:
            return CoreSet((), f"core {last} is past any Neuron host ({MAX_CORE})")
        cores.extend(range(first, last + 1))
    dups = sorted(c for c, n in Counter(cores).items() if n > 1)
    return CoreSet(tuple(sorted(set(cores))), None, tuple(dups))


def compiler_lnc(cc_flags: str) -> tuple[str | None, str | None]:
    """The LNC the compiler is told in NEURON_CC_FLAGS (--logical-nc-config, --lnc, -lnc, with
    = or a separate value), and an error where the flags cannot be split."""
    try:
        words = shlex.split(cc_flags[:MAX_ENV_CHARS])
    except ValueError as exc:
        return None, f"NEURON_CC_FLAGS cannot be split ({exc})"
    value = None
    for i, word in enumerate(words):
        match = _LNC_FLAG.match(word)
        if match:
            value = match.group(1) if match.group(1) is not None else \
                (words[i + 1] if i + 1 < len(words) else "")
    return value, None


def _ranges(cores: list[int] | tuple[int, ...]) -> str:
    out, start = [], None
    for i, c in enumerate(cores):
        if start is None:
            start = c
        if i + 1 == len(cores) or cores[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def _lnc(f: Facts, problems: list[str]) -> int | None:
    """The LNC the runtime will use, with problems found in how it is set."""
    env = f.environ
    chip = f.hardware.chip
    lnc_env = env.get("NEURON_LOGICAL_NC_CONFIG")
    lnc: int | None = None
    if lnc_env is not None:
        if lnc_env.strip() not in ("1", "2"):
            problems.append(f"NEURON_LOGICAL_NC_CONFIG={lnc_env[:20]!r}: only 1 or 2 are valid")
        else:
            lnc = int(lnc_env.strip())
            if chip is not None and not get_chip(chip).lnc:
                problems.append(f"NEURON_LOGICAL_NC_CONFIG is set but LNC applies to Trn2/Trn3 "
                                f"only, not {chip}")
    compiled, error = compiler_lnc(env.get("NEURON_CC_FLAGS", ""))
    if error:
        problems.append(error)
    effective = lnc or f.hardware.logical_nc_config or LNC_DEFAULT.get(chip or "")
    if compiled is not None:
        if compiled not in ("1", "2"):
            problems.append(f"NEURON_CC_FLAGS --lnc {compiled[:20]!r}: only 1 or 2 are valid")
        elif effective is not None and int(compiled) != effective:
            problems.append(f"the compiler is told LNC={compiled} (NEURON_CC_FLAGS) but the "
                            f"runtime runs at LNC={effective}: the NEFF will not load on these "
                            "cores")
    return effective


def _holder_overlap(f: Facts, cores: tuple[int, ...], per_device: int) -> list[str]:
    """Visible cores on devices another process holds open (device.holders' scan)."""
    if not f.sysroot.glob("/dev", "neuron*") or per_device <= 0:
        return []
    from neuronctl.probes.device_holders import find_device_holders

    held: dict[int, list[int]] = {}
    for holder in find_device_holders(f.sysroot).holders:
        for dev in holder.devices:
            held.setdefault(int(dev[len("/dev/neuron"):]), []).append(holder.pid)
    out = []
    for device, pids in sorted(held.items()):
        mine = [c for c in cores if c // per_device == device]
        if mine:
            out.append(f"cores {_ranges(mine)} are on neuron{device}, which pid "
                       f"{', '.join(map(str, sorted(set(pids))))} holds")
    return out


def _counts(f: Facts, lnc: int | None) -> tuple[int | None, int | None]:
    """(cores the runtime indexes, cores per device) at the effective LNC."""
    hw = f.hardware
    physical = hw.physical_cores
    if physical is None or not hw.device_count:
        return None, None
    total = get_chip(hw.chip).logical_cores(physical, lnc) if hw.chip else physical
    if total is None:
        return None, None
    return total, total // hw.device_count


def _visible_cores(visible: str, total: int | None, lnc: int | None, problems: list[str],
                   warnings: list[str]) -> tuple[int, ...] | None:
    """The cores NEURON_RT_VISIBLE_CORES names (None where it cannot be read), with what is wrong
    with them: unreadable or past this host's `total` (problems), a core named twice (warnings)."""
    parsed = parse_visible_cores(visible)
    if parsed.error:
        problems.append(f"NEURON_RT_VISIBLE_CORES: {parsed.error}")
        return None
    if parsed.duplicates:
        warnings.append(f"NEURON_RT_VISIBLE_CORES names cores {_ranges(parsed.duplicates)} twice")
    out = [c for c in parsed.cores if total is not None and c >= total]
    if out and total is not None:
        problems.append(f"NEURON_RT_VISIBLE_CORES: cores {_ranges(out)} out of range "
                        f"(this host has 0-{total - 1} at LNC={lnc or 'n/a'})")
    return parsed.cores


@check("runtime.cores", "NeuronCore allocation", gathers=HARDWARE)
def check_runtime_cores(f: Facts) -> CheckOutcome:
    env = f.environ
    problems: list[str] = []
    warnings: list[str] = []
    if env.get("NEURONCORE_GROUP_SIZES") is not None:
        warnings.append("NEURONCORE_GROUP_SIZES is deprecated: use NEURON_RT_VISIBLE_CORES or "
                        "NEURON_RT_NUM_CORES")
    hw = f.hardware
    lnc = _lnc(f, problems) if hw.present or "NEURON_LOGICAL_NC_CONFIG" in env else None
    total, per_device = _counts(f, lnc) if hw.present else (None, None)
    details = [f"NeuronCores indexed by the runtime: {total} ({hw.device_count} device(s) x "
               f"{per_device}, LNC={lnc or 'n/a'})"] if total is not None else []
    details += [f"{k}={env[k][:200]}" for k in ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES",
                                                 "NEURON_LOGICAL_NC_CONFIG", "NEURON_CC_FLAGS",
                                                 "NEURONCORE_GROUP_SIZES") if k in env]
    visible = env.get("NEURON_RT_VISIBLE_CORES")
    chosen = None if visible is None else _visible_cores(visible, total, lnc, problems, warnings)
    if visible is not None and env.get("NEURON_RT_NUM_CORES") is not None:
        details.append("NEURON_RT_VISIBLE_CORES takes precedence over NEURON_RT_NUM_CORES")
    num = env.get("NEURON_RT_NUM_CORES")
    if num is not None and visible is None:
        text = num.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 5):
            problems.append(f"NEURON_RT_NUM_CORES={num[:20]!r} is not a count of cores")
        elif total is not None and int(text) > total:
            problems.append(f"NEURON_RT_NUM_CORES={text} asks for more than the {total} cores "
                            "this host has")
    if chosen and per_device:
        warnings += _holder_overlap(f, chosen, per_device)
    fix = ("set NEURON_RT_VISIBLE_CORES to cores within 0-"
           f"{(total or 1) - 1} (e.g. 0-{max((per_device or 1) - 1, 0)} for the first device), "
           "and the same LNC for the compiler (NEURON_CC_FLAGS --lnc) and the runtime "
           "(NEURON_LOGICAL_NC_CONFIG)")
    if problems:
        return CheckOutcome("fail", "; ".join(problems), fix, tuple(details), "fix")
    if warnings:
        return CheckOutcome("warn", "; ".join(warnings), fix, tuple(details), "fix")
    if not hw.present:
        return CheckOutcome("skip", "no Neuron hardware: no NeuronCores to allocate", None,
                       tuple(details))
    asked = (f"cores {_ranges(chosen)} (NEURON_RT_VISIBLE_CORES)" if chosen
             else f"{num.strip()} core(s) (NEURON_RT_NUM_CORES)" if num and num.strip() != "0"
             else "all cores")
    return CheckOutcome("pass", f"the runtime gets {asked}"
                   + (f" of {total} at LNC={lnc}" if total is not None and lnc else
                      f" of {total}" if total is not None else ""), None, tuple(details))
