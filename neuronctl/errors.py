"""The one error family of neuronctl.

Every part raises these; only the CLI face turns them into a message and an exit code,
so command bodies never translate errors themselves.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class NeuronctlError(Exception):
    """Base error: a one-line, user-facing message and the exit code it maps to."""

    exit_code: int = EXIT_FAILED
    kind: str = "failed"
    """What sort of failure, as a --json document's `error.kind` names it."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class InputError(NeuronctlError):
    """Bad input: flags, files, manifests, lockfiles, config, index responses."""

    exit_code = EXIT_USAGE
    kind = "input"


class FaultError(NeuronctlError):
    """A fault outside our control: network, subprocess, timeout, disk."""

    exit_code = EXIT_FAILED
    kind = "fault"


class Interrupted(FaultError):
    """Ctrl-C stopped a step whose effects still have to be reported; message: what stopped."""

    exit_code = EXIT_INTERRUPTED
    kind = "interrupted"

    @staticmethod
    def caused_by(signal: KeyboardInterrupt) -> Interrupted:
        return Terminated("terminated") if isinstance(signal, TerminateSignal) else Interrupted("interrupted")


class Terminated(Interrupted):
    """The same, stopped by SIGTERM (a CI job cancelled or timed out)."""

    exit_code = EXIT_TERMINATED
    kind = "terminated"


class TerminateSignal(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so that every clean-up path Ctrl-C takes (a new venv
    removed, partial downloads deleted, an apply's changes reported) runs for it too."""


class OperationFailed(NeuronctlError):
    """The operation ran but its outcome is a failure (a check failed, resolution failed)."""

    exit_code = EXIT_FAILED
