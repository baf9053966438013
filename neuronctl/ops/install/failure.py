"""What an apply that did not finish changed in the target, and how to undo it: package versions
(inspected again) and files no package change accounts for (compared with the snapshot taken
before the engine ran). It says "nothing changed" only when both were checked.

When the engine failed installing files from a wheelhouse (--find-links), those files are hashed
here, on this path only (the engine is the one check of their bytes on the way in): one that is
not the locked file is the cause, named as bad input (exit 2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from neuronctl.backend.engine import Engine
from neuronctl.backend.external_tool import shown
from neuronctl.backend.plan import changed_between
from neuronctl.backend.snapshot import Stray, file_changes
from neuronctl.errors import FaultError, InputError, Interrupted, NeuronctlError
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.apply import ApplyFailure
from neuronctl.ops.install.find_links import mismatched
from neuronctl.ops.install.target import InstallTarget
from neuronctl.probes.pyenv import PythonEnv, inspect_python

SHOWN_STRAYS = 8


def _versions(env: PythonEnv) -> dict[str, str]:
    return {d.name: d.version for d in env.distributions.values()}


def _refused(failure: ApplyFailure, wheelhouse: Path | None,
             files: Sequence[LockedFile]) -> InputError | None:
    """A wheelhouse file the engine was given that is not the locked file, when the engine failed
    installing (not when it was interrupted: nothing is hashed then)."""
    if isinstance(failure.error, InputError):  # the private copy's check named it already
        return failure.error
    if wheelhouse is None or failure.stage != "install" or isinstance(failure.error, Interrupted):
        return None
    return mismatched(wheelhouse, files)


def failure_error(failure: ApplyFailure, target: InstallTarget, engine: Engine, before: PythonEnv,
                  index_url_for: Callable[[str], str], *, wheelhouse: Path | None = None,
                  files: Sequence[LockedFile] = ()) -> NeuronctlError:
    """The error to raise for `failure` (an interrupt keeps its own exit code); `before` is the
    target as inspected before the plan, `index_url_for` the routing's URL for a package;
    `wheelhouse` the --find-links directory some of the engine's `files` came from."""
    error: type[NeuronctlError] = type(failure.error)
    hint = None
    refused = _refused(failure, wheelhouse, files)
    if refused is not None:  # the engine refused a tampered file: that file is the error
        error, hint, stopped, why = InputError, refused.hint, refused.message, ""
    elif isinstance(failure.error, Interrupted):
        stopped, why = f"{failure.stage} was {failure.error.message}", ""
    else:
        stopped, why = f"{failure.stage} failed", f": {failure.error.message}"
    if failure.venv_removed is not None:
        undone = "emptied" if target.keep_dir else "removed"
        return error(f"{stopped}{why}; {undone} the new venv {failure.venv_removed}", hint=hint)
    old = _versions(before)
    try:
        new = _versions(inspect_python(target.final_python))
    except FaultError as exc:
        return error(f"{stopped}{why}; what it changed is unknown (the environment cannot be "
                     f"inspected again: {exc.message})", hint=hint)
    changed = changed_between(old, new)
    files_before = failure.files_before
    strays = file_changes(files_before) if files_before is not None else []
    if not changed and not strays:
        if files_before is None:
            return error(f"{stopped}{why}; its files were not compared, so what changed is unknown",
                         hint=hint)
        return error(f"{stopped}, nothing changed{why} (checked {files_before.count:,} files and "
                     f"directories in {', '.join(files_before.roots)})", hint=hint)
    what = [", ".join(f"{name} {was or '-'} -> {now or 'removed'}" for name, was, now in changed)]
    what = [w for w in what if w] + [s.describe() for s in strays[:SHOWN_STRAYS]]
    if len(strays) > SHOWN_STRAYS:
        what.append(f"and changes in {len(strays) - SHOWN_STRAYS} more places")
    return error(f"{stopped} after changing {'; '.join(what)}{why}",
                 hint=_restore_hint(target, engine, strays, old, new, index_url_for))


def _restore_hint(target: InstallTarget, engine: Engine, strays: list[Stray], old: dict[str, str],
                  new: dict[str, str], index_url_for: Callable[[str], str]) -> str:
    cmds: list[list[str]] = []
    removable = [path for s in strays for path in s.removable]
    if removable:  # only paths that did not exist before, inside site-packages, owned by nothing
        cmds.append(["rm", "-rf", "--", *removable])
    cmds += engine.restore_commands(target.final_python, old, new, index_url_for)
    if not cmds:
        return "reinstall the packages those files belong to"
    return "restore with: " + " && ".join(shown(c) for c in cmds)
