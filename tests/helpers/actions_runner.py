"""A simulated GitHub Actions runner that executes action.yml's ``run:`` steps with bash.

The runner is re-stated as far as this action needs it: inputs with their (evaluated)
defaults, each step's ``env:`` expanded from ``${{ }}`` expressions, a fresh
``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY`` per step, ``bash --noprofile --norc -eo
pipefail`` for ``shell: bash``, step outputs read back into the ``steps`` context, and the
action's outputs evaluated at the end. ``uses:`` steps are recorded, not run.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any, Optional

import yaml

from .actions_expressions import Evaluator, to_string
from .interpreter import python_bin
from .workflow_commands import read_output_file

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / "action.yml"


def scalar(value: Any) -> str:
    """A YAML scalar as the runner reads it: ``true`` stays ``true``, not Python's ``True``."""
    return value if isinstance(value, str) else to_string(value)


def load_action(path: Path = ACTION) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@dataclasses.dataclass
class StepRun:
    id: str
    name: str
    returncode: Optional[int]  # None: a uses: step, not executed
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = dataclasses.field(default_factory=dict)
    summary: str = ""
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    with_: dict[str, str] = dataclasses.field(default_factory=dict)
    condition: Optional[bool] = None


@dataclasses.dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]
    github_env: str

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)

    @property
    def failed(self) -> bool:
        return any(s.returncode not in (None, 0) for s in self.steps)


class Runner:
    """One job on a runner: workspace, temp dir, PATH with the user's ``python``."""

    def __init__(self, root: Path, *, action_path: Path = REPO) -> None:
        """``action_path`` is the action's checkout; its ``action.yml`` is the one run."""
        self.root = root
        self.workspace = root / "workspace"
        self.temp = root / "runner-temp"
        self.bin = root / "user-bin"
        for directory in (self.workspace, self.temp, self.bin):
            directory.mkdir(parents=True, exist_ok=True)
        self.action_path = action_path
        # The user's interpreter: `python` on PATH is the one running this suite (`python3` is
        # the machine's: the action's choice of its own interpreter is tested with it).
        python_bin(self.bin, ("python",))
        self.github_env = root / "github-env"
        self.github_env.touch()
        self.event_name = "push"
        self.event: dict[str, Any] = {}  # the event payload (github.event)
        self.job = "test"
        self.job_index = 0
        self.run_attempt = "1"
        self.matrix: dict[str, Any] = {}
        self.extra_env: dict[str, str] = {}

    def base_env(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTEST_", "COVERAGE", "FLAKEWARDEN", "GITHUB_", "RUNNER_"))
            and key not in ("VIRTUAL_ENV", "PYTHONPATH", "CI")
        }
        env.update(
            {
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
                "CI": "true",
                "GITHUB_ACTIONS": "true",
                "GITHUB_WORKSPACE": str(self.workspace),
                "GITHUB_ACTION_PATH": str(self.action_path),
                "GITHUB_ENV": str(self.github_env),
                "GITHUB_JOB": self.job,
                "GITHUB_RUN_ATTEMPT": self.run_attempt,
                "GITHUB_EVENT_NAME": self.event_name,
                "RUNNER_TEMP": str(self.temp),
                "RUNNER_OS": "Linux",
            }
        )
        env.update(self.extra_env)
        return env

    def contexts(self, inputs: dict[str, str], steps: dict[str, Any]) -> dict[str, Any]:
        return {
            "github": {
                "job": self.job,
                "run_attempt": self.run_attempt,
                "event_name": self.event_name,
                "event": self.event,
                "repository": self.extra_env.get("GITHUB_REPOSITORY", ""),
                "workspace": str(self.workspace),
                "action_path": str(self.action_path),
                "token": "ghs_simulatedtoken0000000000000000000000",
            },
            "strategy": {"job-index": float(self.job_index), "job-total": 1.0},
            "matrix": self.matrix,
            "job": {"status": "success"},
            "runner": {"temp": str(self.temp), "os": "Linux"},
            "env": {},
            "inputs": inputs,
            "steps": steps,
        }

    def inputs(self, given: dict[str, str]) -> dict[str, str]:
        action = load_action(self.action_path / "action.yml")
        unknown = set(given) - set(action["inputs"])
        assert not unknown, f"inputs the action does not declare: {unknown}"
        evaluator = Evaluator(self.contexts({}, {}))
        return {
            name: given[name]
            if name in given
            else evaluator.template(scalar(spec.get("default", "")))
            for name, spec in action["inputs"].items()
        }

    def run(self, given: Optional[dict[str, str]] = None) -> ActionRun:
        action = load_action(self.action_path / "action.yml")
        inputs = self.inputs(given or {})
        steps_context: dict[str, Any] = {}
        runs: list[StepRun] = []
        failed = False
        for index, step in enumerate(action["runs"]["steps"]):
            step_id = step.get("id", f"__{index}")
            evaluator = Evaluator(self.contexts(inputs, steps_context), failed=failed)
            condition = evaluator.condition(step.get("if", "success()"))
            env = {k: evaluator.template(scalar(v)) for k, v in (step.get("env") or {}).items()}
            if "uses" in step:
                with_ = {
                    k: evaluator.template(scalar(v)) for k, v in (step.get("with") or {}).items()
                }
                runs.append(
                    StepRun(step_id, step["name"], None, env=env, with_=with_, condition=condition)
                )
                continue
            if not condition:
                runs.append(StepRun(step_id, step["name"], None, condition=False))
                continue
            assert step["shell"] == "bash"
            output = self.temp / f"output-{uuid.uuid4().hex}"
            summary = self.temp / f"summary-{uuid.uuid4().hex}"
            output.touch()
            summary.touch()
            script = self.temp / f"{uuid.uuid4().hex}.sh"
            script.write_text(step["run"], encoding="utf-8")
            full_env = {
                **self.base_env(),
                **env,
                "GITHUB_OUTPUT": str(output),
                "GITHUB_STEP_SUMMARY": str(summary),
            }
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.workspace,
                env=full_env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            outputs = read_output_file(output)
            steps_context[step_id] = {
                "outputs": outputs,
                "outcome": "success" if proc.returncode == 0 else "failure",
                "conclusion": "success" if proc.returncode == 0 else "failure",
            }
            runs.append(
                StepRun(
                    step_id,
                    step["name"],
                    proc.returncode,
                    proc.stdout,
                    proc.stderr,
                    outputs,
                    summary.read_text(encoding="utf-8"),
                    env,
                    condition=True,
                )
            )
            failed = failed or proc.returncode != 0
        final = Evaluator(self.contexts(inputs, steps_context), failed=failed)
        outputs = {
            name: final.template(str(spec["value"])) for name, spec in action["outputs"].items()
        }
        return ActionRun(runs, outputs, self.github_env.read_text(encoding="utf-8"))
