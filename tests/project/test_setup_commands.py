"""The README's set-up commands are what CI runs, and they hold up on a stock python3 with the pip
it bundles (no upgrade hides an old pip's limits), and torch can only ever be a CPU build."""

import re
import shlex
import subprocess
from pathlib import Path

import tomlkit

ROOT = Path(__file__).resolve().parents[2]


def readme_setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [b.strip().replace("\\\n", " ") for b in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_ci_runs_the_readme_commands_verbatim():
    printed = subprocess.run(["bash", str(ROOT / ".ci" / "run"), "--print"], capture_output=True,
                             text=True, check=True, cwd=ROOT).stdout.splitlines()
    commands = readme_setup_commands()
    assert len(commands) == 2
    assert printed == commands
    # .ci/run installs nothing of its own: every install is one of the README's.
    own = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
           if "pip install" in line or "-m venv" in line]
    assert own == []


def _command_steps(command: str) -> list[list[str]]:
    words = shlex.split(command.replace("{", " ").replace("}", " ").replace(";", " "))
    steps, current = [], []
    for w in words:
        if w in ("&&", "||"):
            steps.append(current)
            current = []
        else:
            current.append(w)
    return [*steps, current]


def test_the_test_command_keeps_the_bundled_pip_and_ends_in_pytest():
    steps = _command_steps(readme_setup_commands()[1])
    assert not any("-U" in s or "--upgrade" in s for s in steps), steps
    assert steps[0] == ["python3", "-m", "venv", ".venv"]
    # pytest-xdist, a worker more than the 2 cores CI and the developers' machines have: the
    # tests wait on child processes an eighth of the time (issue 36; docs/benchmarks.md)
    assert steps[-1] == [".venv/bin/python", "-m", "pytest", "-n", "3"]


def test_every_torch_the_test_command_installs_is_a_cpu_build():
    torch = [w for s in _command_steps(readme_setup_commands()[1]) for w in s if w.startswith("torch")]
    assert torch and all(w == "torch==2.13.0+cpu" for w in torch), torch


def test_the_test_extras_bring_what_the_suite_and_ci_use():
    extras = tomlkit.loads((ROOT / "pyproject.toml").read_text()).unwrap()["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in extras["test"]}
    assert {"pytest", "hypothesis", "import-linter", "ruff", "mypy"} <= names
