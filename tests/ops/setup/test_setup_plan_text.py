"""Issue 35, item 3: the setup plan is reviewable as text. The text plan lists every command its
`--format sh` script runs, step by step (the apt-get update too), each step's check, and every
variable those commands use with its value and where it came from: the 24.04 and 26.04 plans
differ where their scripts do, not only in the header."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

STEP = re.compile(r"^# \[(\d+)/\d+\] ([a-z-]+): ", re.M)
VARIABLE = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")
LOCAL = re.compile(r"(?:^|[;\s])([a-z]+)=")


def _setup(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "neuronctl", "setup", *args], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _script_steps(script: str) -> dict[str, tuple[str | None, list[str]]]:
    """step id -> (its check, the commands it runs), read from the sh script."""
    steps: dict[str, tuple[str | None, list[str]]] = {}
    marks = list(STEP.finditer(script))
    for n, mark in enumerate(marks):
        end = marks[n + 1].start() if n + 1 < len(marks) else script.index("\necho 'neuronctl setup: Neuron")
        block = script[mark.start():end].splitlines()
        code = [line for line in block if not line.startswith("#") and line.strip()]
        check = code[0][3:-6] if code[0].startswith("if ") and code[0].endswith("; then") else None
        # the commands after the 'else' and its echo, or after the step's echo
        body = code[code.index("else") + 2:code.index("fi")] if check is not None else code[1:]
        steps[mark.group(2)] = (check, [line.removeprefix("  ") for line in body])
    return steps


def _text_steps(text: str) -> dict[str, tuple[str | None, list[str]]]:
    steps: dict[str, tuple[str | None, list[str]]] = {}
    current = ""
    for line in text.splitlines():
        head = re.match(r"^ *\d+\. \[[^]]+\] ([a-z-]+): ", line)
        if head:
            current = head.group(1)
            steps[current] = (None, [])
        elif current and line.startswith("      skipped when: "):
            steps[current] = (line.removeprefix("      skipped when: "), steps[current][1])
        elif current and line.startswith("      $ "):
            steps[current][1].append(line.removeprefix("      $ "))
    return steps


def _variables(text: str) -> dict[str, str]:
    return dict(re.findall(r"^  ([A-Z][A-Z0-9_]*)=(.*) \(", text, flags=re.M))


@pytest.mark.parametrize("os_name", ["ubuntu-26.04", "ubuntu-24.04", "al2023"])
def test_the_text_plan_lists_every_command_and_check_of_the_script(os_name: str) -> None:
    text, script = _setup("--os", os_name), _setup("--os", os_name, "--format", "sh")
    in_script, in_text = _script_steps(script), _text_steps(text)
    assert list(in_text) == list(in_script) and len(in_text) >= 7
    for step, (check, commands) in in_script.items():
        refreshed = ['"$APT_GET" update' if c == "refresh" else c for c in commands]
        assert in_text[step] == (check, refreshed), step
    if os_name.startswith("ubuntu"):
        assert '"$APT_GET" update' in in_text["packages"][1]  # the update the script runs
    # Every variable a command uses has its value shown, with where it came from.
    variables = _variables(text)
    for step, (check, commands) in in_text.items():
        for command in [*(commands), check or ""]:
            local = set(LOCAL.findall(command))
            for name in VARIABLE.findall(command):
                assert name in variables or name.lower() in local, (step, name, command)
    assert re.search(r"^  NEURONCTL=/\S+ \(this neuronctl, by absolute path\)$", text, flags=re.M)
    assert "every step runs from / (cd /)" in text and "\ncd /\n" in script


def test_the_24_04_and_26_04_plans_differ_in_their_text_where_their_scripts_do() -> None:
    noble, resolute = _setup("--os", "ubuntu-24.04"), _setup("--os", "ubuntu-26.04")
    assert _variables(noble)["NEURON_SUITE"] == "noble"
    assert _variables(resolute)["NEURON_SUITE"] == "resolute"
    assert "NEURON_SUITE=${NEURONCTL_SETUP_NEURON_SUITE:-noble}" in _setup("--os", "ubuntu-24.04",
                                                                          "--format", "sh")
