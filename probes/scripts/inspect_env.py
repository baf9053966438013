# ruff: noqa: UP006, UP035, UP045  (runs on Python 3.6+: no builtin generics, no X | None)
"""The environment inspection, run inside the target interpreter (see probes/pyenv.py).

argv: CHANNEL_FD NAME=VALUE... (options(): no JSON to read, so json is never imported). Writes
a hello line, then the facts as one JSON line (dumps()) to the
channel: the interpreter, its markers and wheel tags, its bundled pip wheel, and its installed
distributions (read from plain .dist-info directories where that is all there is, else with
importlib.metadata). Held (option "hold"), it reads the distributions only once neuronctl
releases it (RELEASE on stdin, then its end; inspect_hold.py, beside this file): neuronctl starts
it while an engine installs, so that its start-up is done by then.
"""

import sys
import time

# What the interpreter's start-up loaded (site, and whatever the .pth files' code imported, by
# any name, in turn), taken before this script's own imports: held, it checks these files did not
# change while it waited.
AT_START = list(sys.modules.items())
SCRIPT_START = time.time()

import os  # noqa: E402
import sysconfig  # noqa: E402

try:  # json's own string escaper (C): json itself brings re and enum (4 of its 25 ms)
    from _json import encode_basestring_ascii as escaper
except ImportError:  # an interpreter without CPython's accelerator: json itself writes
    escaper = None  # type: ignore[assignment]

# Annotations are strings and typing is not imported when it runs: this starts twice per install,
# and typing (like csv and platform, which bring re and enum) costs more than the inspection.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Tuple

    # name, version, Requires-Dist, summary, installer, files(), locate(file), REQUESTED present
    Dist = Tuple[str, str, List[str], str, str, Callable[[], List[str]], Callable[[str], str], bool]

HELLO = {"inspect": "neuronctl-inspect-env", "version": 1}


def canon(name: str) -> str:
    name = name.lower().replace("_", "-").replace(".", "-")
    while "--" in name:
        name = name.replace("--", "-")
    return name


IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "ironpython": "IronPython", "jython": "Jython"}


def glibc() -> "List[str]":
    """["glibc", "2.36"] from glibc itself (confstr, where platform.libc_ver() reads it too);
    [] where it has no answer (musl, macOS)."""
    try:
        parts = (os.confstr("CS_GNU_LIBC_VERSION") or "").split(maxsplit=1)
    except (AttributeError, ValueError, OSError):
        return []
    return parts if len(parts) == 2 else []


def platform_facts() -> "Dict[str, str]":
    """What the platform module says, read where it reads it (os.uname(), sys.version, glibc's
    confstr) without importing it; from platform itself where any of those is missing."""
    libc = glibc()
    try:
        uname = os.uname()
        implementation = IMPLEMENTATIONS[sys.implementation.name]
    except (AttributeError, KeyError):
        uname, implementation = None, ""
    version = sys.version.split()[0] if sys.version else ""
    if uname is None or len(libc) != 2 or version.count(".") != 2:
        import platform

        return {"version": platform.python_version(), "machine": platform.machine(),
                "system": platform.system(), "release": platform.release(),
                "os_version": platform.version(), "implementation": platform.python_implementation(),
                "libc": " ".join(platform.libc_ver())}
    return {"version": version, "machine": uname.machine, "system": uname.sysname,
            "release": uname.release, "os_version": uname.version, "implementation": implementation,
            "libc": " ".join(libc)}


def interpreter() -> "Dict[str, Any]":
    facts = platform_facts()
    return {
        "python": facts["version"],
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sysconfig.get_platform(),
        "machine": facts["machine"],
        "system": facts["system"],
        "libc": facts["libc"].split(" ", 1) if facts["libc"].strip() else ["", ""],
        # Where installers put packages (a venv's site-packages; a distro's dist-packages).
        "site_dirs": [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")],
        "markers": {
            "implementation_name": sys.implementation.name,
            "implementation_version": facts["version"],
            "os_name": os.name,
            "platform_machine": facts["machine"],
            "platform_python_implementation": facts["implementation"],
            "platform_release": facts["release"],
            "platform_system": facts["system"],
            "platform_version": facts["os_version"],
            "python_full_version": facts["version"],
            "python_version": ".".join(facts["version"].split(".")[:2]),
            "sys_platform": sys.platform,
        },
    }


UNLESS_DERIVABLE = "unless-derivable"


def listed(folder: str) -> "List[str]":
    try:
        return os.listdir(folder or ".")
    except OSError:
        return []


def tags_derivable() -> bool:
    """Whether neuronctl derives this interpreter's wheel tags exactly from its version, glibc
    and machine (resolvers/targets.py; tested against packaging's sys_tags on every CPython
    here): plain CPython, no ABI flags (free-threaded, debug), on glibc. Importing packaging or
    pip's copy of it to ask costs ~50 ms, each install."""
    # A 32-bit Python on a 64-bit kernel (uname says x86_64, its wheels are i686) and a distro's
    # _manylinux policy module are packaging's to answer.
    plain = (glibc()[:1] == ["glibc"] and sys.implementation.name == "cpython"
             and getattr(sys, "abiflags", None) == "" and sys.maxsize > 2**32)
    return plain and not any(name.startswith("_manylinux") for entry in sys.path for name in listed(entry))


def wheel_tags() -> "Optional[List[str]]":
    """From the target's own packaging (or pip's vendored copy); None when it has neither."""
    try:
        from packaging import tags
    except ImportError:
        try:
            from pip._vendor.packaging import tags  # type: ignore[no-redef]
        except ImportError:
            return None
    try:
        return [str(t) for t in tags.sys_tags()]
    except Exception:
        return None


def bundled_pip() -> "Optional[str]":
    # ensurepip's own _bundled folder, read without importing ensurepip (~0.06 s); a distro that
    # moved the wheels elsewhere (Debian's _WHEEL_PKG_DIR) goes through ensurepip itself.
    folder = os.path.join(os.path.dirname(os.__file__), "ensurepip", "_bundled")
    pips = [os.path.join(folder, n) for n in listed(folder) if n.startswith("pip-") and n.endswith(".whl")]
    if len(pips) == 1:
        return pips[0]
    try:
        import ensurepip

        wheel = f"pip-{ensurepip.version()}-py3-none-any.whl"
        dirs = [os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"),
                getattr(ensurepip, "_WHEEL_PKG_DIR", None) or ""]
        return next((os.path.join(d, wheel) for d in dirs
                     if d and os.path.isfile(os.path.join(d, wheel))), "")
    except Exception:
        return None


def scan_dist_infos() -> "Optional[List[str]]":
    # Plain .dist-info directories on sys.path, in importlib.metadata's order; None if anything
    # else is there (eggs, egg-info, zips), which importlib.metadata then reads in full. It costs
    # ~0.1 s to import, and an install inspects twice.
    found = []
    for entry in sys.path:
        base = entry or "."
        if not os.path.isdir(base):
            if os.path.exists(base):
                return None
            continue
        for name in listed(base):
            low = name.lower()
            if low.endswith((".egg-info", ".egg", ".egg-link")):
                return None
            if low.endswith(".dist-info"):
                found.append(os.path.join(base, name))
    return found


def read(path: str) -> "Optional[str]":
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def headers(text: str) -> "Dict[str, List[str]]":
    fields: Dict[str, List[str]] = {}
    last = None
    for line in text.replace("\r\n", "\n").split("\n\n", 1)[0].split("\n"):
        if line[:1] in (" ", "\t") and last:
            fields[last][-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep:
            last = key.strip().lower()
            fields.setdefault(last, []).append(value.strip())
    return fields


def record_paths(record: str) -> "List[str]":
    """The first column of a RECORD (PEP 376: CSV). Split by hand where no line quotes a field
    (csv brings re and enum, ~10 ms, for a few watched packages); by csv where one does."""
    lines = record.splitlines()
    if '"' not in record:
        return [line.split(",", 1)[0] for line in lines if line]
    import csv

    return [row[0] for row in csv.reader(lines) if row]


def scanned(paths: "List[str]") -> "Iterator[Dist]":
    for info in paths:
        text = read(os.path.join(info, "METADATA"))
        if text is None:
            continue
        fields = headers(text)

        def first(key: str, fields: "Dict[str, List[str]]" = fields) -> str:
            return (fields.get(key) or [""])[0]

        def files(info: str = info) -> "List[str]":
            return record_paths(read(os.path.join(info, "RECORD")) or "")

        def locate(f: str, info: str = info) -> str:
            return os.path.join(os.path.dirname(info), f)

        yield (first("name"), first("version"), fields.get("requires-dist") or [], first("summary"),
               (read(os.path.join(info, "INSTALLER")) or "").strip(), files, locate,
               os.path.isfile(os.path.join(info, "REQUESTED")))


def via_metadata() -> "Iterator[Dist]":
    from importlib import metadata  # 3.8+; older Pythons always find plain .dist-info folders

    for dist in metadata.distributions():
        def installer(dist: "Any" = dist) -> str:
            try:
                return (dist.read_text("INSTALLER") or "").strip()
            except Exception:
                return ""

        def files(dist: "Any" = dist) -> "List[str]":
            return [str(f) for f in dist.files or []]

        def locate(f: str, dist: "Any" = dist) -> str:
            return str(dist.locate_file(f))

        def requested(dist: "Any" = dist) -> bool:
            # PEP 376: an installer writes REQUESTED for what the user asked for by name.
            try:
                return dist.read_text("REQUESTED") is not None
            except Exception:
                return False

        meta: Any = dist.metadata
        yield (meta["Name"], dist.version, list(dist.requires or []),
               meta.get("Summary") or "", installer(), files, locate, requested())


def describe(dist: "Dist", watched: "List[str]") -> "Dict[str, Any]":
    name, version, requires, summary, installer, files, locate, requested = dist
    entry = {"name": name, "version": version, "requires": list(requires), "summary": summary,
             "installer": installer, "xla_impl": False, "wrong_package": False,
             "requested": bool(requested)}
    if canon(name) in watched:
        listed = [f.replace(os.sep, "/") for f in files()]
        entry["xla_impl"] = any("torch_neuronx/xla_impl/" in f for f in listed)
        for f in listed:
            parts = f.split("/")
            if len(parts) == 2 and parts[1] == "__init__.py":
                text = read(locate(f))
                if text is not None and "WRONG PACKAGE" in text[:65536]:
                    entry["wrong_package"] = True
    return entry


def distributions(opts: "Dict[str, Any]", out: "Dict[str, Any]") -> None:
    found = None if opts["metadata_only"] else scan_dist_infos()
    seen = set()
    out["distributions"] = []
    for dist in scanned(found) if found is not None else via_metadata():
        if not dist[0] or canon(dist[0]) in seen:
            continue
        seen.add(canon(dist[0]))
        out["distributions"].append(describe(dist, opts["watched"]))
    out["reader"] = "importlib.metadata" if found is None else "dist-info scan"


def open_channel(argv: "List[str]") -> "IO[str]":
    """The private channel named in argv: not inherited by anything the environment starts, and
    this folder not on sys.path (it is not part of the environment being inspected)."""
    fd = int(argv[1])
    os.set_inheritable(fd, False)
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]
    return os.fdopen(fd, "w", encoding="utf-8")


def held() -> "Any":
    """inspect_hold.py, the held inspection's wait, loaded by its path (this folder leaves
    sys.path in open_channel), and only when held: importlib.util costs a few ms, which only an
    inspection started long before it is read can spare."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inspect_hold.py")
    spec = importlib.util.spec_from_file_location("neuronctl_inspect_hold", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FLAGS = ("packages", "bundled_pip", "metadata_only", "hold")


def options(args: "List[str]") -> "Dict[str, Any]":
    """The options probes/pyenv.py passes, NAME=VALUE each, every one of them: watched, a
    comma-separated list of names; tags 0, 1 or unless-derivable; the others 0 or 1. Anything
    else is refused (ValueError: the run fails and says so), never read as a default."""
    given = dict(arg.partition("=")[::2] for arg in args)
    if (sorted(given) != sorted(("watched", "tags", *FLAGS)) or len(given) != len(args)
            or given["tags"] not in ("0", "1", UNLESS_DERIVABLE)
            or any(given[flag] not in ("0", "1") for flag in FLAGS)):
        raise ValueError("inspect_env.py: options are watched=NAMES tags=0|1|" + UNLESS_DERIVABLE
                         + " " + " ".join(flag + "=0|1" for flag in FLAGS) + ", got " + repr(args))
    tags = given["tags"]
    opts = {flag: given[flag] == "1" for flag in FLAGS}  # type: Dict[str, Any]
    opts["watched"] = [name for name in given["watched"].split(",") if name]
    opts["tags"] = tags if tags == UNLESS_DERIVABLE else tags == "1"
    return opts


def dumps(value: "Any") -> str:
    """`value` as json.dumps writes it (ASCII, its separators), for the types this script
    writes: strings escaped by json's own C function, so that json, re and enum never load."""
    if escaper is None:
        import json

        return json.dumps(value)
    out: List[str] = []
    write(value, out, escaper)
    return "".join(out)


def write(value: "Any", out: "List[str]", quoted: "Callable[[str], str]") -> None:
    if value is None or isinstance(value, bool):
        out.append({None: "null", True: "true", False: "false"}[value])
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, str):
        out.append(quoted(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError("keys must be str, not " + type(key).__name__)
            out.extend((", " if i else "", quoted(key), ": "))
            write(item, out, quoted)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            out.append(", " if i else "")
            write(item, out, quoted)
        out.append("]")
    else:  # nothing else is written (a float never is: NaN would need json's own spelling)
        raise TypeError("not written as JSON: " + type(value).__name__)


def main() -> int:
    opts = options(sys.argv[2:])
    channel = open_channel(sys.argv)
    channel.write(dumps(HELLO) + "\n")
    channel.flush()
    out = interpreter()
    if opts["tags"] and not (opts["tags"] == UNLESS_DERIVABLE and tags_derivable()):
        tags = wheel_tags()
        if tags is not None:
            out["tags"] = tags
    if opts["bundled_pip"]:
        pip = bundled_pip()
        if pip is not None:
            out["bundled_pip"] = pip
    if opts.get("hold"):
        hold = held()
        if not hold.released_unchanged(AT_START, SCRIPT_START):
            return int(hold.STALE)
    if opts["packages"]:
        distributions(opts, out)
    channel.write(dumps(out) + "\n")
    channel.flush()
    return 0


if __name__ == "__main__":
    status = main()
    # Everything is on the channel: the interpreter's shutdown (module teardown, and the atexit
    # work of whatever the environment's .pth files imported) is not waited for.
    os._exit(status)
