"""Every path the synthesized state machine reads from the run's state (``$.plan...``,
``$.round...``, ``$.admission...``, ``$.job...``, ``$.result...``, ``$.failure...``,
``$.error...``) exists in what the typed state writes there (``to_state``), so renaming a
field of
:mod:`batchinfer.pipeline.contract.state` fails here, not in a run."""

import re
from typing import Any

import pytest

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.state import Admission, Failure, JobOutcome, RunEnd
from batchinfer.pipeline.steps.prepare_job import JOB_TASKS, prepare_job, scoring_job
from tests.support.run_state import BUCKET, example_plan, example_round

from .definition import all_states, definitions

# A path into the state: $.<part> then .name or ['name'] segments.
_PATH = re.compile(r"^\$\.(plan|round|admission|job|result|failure|error)((?:\.[A-Za-z_]\w*)*)$")

# A join makes PrepareJob choose the task with DataProcessing.
JOIN = {"join_source": "Input"}


def _written() -> dict[str, list[Any]]:
    """For each part of the state, every shape the typed state writes there."""
    env = PipelineEnvironment(table_name="t", data_bucket=BUCKET, job_prefix="bi")
    round_ = example_round()
    jobs = [
        prepare_job(
            example_plan(engine, **(JOIN if dp else {})), round_, env=env, s3=None
        ).to_state()
        for engine, dp in JOB_TASKS
    ]
    failed = JobOutcome(None, None, "States.TaskFailed", "{}").to_state()
    return {
        "plan": [example_plan().to_state()],
        "round": [round_.to_state()],
        "admission": [Admission(True, "ml.m5.large", 1, 1, 2).to_state()],
        "job": [
            *jobs,
            scoring_job("j").to_state(),
            JobOutcome("j", "Completed").to_state(),
            failed,
        ],
        "result": [RunEnd("r-1", "SUCCEEDED", "s3://b/output/r-1/", "arn", 1, 1, 1).to_state()],
        "failure": [Failure("E", "cause").to_state()],
        "error": [failed],
    }


def state_paths(value: Any) -> set[str]:
    """The state paths a definition reads (a ResultPath writes)."""
    if isinstance(value, dict):
        reads = (v for k, v in value.items() if k != "ResultPath")
        return set().union(*(state_paths(v) for v in reads), set())
    if isinstance(value, list):
        return set().union(*(state_paths(v) for v in value), set())
    return {value} if isinstance(value, str) and _PATH.match(value) else set()


def unresolved(paths: set[str], written: dict[str, list[Any]]) -> list[str]:
    """The paths that no shape written to their part of the state holds."""
    missing = []
    for path in sorted(paths):
        part, rest = _PATH.match(path).groups()
        names = [name for name in rest.split(".") if name]
        if not any(_holds(shape, names) for shape in written[part]):
            missing.append(path)
    return missing


def _holds(value: Any, names: list[str]) -> bool:
    for name in names:
        if not isinstance(value, dict) or name not in value:
            return False
        value = value[name]
    return True


@pytest.fixture(scope="module")
def paths(synthesized) -> set[str]:
    (definition,) = definitions(synthesized.template_json).values()
    states = all_states(definition["States"])
    # The split Map's item processor reads a SplitTask item, not the run's state.
    items = all_states(states["SplitInputs"]["ItemProcessor"]["States"])
    run_states = {name: s for name, s in states.items() if name not in items}
    run_states["SplitInputs"] = {
        k: v for k, v in states["SplitInputs"].items() if k != "ItemProcessor"
    }
    return state_paths(run_states)


def test_the_definition_reads_the_state_parts_steps_write(paths):
    parts = {_PATH.match(path).group(1) for path in paths}
    assert parts == {"plan", "round", "admission", "job", "failure", "error"}
    assert "$.plan.inputs_key" in paths and "$.job.request.TransformJobName" in paths


def test_every_state_path_of_the_definition_exists_in_the_typed_state(paths):
    assert unresolved(paths, _written()) == []


def test_a_renamed_state_field_is_caught(paths):
    written = _written()
    plan = written["plan"][0]
    written["plan"] = [{("items_key" if k == "inputs_key" else k): v for k, v in plan.items()}]
    assert unresolved(paths, written) == ["$.plan.inputs_key"]
