"""A plan as a POSIX sh script (`set -eu`, each step guarded by its check, so a re-run skips
what is done and continues where a failure stopped), and as plain text. apply.py runs each step
through the same preamble, so what `--yes` runs is what the script says."""

from __future__ import annotations

import functools
import shlex
from importlib import resources

from neuronctl.ops.setup.model import SetupPlan, Step
from neuronctl.ops.setup.repos import KEY_AWK


@functools.cache
def helpers(family: str) -> str:
    """The script's shell helpers for `family` (apt or dnf), then the common ones: .sh files
    shipped beside this module (shellchecked on their own), read once, their comments left out."""
    def read(name: str) -> str:
        text = resources.files(__package__ or "neuronctl.ops.setup").joinpath(name).read_text("utf-8")
        return "\n" + "".join(line for line in text.splitlines(keepends=True)
                              if not line.startswith("#")).lstrip("\n")

    own = read("helpers_apt.sh" if family == "apt" else "helpers_dnf.sh")
    return own + read("helpers_common.sh").replace("{KEY_AWK}", KEY_AWK)


ABSOLUTE = ("NEURONCTL", "NEURONCTL_PYTHON", "VENV")
"""The variables a step runs a program from: refused unless absolute, whatever the environment
set them to (a bare name would be looked up on PATH, a relative one in the working directory)."""


def env_name(variable: str) -> str:
    """The environment variable that sets a script variable: NEURONCTL_SETUP_ROOT for
    SETUP_ROOT, NEURONCTL_SETUP_KERNEL for KERNEL. Prefixed, so a KERNEL or VENV the user's
    shell happens to hold changes nothing."""
    return f"NEURONCTL_{variable}" if variable.startswith("SETUP_") else f"NEURONCTL_SETUP_{variable}"


NEUTRAL_DIR = "/"
"""Where every step runs: a directory with no project config, no .venv and no pyproject.toml of
whoever started setup (each step runs as root)."""


def preamble(plan: SetupPlan) -> str:
    """`set -eu`, a neutral working directory, the variables (each settable from the
    environment; neuronctl and its interpreter must stay absolute paths) and the helpers."""
    lines = ["set -eu", f"cd {NEUTRAL_DIR}"]
    for name, default in plan.variables.items():
        lines.append(f"{name}=${{{env_name(name)}:-{default}}}")
    lines += [f'case "${name}" in /*) ;; *) echo "neuronctl setup: {name} must be an absolute '
              f'path, not ${name}" >&2; exit 1 ;; esac' for name in ABSOLUTE if name in plan.variables]
    return "\n".join(lines) + "\n" + helpers(plan.target.family)


def check_script(plan: SetupPlan, step: Step) -> str:
    return f"{preamble(plan)}\n{step.check or 'false'}\n"


def run_script(plan: SetupPlan, step: Step) -> str:
    return preamble(plan) + "\n" + "\n".join(step.commands) + "\n"


def comment(text: str) -> str:
    """Text for a `#` line: one line of printable characters whatever the data held (a rule's
    words from an updated manifest, a holder's command): a newline would end the comment and
    start a command."""
    return "".join(c if c.isprintable() else " " for c in text)


def _echo(text: str) -> str:
    return f"echo {shlex.quote(text)}"


def render_sh(plan: SetupPlan) -> str:
    total = len(plan.steps)
    head = [
        "#!/bin/sh",
        comment(f"# neuronctl setup: Neuron {plan.release} on {plan.target.id} "
                f"({plan.target.family}); review it, then run it as root."),
        "# Each step runs only when its check says it is not done yet: re-running it continues",
        "# where a failure stopped. Every variable below can be set from the environment.",
        f"# The key is trusted only with fingerprint {plan.key_fingerprint}",
        "# Each value and where it came from:",
        *(comment(f"#   {line}") for line in origin_lines(plan)),
        *(comment(f"# note: {n}") for n in plan.notes),
    ]
    body = []
    for i, step in enumerate(plan.steps, 1):
        tag = f"[{i}/{total}] {step.id}"
        body.append("\n" + comment(f"# {tag}: {step.title}") + "\n" + comment(f"# why: {step.why}"))
        if step.blocked:
            body.append(comment(f"# blocked when planned: {step.blocked}"))
        run = "\n".join("  " + c for c in step.commands)
        if step.check:
            body.append(f"if {step.check}; then\n  {_echo(f'neuronctl setup {tag}: done already, skipped')}"
                        f"\nelse\n  {_echo(f'neuronctl setup {tag}: {step.title}')}\n{run}\nfi")
        else:
            body.append(f"{_echo(f'neuronctl setup {tag}: {step.title}')}\n{run}")
    body.append("\n" + _echo(f"neuronctl setup: Neuron {plan.release} is set up"))
    return "\n".join(head) + "\n\n" + preamble(plan) + "\n".join(body) + "\n"


def status_word(step: Step) -> str:
    if step.blocked:
        return "blocked"
    return {True: "done", False: "to do", None: "checked when run"}[step.satisfied]


def origin_lines(plan: SetupPlan) -> list[str]:
    """One line a value: the repository, the key, the suite and each pin, with its source."""
    o = plan.origins
    lines = [f"repository {plan.repo} (from {o.get('repository', 'not recorded')})",
             f"key {plan.key_fingerprint} (from {o.get('key_fingerprint', 'not recorded')})"]
    if "suite" in o:
        suite = plan.variables.get("NEURON_SUITE", "").strip("'")
        lines.append(f"suite {suite} (from {o['suite']})")
    lines += [f"pin {p} {v or '(newest)'} (from {o.get(f'packages.{p}', 'not recorded')})"
              for p, v in plan.packages.items()]
    return lines


REFRESH = '"$APT_GET" update'
"""What the apt helper `refresh` runs (the text plan shows the command itself)."""


def _shown(value: str) -> str:
    """A variable's default as the script sets it, readable: outer quotes dropped, the empty
    SETUP_ROOT (the host's own root) left out of the paths built on it."""
    text = value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value
    return text.replace("$SETUP_ROOT/", "/") or '""'


def variable_lines(plan: SetupPlan) -> list[str]:
    """Each script variable the commands use, its value and where that came from; each can be
    set from the environment (NEURONCTL_SETUP_<NAME>)."""
    asked = not plan.variables.get("KERNEL", "").startswith("$(")
    why = {"NEURON_REPO": "the repository above", "NEURON_KEY_FPR": "the key above",
           "NEURON_SUITE": "the suite above", "SETUP_ROOT": "the host's own root",
           "KERNEL": "this host's running kernel" if asked else "read when the script runs",
           "NEURONCTL": "this neuronctl, by absolute path",
           "NEURONCTL_PYTHON": "the interpreter the doctor step checks, by absolute path",
           "VENV": "--venv"}
    default = f"neuronctl's default for {plan.target.family}"
    return [f"{name}={_shown(value)} ({why.get(name, default)})"
            for name, value in plan.variables.items()]


def render_text(plan: SetupPlan) -> str:
    """The plan as a reviewer reads it: every value with its source, every variable with its
    value, and each step's check and every command the script runs for it (render_sh's)."""
    lines = [f"Neuron {plan.release} on {plan.target.id}: "
             + ", ".join(f"{p} {v or '(newest)'}" for p, v in plan.packages.items()),
             *(comment(f"  {line}") for line in origin_lines(plan)),
             f"every step runs from {NEUTRAL_DIR} (cd {NEUTRAL_DIR}); the variables, each settable "
             "from the environment as NEURONCTL_SETUP_<NAME>:",
             *(comment(f"  {line}") for line in variable_lines(plan))]
    for i, step in enumerate(plan.steps, 1):
        lines.append(f"{i:>2}. [{status_word(step)}] {step.id}: {step.title}")
        lines.append(f"      why: {step.why}")
        if step.blocked:
            lines.append(f"      blocked: {step.blocked}")
        if step.check:
            lines.append(f"      skipped when: {step.check}")
        if step.satisfied is not True:
            lines += [f"      $ {REFRESH if c == 'refresh' else c}" for c in step.commands]
    lines += [f"note: {n}" for n in plan.notes]
    lines.append("The script's helper functions (key_fprs, installed, ...) are in its preamble: "
                 "--format sh. Nothing was changed. Run it with `neuronctl setup --yes` (as root), "
                 "or write a script with --format sh.")
    return "\n".join(lines) + "\n"
