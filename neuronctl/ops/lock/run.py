"""`neuronctl lock` as one operation: resolve the request and write the lock atomically in the
chosen format, or (--check) compare an existing lock with the request, reading it once."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from neuronctl.atomic import write_text_atomic
from neuronctl.ops.lock.outcome import LockOutcome
from neuronctl.ops.lock.request import LockRequest
from neuronctl.ops.reporter import Note, Reporter
from neuronctl.release.stack_rules import check_stack_rules
from neuronctl.resolvers.lock_record import (
    build_pylock,
    read_recorded,
    render_pylock,
    render_requirements,
)

if TYPE_CHECKING:  # the resolver and the network load for a resolution, never for --check
    from neuronctl.ops.lock.resolve import Resolved


def lock(request: LockRequest, reporter: Reporter) -> LockOutcome:
    if request.check:
        return check(request)
    release = request.stack.plan.release
    if release.status != "ga":
        reporter.emit(Note(f"Neuron {release.version} is a {release.status} release "
                                    "(choose another with --release; `neuronctl releases` lists them)"))
    if request.stack.plan.fallback is None:  # the documented rules (neuronctl.release.stack_rules): exit 2
        for note in check_stack_rules(release, request.stack.plan.framework,
                                      [t.python for t in request.stack.targets],
                                      allow=request.allow_unsupported, what="lock"):
            reporter.emit(Note(note))
    from neuronctl.ops.lock.net_preflight import preflight_stack
    from neuronctl.ops.lock.resolve import fetch_status, request_fetcher, resolve_request

    fetcher, cache_root = request_fetcher(request.stack, offline=request.offline,
                                          timeout=request.timeout)
    preflight_stack(request.stack, fetcher)  # every index at once, before resolving
    resolved = resolve_request(request.stack, offline=request.offline, timeout=request.timeout,
                               fetcher=fetcher, cache_root=cache_root,
                               progress=fetch_status(reporter))
    text = lock_text(request, resolved)
    if not request.to_stdout:
        write_text_atomic(Path(request.output), text)
    return replace(_outcome(request), packages=tuple(resolved.packages),
                   network=resolved.fetcher.stats.to_json(), metadata=resolved.metadata_counts(),
                   text=text if request.to_stdout else None)


def lock_text(request: LockRequest, resolved: Resolved) -> str:
    """The lock in the request's format, validated (a pylock.toml by packaging.pylock)."""
    inputs = request.stack.inputs()
    if request.fmt == "pylock":
        return render_pylock(build_pylock(resolved.packages, inputs, resolved.hash_of))
    return render_requirements(resolved.packages, inputs, resolved.hash_of)


def check(request: LockRequest) -> LockOutcome:
    """Whether the lock at the request's path still matches it; nothing is fetched."""
    path = Path(request.output)
    if not path.exists():
        return replace(_outcome(request), checked=True, missing=True)
    from neuronctl.ops.lock.check import lock_differences  # only --check compares

    recorded = read_recorded(path, request.fmt)
    problems = lock_differences(recorded, request.stack.inputs())
    return replace(_outcome(request), checked=True, problems=tuple(problems))


def _outcome(request: LockRequest) -> LockOutcome:
    """What every outcome says: the lock's path and format, and the stack it is for."""
    plan = request.stack.plan
    return LockOutcome(request.output, request.fmt, plan.release.version, plan.framework.torch,
                       request.stack.targets, request.stack.routing.to_json(),
                       fallback=plan.fallback.to_tool() if plan.fallback else None)
