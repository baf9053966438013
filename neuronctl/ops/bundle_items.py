"""What a support bundle holds, item by item: each gatherer returns text or says why it cannot.

Gatherers run external tools in their own session with a time limit (the whole process group is
killed at the limit, so a grandchild holding the pipe cannot hang the bundle), and read files
with a size limit. A gatherer never decides the fate of the bundle: it raises `Unavailable`."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from neuronctl.errors import NeuronctlError
from neuronctl.probes.device_holders import find_device_holders
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.system_facts import read_bounded, read_device_access, read_kernel_modules
from neuronctl.probes.system_packages import find_runtime_libraries, read_system_packages
from neuronctl.probes.target_run import script_path
from neuronctl.probes.tools import SYSROOT_TOOLS_REFUSED, run_capped, sysroot_tools_allowed
from neuronctl.records import asdict
from neuronctl.safety import contained
from neuronctl.tomlfile import loads_toml

MAX_CONFIG = 1024 * 1024
MAX_LOG_TAIL = 16 * 1024 * 1024
MAX_COMMAND_OUTPUT = 64 * 1024 * 1024
"""Bytes read from one stream of a gathered command; each item is cut to its own cap later."""
KERNEL_LOGS = ("/var/log/kern.log", "/var/log/messages", "/var/log/syslog")
_NEURON_LINE = re.compile(r"(?i)neuron|1d0f")



class Unavailable(Exception):
    """The item could not be gathered; the message says why (it goes into the index)."""

    def __init__(self, reason: str, status: str = "unavailable") -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


class Gathered(Struct, frozen=True):
    """The text one bundle item gathered, where it came from, and whether it is whole."""

    text: str
    source: str
    note: str | None = None
    """What the index should say about it (a non-zero exit, nothing matched)."""
    partial: bool = False
    """Only part of it is there (a tool that failed after printing something)."""


class Context(Struct, frozen=True):
    """What every bundle item gathers from: the root, the interpreter, how to run neuronctl."""

    root: SysRoot
    python: str
    neuronctl_argv: tuple[str, ...]
    """How to run this neuronctl (interpreter, -m, global options such as --manifest)."""
    environ: Mapping[str, str]
    config: Path
    workdir: Path


class Item(Struct, frozen=True):
    """One member of a bundle: its file name, how it is gathered, its time and size caps."""

    name: str
    """The member's file name inside the archive."""
    title: str
    gather: Callable[[Context, float], Gathered]
    timeout: float
    cap: int


def run_limited(argv: Sequence[str], timeout: float, environ: Mapping[str, str] | None = None,
                cap: int = MAX_COMMAND_OUTPUT) -> tuple[int, str, str]:
    """Run argv in its own session, reading at most `cap` bytes of each stream; at the limit or
    the cap its whole process group is killed and Unavailable raised. A tool that is not there
    is Unavailable too."""
    try:
        done = run_capped(argv, timeout, cap, env=environ)
    except OSError as exc:
        raise Unavailable(f"{argv[0]}: could not run: {exc.strerror or exc}") from None
    if done.timed_out:
        raise Unavailable(f"timed out after {timeout:g}s", "failed")
    if done.over_cap or done.returncode is None:
        raise Unavailable(f"output over {cap} bytes: stopped", "failed")
    return (done.returncode, done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"))


def _tool(ctx: Context, name: str) -> str:
    candidate = ctx.root.path(f"/opt/aws/neuron/bin/{name}")
    if candidate.is_file() and ctx.root.inside(candidate):  # a link out of the tree: not its tool
        if not sysroot_tools_allowed(ctx.root, ctx.environ):
            raise Unavailable(SYSROOT_TOOLS_REFUSED)
        return str(candidate)
    found = shutil.which(name) if ctx.root.is_host else None
    if found is None:
        where = f"{ctx.root.display(candidate)}" + (" or PATH" if ctx.root.is_host else "")
        raise Unavailable(f"{name} not found (looked in {where})")
    return found


def _system_tool(name: str, package: str) -> str:
    # modinfo lives in /sbin, which a user's PATH often lacks.
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    found = shutil.which(name, path=path)
    if found is None:
        raise Unavailable(f"{name} not found on PATH, /usr/sbin or /sbin (package {package})")
    return found


def _live_only(ctx: Context, what: str) -> None:
    if not ctx.root.is_host:
        raise Unavailable(f"{what} reads the live machine; --sysroot inspects a captured tree")


def _command(argv: Sequence[str], timeout: float, ok_codes: tuple[int, ...] = (0,),
             environ: Mapping[str, str] | None = None, shown: str | None = None) -> Gathered:
    code, out, err = run_limited(argv, timeout, environ)
    shown = shown or " ".join(Path(argv[0]).name if i == 0 else a for i, a in enumerate(argv))
    if code in ok_codes:
        return Gathered(out, shown, None if code == 0 else f"exit {code}")
    if out.strip():
        return Gathered(out + ("\n--- stderr ---\n" + err if err.strip() else ""), shown,
                        f"exit {code}", partial=True)
    raise Unavailable(f"{shown}: exit {code}: {err.strip()[:300] or 'no output'}", "failed")


def neuronctl_item(*args: str, ok_codes: tuple[int, ...] = (0,)) -> Callable[[Context, float], Gathered]:
    def gather(ctx: Context, timeout: float) -> Gathered:
        argv = [*ctx.neuronctl_argv, *args, "--python", ctx.python]
        environ = {**ctx.environ, "NO_COLOR": "1", "NEURONCTL_SYSROOT": str(ctx.root.root)}
        shown = " ".join(["neuronctl", *args, "--python", ctx.python])  # not the boot code
        return _command(argv, timeout, ok_codes, environ, shown)
    return gather


def neuron_ls_item(*flags: str) -> Callable[[Context, float], Gathered]:
    def gather(ctx: Context, timeout: float) -> Gathered:
        return _command([_tool(ctx, "neuron-ls"), *flags], timeout)
    return gather


def gather_lspci(ctx: Context, timeout: float) -> Gathered:
    _live_only(ctx, "lspci")
    return _command([_system_tool("lspci", "pciutils"), "-vvv", "-d", "1d0f:"], timeout)


def gather_modinfo(ctx: Context, timeout: float) -> Gathered:
    _live_only(ctx, "modinfo")
    return _command([_system_tool("modinfo", "kmod"), "neuron"], timeout)


def _neuron_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if _NEURON_LINE.search(line)) + "\n"


def _log_lines(text: str, source: str) -> Gathered:
    lines = _neuron_lines(text)
    return Gathered(lines, f"{source} (neuron lines)",
                    None if lines.strip() else f"no neuron line in {source}")


def gather_kernel_log(ctx: Context, timeout: float) -> Gathered:
    """Neuron lines of dmesg (the live machine) or else of the kernel log files."""
    tried = []
    if ctx.root.is_host and shutil.which("dmesg"):
        try:
            code, out, err = run_limited(["dmesg"], timeout)
            if code == 0:
                return _log_lines(out, "dmesg")
            tried.append(f"dmesg: exit {code}: {err.strip()[:200]}")
        except Unavailable as exc:
            tried.append(f"dmesg: {exc.reason}")
    for log in KERNEL_LOGS:
        data = ctx.root.read_bytes(log, MAX_LOG_TAIL, tail=True)  # kept to the root
        if data is None:
            tried.append(f"{log}: absent, unreadable or not a regular file")
            continue
        return _log_lines(data.decode("utf-8", "replace"), log)
    raise Unavailable("; ".join(tried) or "no kernel log readable")


def gather_packages(ctx: Context, timeout: float) -> Gathered:
    pk = read_system_packages(ctx.root)
    if not pk.packages:
        raise Unavailable("no aws-neuron* package in the dpkg or rpm database")
    lines = [f"{name} {version}" for name, version in sorted(pk.packages.items())]
    return Gathered("\n".join(lines) + "\n", f"aws-neuron* from {pk.source}")


def gather_distributions(ctx: Context, timeout: float) -> Gathered:
    return _command([ctx.python, "-I", script_path("list_distributions.py")], timeout)


def gather_system_facts(ctx: Context, timeout: float) -> Gathered:
    facts = {"device_holders": asdict(find_device_holders(ctx.root)),
             "kernel_modules": asdict(read_kernel_modules(ctx.root)),
             "system_packages": asdict(read_system_packages(ctx.root)),
             "runtime_libraries": [asdict(x) for x in find_runtime_libraries(ctx.root, ctx.environ)],
             "device_access": asdict(read_device_access(ctx.root))}
    return Gathered(json.dumps(facts, indent=2, sort_keys=True) + "\n", "neuronctl system probes")


def _tool_table(ctx: Context) -> dict[str, object]:
    text = read_bounded(ctx.config, MAX_CONFIG + 1)
    if text is None:
        raise Unavailable(f"{ctx.config}: no such file")
    if len(text) > MAX_CONFIG:
        raise Unavailable(f"{ctx.config}: larger than {MAX_CONFIG} bytes", "failed")
    try:
        data = loads_toml(text, str(ctx.config))
    except NeuronctlError as exc:
        raise Unavailable(exc.message, "failed") from None
    table = data.get("tool", {}).get("neuronctl") if isinstance(data.get("tool"), dict) else None
    if not isinstance(table, dict):
        raise Unavailable(f"{ctx.config}: no [tool.neuronctl] table")
    return table


def gather_config(ctx: Context, timeout: float) -> Gathered:
    import tomlkit

    table = _tool_table(ctx)
    return Gathered("[tool.neuronctl]\n" + tomlkit.dumps(table), str(ctx.config))


def gather_lock(ctx: Context, timeout: float) -> Gathered:
    name = "pylock.toml"
    try:
        configured = _tool_table(ctx).get("lock")
    except Unavailable:
        configured = None
    base = ctx.config.parent if isinstance(configured, str) else ctx.workdir
    try:
        path = contained(base, configured if isinstance(configured, str) else name)
    except NeuronctlError as exc:
        raise Unavailable(f"config lock: {exc.message}", "failed") from None
    text = read_bounded(path, MAX_CONFIG * 16)
    if text is None:
        raise Unavailable(f"{path}: no lock file")
    return Gathered(text, str(path))


ITEMS: tuple[Item, ...] = (
    Item("env.md", "neuronctl env (markdown)", neuronctl_item("env"), 90, 1 << 20),
    Item("env.json", "neuronctl env --json", neuronctl_item("env", "--json"), 90, 1 << 20),
    Item("doctor.json", "neuronctl doctor --json", neuronctl_item("doctor", "--json", ok_codes=(0, 1)),
         180, 2 << 20),
    Item("neuron-ls.json", "neuron-ls --output-format json (Neuron 2.34+)",
         neuron_ls_item("--output-format", "json"), 15, 1 << 20),
    Item("neuron-ls.json-output.json", "neuron-ls --json-output (before 2.34)",
         neuron_ls_item("--json-output"), 15, 1 << 20),
    Item("lspci.txt", "lspci -vvv -d 1d0f:", gather_lspci, 15, 1 << 20),
    Item("modinfo-neuron.txt", "modinfo neuron", gather_modinfo, 10, 256 << 10),
    Item("kernel-log.txt", "neuron lines of dmesg or the kernel log", gather_kernel_log, 15,
         2 << 20),
    Item("system-packages.txt", "aws-neuron* system packages (dpkg/rpm)", gather_packages, 15,
         256 << 10),
    Item("system-facts.json", "device holders, driver module, libnrt, device access",
         gather_system_facts, 30, 1 << 20),
    Item("distributions.txt", "the target Python's installed distributions", gather_distributions,
         60, 1 << 20),
    Item("tool-neuronctl.toml", "[tool.neuronctl] configuration", gather_config, 10, 256 << 10),
    Item("pylock.toml", "the lock, if present", gather_lock, 10, 4 << 20),
)


# `python -m neuronctl` puts the working directory first on sys.path, so a ./neuronctl/ there
# (a checkout, a hostile repository) would run instead and its output be bundled as collected.
# -P does that only from Python 3.11, and -I also drops PYTHONPATH, which a neuronctl run from a
# source tree needs: so the child drops the working directory's entry itself, before importing
# anything of ours. The working directory stays (config discovery reads ./pyproject.toml).
NO_CWD_BOOT = ("import sys\n"
               "if sys.path and sys.path[0] in ('', '.'): del sys.path[0]\n"
               "from neuronctl.cli.main import main\n"
               "main()\n")


def this_neuronctl(global_args: Sequence[str] = ()) -> tuple[str, ...]:
    """How the env and doctor items run this neuronctl: its interpreter, never importing from
    the working directory."""
    return (sys.executable, "-c", NO_CWD_BOOT, *global_args)
