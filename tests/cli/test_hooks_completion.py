"""Shell completion through click's `_NEURONCTL_COMPLETE`, run as a shell runs it: the installed
`neuronctl` script with the words typed so far, against the lazily loaded commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "neuronctl"


def complete(words: str, cword: int | None = None, shell: str = "bash") -> list[tuple[str, str]]:
    """(type, value) pairs from click's bash_complete protocol for COMP_WORDS=words."""
    index = len(words.split(" ")) - 1 if cword is None else cword
    env = {**os.environ, "_NEURONCTL_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(index)}
    r = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "Usage:" not in r.stdout and r.stderr == ""
    return [tuple(line.split(",", 1)) for line in r.stdout.splitlines() if line]


def test_a_command_name_completes():
    assert complete("neuronctl doc") == [("plain", "doctor")]
    names = {value for _, value in complete("neuronctl ")}
    from neuronctl.cli.main import COMMANDS

    assert names == set(COMMANDS)


def test_a_commands_options_and_choices_complete():
    assert ("plain", "--level") in complete("neuronctl doctor --le")
    assert ("plain", "--format") in complete("neuronctl doctor -q --f")  # after a global option
    assert {v for _, v in complete("neuronctl doctor --format ")} >= {"text", "json", "github"}


def test_a_subcommand_of_a_lazy_group_completes():
    assert ("plain", "show") in complete("neuronctl releases s")
    assert ("plain", "npd-config") in complete("neuronctl fleet n")


def test_words_that_name_no_command_complete_to_nothing_without_a_traceback():
    assert complete("neuronctl nosuch --") == []
    # Options' values are never acted on while completing (no config read, no manifest loaded).
    assert ("plain", "--level") in complete("neuronctl --config /nonexistent doctor --le")
    assert ("plain", "show") in complete("neuronctl --manifest /nonexistent releases s")


def test_the_bash_script_is_printed_for_eval():
    env = {**os.environ, "_NEURONCTL_COMPLETE": "bash_source"}
    r = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0 and "_neuronctl_completion()" in r.stdout
    assert "complete -o nosort -F _neuronctl_completion neuronctl" in r.stdout
