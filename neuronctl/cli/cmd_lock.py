"""`neuronctl lock`: exact, hashed, per-index pins written as a PEP 751 pylock.toml (or a hashed
requirements file), validated and written atomically."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from neuronctl.cli.app import App, get_app
from neuronctl.cli.common import timeout_value
from neuronctl.cli.output import emit_json, write_atomic
from neuronctl.errors import EXIT_FAILED, InputError
from neuronctl.redact import redact
from neuronctl.routing import redact_url

if TYPE_CHECKING:
    from neuronctl.ops.lock.request import StackRequest

REQS_MARK = "# neuronctl-lock: "


def request_options(f: Any) -> Any:
    """The options lock and install share to say what stack to build."""
    options = [
        click.option("--release", help="Neuron release (default: config, else the newest native one)."),
        click.option("--torch", help="PyTorch line, e.g. 2.14 (default: the release's own)."),
        click.option("--with", "with_", multiple=True, metavar="REQ",
                     help="Your own requirement, e.g. 'transformers>=4.50' (repeatable)."),
        click.option("--index", "indexes", multiple=True, metavar="NAME=URL",
                     help="Replace or add an index (also NEURONCTL_INDEX_<NAME>, config `indexes`)."),
        click.option("--route", "routes", multiple=True, metavar="PKG=NAME",
                     help="Look PKG up on index NAME only (config `routes`)."),
        click.option("--latest", is_flag=True,
                     help="Newest builds within the release's lines instead of its exact versions."),
        click.option("--offline", is_flag=True, help="Only the HTTP cache and file:// indexes."),
        click.option("--timeout", type=float, help="Per-request timeout in seconds (default 30)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def make_request(app: App, *, release: str | None, torch: str | None, pythons: tuple[str, ...],
                 platforms: tuple[str, ...], with_: tuple[str, ...], indexes: tuple[str, ...],
                 routes: tuple[str, ...], latest: bool) -> StackRequest:
    from neuronctl.ops.lock.request import build_request

    return build_request(app.config(), app.manifest(), release=release, torch=torch, pythons=pythons,
                         platforms=platforms, requirements=with_, index_flags=indexes,
                         route_flags=routes, latest=latest)


def _output_path(app: App, output: str | None) -> str:
    return output or app.config().get("lock") or "pylock.toml"


def _format_for(path: str, fmt: str | None) -> str:
    if fmt:
        return fmt
    return "requirements" if path.endswith(".txt") else "pylock"


def _read_recorded(path: Path, fmt: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The lock's recorded inputs and its (name, version) packages."""
    if fmt == "pylock":
        from neuronctl.resolvers.pylock_read import load_pylock

        lock = load_pylock(path)
        tool = (lock.tool or {}).get("neuronctl")
        if not isinstance(tool, dict):
            raise InputError(f"{path}: no [tool.neuronctl] table; it was not written by neuronctl lock")
        return tool, [(str(p.name), str(p.version)) for p in lock.packages]
    try:
        lines = path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{path}: no such lock file") from None
    mark = next((ln for ln in lines if ln.startswith(REQS_MARK)), None)
    if mark is None:
        raise InputError(f"{path}: no '{REQS_MARK.strip()}' line; it was not written by neuronctl lock")
    try:
        tool = json.loads(mark[len(REQS_MARK):])
    except ValueError:
        raise InputError(f"{path}: the '{REQS_MARK.strip()}' line is not valid JSON") from None
    pkgs = []
    for ln in lines:
        if " @ " in ln and not ln.startswith("#"):
            name = ln.split(" @ ", 1)[0].strip()
            filename = ln.split(" @ ", 1)[1].split()[0].rsplit("/", 1)[-1]
            pkgs.append((name, filename.split("-")[1] if "-" in filename else ""))
    return tool, pkgs


def _differences(tool: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """What differs between a lock's [tool.neuronctl] and the request, one line per change:
    tables (pins, indexes) entry by entry, index URLs without credentials."""
    from neuronctl.resolvers.lockfile import LOCK_TOOL_SCHEMA

    if tool.get("schema") != LOCK_TOOL_SCHEMA:
        return [f"[tool.neuronctl] schema {tool.get('schema')!r}; this neuronctl writes "
                f"{LOCK_TOOL_SCHEMA}"]
    out: list[str] = []
    tables = [(key, table) for key, table in want.items() if isinstance(table, dict)]
    for key, asked in want.items():
        value = tool.get(key)
        same = sorted(value or []) == sorted(asked) if key == "with" else value == asked
        if not isinstance(asked, dict) and not same:
            out.append(f"{key}: lock has {value!r}, requested {asked!r}")
    reported = {line.split(":", 1)[0] for line in out}  # e.g. torch-neuronx, also in pins
    for key, table in tables:
        recorded = tool.get(key)
        have: Mapping[str, Any] = recorded if isinstance(recorded, dict) else {}
        wanted: Mapping[str, Any] = table
        shown = redact_url if key == "indexes" else str  # credentials are no part of an index
        for name in sorted(wanted.keys() | have.keys()):
            old, new = (None if d.get(name) is None else shown(d[name]) for d in (have, wanted))
            if old != new and name not in reported:
                out.append(f"{key}: {name}: lock has {old or 'nothing'}, requested {new or 'nothing'}")
    return out


def _refresh_command(app: App, flags: Sequence[str]) -> str:
    """The `neuronctl lock` command, with the flags this check used, that rewrites the lock."""
    import shlex

    top = [f"--{k}={v}" for k, v in (("config", app.config_path), ("manifest", app.manifest_path))
           if v is not None]
    return shlex.join(["neuronctl", *top, "lock", *flags])


def _check(path: Path, fmt: str, request: StackRequest, refresh: str) -> int:
    from packaging.version import InvalidVersion, Version

    if not path.exists():
        click.echo(f"{path}: no lock file; run `{refresh}`", err=True)
        return EXIT_FAILED
    tool, packages = _read_recorded(path, fmt)
    problems = _differences(tool, request.inputs().to_tool())
    if not request.plan.latest:
        from urllib.parse import unquote

        have: dict[str, set[str]] = {}
        for name, version in packages:
            have.setdefault(name, set()).add(unquote(version))
        for name, version in request.plan.pins.items():
            try:
                ok = any(Version(v).public == Version(version).public for v in have.get(name, ()))
            except InvalidVersion:
                ok = False
            mentioned = any(p.startswith((f"pins: {name}: ", f"{name}: ")) for p in problems)
            if not ok and not mentioned:
                problems.append(f"{name}: the manifest pins {version}, the lock has "
                                f"{', '.join(sorted(have.get(name, ()))) or 'nothing'}")
    if problems:
        for p in problems:
            click.echo(redact(f"{path}: out of date: {p}"), err=True)
        click.echo(f"hint: refresh it with: {redact(refresh)}", err=True)
        return EXIT_FAILED
    click.echo(f"{path}: up to date (Neuron {request.plan.release.version}, torch "
               f"{request.plan.framework.torch}, {len(request.targets)} target(s))")
    return 0


def _flags(release: str | None, torch: str | None, with_: Sequence[str], indexes: Sequence[str],
           routes: Sequence[str], latest: bool, pythons: Sequence[str], platforms: Sequence[str],
           output: str | None, fmt: str | None) -> list[str]:
    """The lock flags as given (index URLs without credentials: those come from ~/.netrc)."""
    flags = [f"--release={release}"] if release else []
    flags += [f"--torch={torch}"] if torch else []
    flags += [f"--with={w}" for w in with_] + [f"--index={_public(i)}" for i in indexes]
    flags += [f"--route={r}" for r in routes] + (["--latest"] if latest else [])
    flags += [f"--python={p}" for p in pythons] + [f"--platform={p}" for p in platforms]
    flags += [f"--output={output}"] if output else []
    return flags + ([f"--format={fmt}"] if fmt else [])


def _public(assignment: str) -> str:
    name, _, url = assignment.partition("=")
    return f"{name}={redact_url(url)}"


def _beta_note(app: App, request: StackRequest, as_json: bool) -> None:
    release = request.plan.release
    if release.status != "ga" and not as_json and not app.quiet:
        click.echo(f"note: Neuron {release.version} is a {release.status} release "
                   "(choose another with --release; `neuronctl releases` lists them)", err=True)


@click.command("lock")
@request_options
@click.option("--python", "pythons", multiple=True, metavar="X.Y",
              help="Target Python (repeatable; default: config, else the release's lowest).")
@click.option("--platform", "platforms", multiple=True, metavar="TAG",
              help="Target platform tag (repeatable; default manylinux_2_28_x86_64).")
@click.option("-o", "--output", metavar="FILE", help="Lock file (default: config `lock`, else pylock.toml; "
              "- for stdout).")
@click.option("--format", "fmt", type=click.Choice(["pylock", "requirements"]),
              help="pylock (PEP 751) or a pip requirements file with --hash (default: by file name).")
@click.option("--check", is_flag=True, help="Exit 1 if the lock no longer matches the request.")
@click.option("--json", "as_json", is_flag=True, help="A JSON summary on stdout.")
def lock(release: str | None, torch: str | None, with_: tuple[str, ...], indexes: tuple[str, ...],
         routes: tuple[str, ...], latest: bool, offline: bool, timeout: float | None,
         pythons: tuple[str, ...], platforms: tuple[str, ...], output: str | None, fmt: str | None,
         check: bool, as_json: bool) -> int:
    """Resolve a Neuron release into exact, hashed pins, each package from its own index."""
    app = get_app()
    request = make_request(app, release=release, torch=torch, pythons=pythons, platforms=platforms,
                           with_=with_, indexes=indexes, routes=routes, latest=latest)
    flags = _flags(release, torch, with_, indexes, routes, latest, pythons, platforms, output, fmt)
    out = _output_path(app, output)
    fmt = _format_for(out, fmt)
    if fmt == "pylock" and out != "-":
        from packaging.pylock import is_valid_pylock_path

        if not is_valid_pylock_path(Path(out)):
            raise InputError(f"-o {out}: PEP 751 lock files are named pylock.toml or pylock.NAME.toml "
                             "(use --format requirements for a requirements file)")
    if check:
        if out == "-":
            raise InputError("--check needs a lock file, not -o -")
        return _check(Path(out), fmt, request, _refresh_command(app, flags))
    _beta_note(app, request, as_json)
    seconds = timeout_value(timeout, app.config().get("timeout"), 30.0)

    from neuronctl.ops.lock.resolve import resolve_request
    from neuronctl.resolvers.lockfile import build_pylock, render_pylock, render_requirements

    resolved = resolve_request(request, offline=offline, timeout=seconds)
    inputs = request.inputs()
    if fmt == "pylock":
        text = render_pylock(build_pylock(resolved.packages, inputs, resolved.hash_of))
    else:
        text = render_requirements(resolved.packages, inputs, resolved.hash_of)
        text = text.replace("\n", f"\n{REQS_MARK}{json.dumps(inputs.to_tool(), sort_keys=True)}\n", 1)
    if out == "-":
        sys.stdout.write(text)
    else:
        write_atomic(Path(out), text)
    _report(app, request, resolved, out, fmt, as_json)
    return 0


def _report(app: App, request: StackRequest, resolved: Any, out: str, fmt: str, as_json: bool) -> None:
    packages = [{"name": p.name, "version": str(p.version), "index": p.index_name,
                 "targets": [t.label for t in p.targets]} for p in resolved.packages]
    if as_json:
        if out == "-":
            return
        emit_json({"kind": "lock", "path": out, "format": fmt,
                   "release": request.plan.release.version, "torch": request.plan.framework.torch,
                   "targets": [t.to_json() for t in request.targets],
                   "routing": request.routing.to_json(), "packages": packages, **resolved.summary()})
        return
    if app.quiet:
        return
    stats = resolved.fetcher.stats
    methods = resolved.summary()["metadata"]
    stream_err = out == "-"
    click.echo(f"locked {len(packages)} packages for {', '.join(t.label for t in request.targets)} "
               f"(Neuron {request.plan.release.version}, torch {request.plan.framework.torch}) "
               f"-> {out}", err=stream_err)
    if app.verbose or not stream_err:
        for p in packages:
            click.echo(f"  {p['name']} {p['version']}  [{p['index']}]", err=stream_err)
    click.echo(f"network: {stats.requests} requests, {stats.bytes:,} bytes, {stats.cache_hits} from cache; "
               f"metadata: {', '.join(f'{k} {v}' for k, v in methods.items()) or 'none'}", err=stream_err)
    for note in stats.full_downloads:
        click.echo(f"note: downloaded whole {note}", err=True)
