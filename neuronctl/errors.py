"""The one error family of neuronctl.

Every part raises these; only the CLI face turns them into a message and an exit code,
so command bodies never translate errors themselves.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class NeuronctlError(Exception):
    """Base error: a one-line, user-facing message and the exit code it maps to."""

    exit_code: int = EXIT_FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class InputError(NeuronctlError):
    """Bad input: flags, files, manifests, lockfiles, config, index responses."""

    exit_code = EXIT_USAGE


class FaultError(NeuronctlError):
    """A fault outside our control: network, subprocess, timeout, disk."""

    exit_code = EXIT_FAILED


class OperationFailed(NeuronctlError):
    """The operation ran but its outcome is a failure (a check failed, resolution failed)."""

    exit_code = EXIT_FAILED
