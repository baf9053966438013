"""action.yml run step by step as GitHub's runner runs a composite action (tests/project)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from support.paths import REPO

ACTION = REPO / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


@dataclass
class Step:
    name: str
    code: int
    out: str
    err: str


def load_action() -> dict:
    return yaml.safe_load(ACTION.read_text())


class Runner:
    """Runs action.yml's steps the way GitHub's runner does, for the expressions it uses."""

    def __init__(self, action_path: Path, workspace: Path, temp: Path, env: dict[str, str]):
        self.action_path, self.workspace, self.temp, self.env = action_path, workspace, temp, env
        self.outputs: dict[str, dict[str, str]] = {}
        self.summary = temp / "step_summary.md"

    def expand(self, text: str, inputs: dict[str, str]) -> str:
        def value(match: re.Match[str]) -> str:
            expr = match.group(1)
            if expr == "github.action_path":
                return str(self.action_path)
            if expr.startswith("inputs."):
                return inputs[expr.removeprefix("inputs.")]
            m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
            if m:
                return self.outputs[m.group(1)][m.group(2)]
            raise AssertionError(f"action.yml uses an expression this runner does not know: {expr}")

        return EXPRESSION.sub(value, str(text))

    def condition(self, step: dict, inputs: dict[str, str]) -> bool:
        cond = step.get("if")
        if cond is None:
            return True
        m = re.fullmatch(r"inputs\.([\w-]+) != ''", cond.strip())
        assert m, f"a condition this runner does not know: {cond}"
        return inputs[m.group(1)] != ""

    def run(self, given: dict[str, str], skip: tuple[str, ...] = ()) -> list[Step]:
        """The steps in order (those with an id in `skip` left out: their outputs are already
        in self.outputs), up to the first that fails."""
        action = load_action()
        assert action["runs"]["using"] == "composite"
        declared = action["inputs"]
        assert set(given) <= set(declared), set(given) - set(declared)
        inputs = {name: str(spec.get("default", "")) for name, spec in declared.items()} | given
        done = []
        for index, step in enumerate(action["runs"]["steps"]):
            if not self.condition(step, inputs) or step.get("id") in skip:
                continue
            if "uses" in step:
                # Only setup-python, stood in for by the PATH the test gives (see the docstring).
                assert step["uses"].startswith("actions/setup-python@"), step["uses"]
                continue
            assert step["shell"] == "bash"
            output = self.temp / f"output{index}"
            output.write_text("")
            env = {**self.env, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(self.summary),
                   "GITHUB_ACTION_PATH": str(self.action_path), "RUNNER_TEMP": str(self.temp),
                   "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_ACTIONS": "true"}
            env |= {k: self.expand(v, inputs) for k, v in (step.get("env") or {}).items()}
            assert "${{" not in step["run"], "inputs must reach the script through env only"
            script = self.temp / f"step{index}.sh"
            script.write_text(step["run"])
            cwd = self.workspace / self.expand(step.get("working-directory", "."), inputs)
            r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                               cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                               check=False)
            done.append(Step(step.get("name", f"step {index}"), r.returncode, r.stdout, r.stderr))
            if "id" in step:
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in
                                                output.read_text().splitlines() if "=" in line)
            if r.returncode != 0:
                break
        return done
