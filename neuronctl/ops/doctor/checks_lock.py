"""The doctor's lock.drift check: the installed versions against the --lock file."""

from __future__ import annotations

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import install_fix, neuronctl_command, public
from neuronctl.ops.doctor.runner import Outcome


def _relock_fix(f: Facts) -> str:
    """Lock for this environment's Python where the release supports it, else a new venv."""
    release, minor = f.selection.release, ".".join(f.env.python.split(".")[:2])
    if minor not in release.python:
        return install_fix(f)
    return neuronctl_command(f, "lock", "--release", release.version, "--python", minor,
                             "-o", str(f.lock))


def check_lock(f: Facts) -> Outcome:
    from neuronctl.resolvers.pylock import packages_for

    assert f.lock is not None
    lock = f.pylock
    markers = dict(f.env.markers)
    if not f.lock_fits():
        return Outcome("fail", f"{f.lock} is not for this environment (Python {f.env.python}, "
                               f"{f.env.machine}): its environments are "
                               + "; ".join(str(m) for m in lock.environments or ()),
                       _relock_fix(f))
    locked = packages_for(lock, markers)
    drift = []
    for pkg in locked:
        have = f.env.get(pkg.name)
        if have is None:
            drift.append(f"{pkg.name}: locked {pkg.version}, not installed")
        elif pkg.version and public(have.version) != public(str(pkg.version)) and \
                have.version != str(pkg.version):
            drift.append(f"{pkg.name}: locked {pkg.version}, installed {have.version}")
    if drift:
        return Outcome("fail", f"{len(drift)} of {len(locked)} locked packages differ from "
                               f"{f.lock}", install_fix(f),
                       tuple(drift))
    return Outcome("pass", f"all {len(locked)} packages match {f.lock}")
