"""The Python API on the bundled example: ``batchinfer.run``'s result is what the run
recorded, its errors carry the command's messages, and ``batchinfer.Transformer`` writes what
``batchinfer run`` writes with the same settings, byte for byte."""

import json
from pathlib import Path

import pytest

import batchinfer
from batchinfer.transform.assemble import RESULT_MANIFEST, SUCCESS_MARKER
from tests.support.cli import run_cli
from tests.support.example import write_example

ROWS = 300


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_example(tmp_path_factory.mktemp("example"), ROWS)


def test_run_returns_what_the_manifest_records_r12(example, tmp_path):
    """R12: the input data.csv gives data.csv.out; the counts are the file's lines."""
    source = example / "input" / "data.csv"
    result = batchinfer.run(
        example / "input",
        model=example / "model",
        output=tmp_path,
        content_type="text/csv",
        split_type="Line",
        assemble_with="Line",
    )
    output = tmp_path / "data.csv.out"
    assert isinstance(result, batchinfer.JobResult)
    assert result.status == "SUCCEEDED" and result.output_dir == str(tmp_path)
    assert result.engine == "transform"
    assert result.settings["split_type"] == "Line" and result.settings["content_type"] == "text/csv"
    [file] = result.files
    assert isinstance(file, batchinfer.FileResult)
    assert (file.name, file.outputs, file.status) == ("data.csv", ["data.csv.out"], "SUCCEEDED")
    assert file.records_in == file.records_out == ROWS == len(output.read_bytes().splitlines())
    assert (file.bytes_in, file.bytes_out) == (source.stat().st_size, output.stat().st_size)
    assert file.instances == [1] and file.error is None
    assert result.to_json() == json.loads((tmp_path / RESULT_MANIFEST).read_text())
    assert (tmp_path / SUCCESS_MARKER).exists()


def test_stages_reach_on_stage(example, tmp_path):
    stages: list[str] = []
    batchinfer.run(
        example / "input",
        model=example / "model",
        output=tmp_path,
        engine="processing",
        shards=2,
        merge=True,
        content_type="text/csv",
        split_type="Line",
        assemble_with="Line",
        on_stage=stages.append,
    )
    assert stages == ["split", "infer", "finalize"]
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".out"] == ["data.csv.out"]


# (command-line options, the same as keyword arguments of batchinfer.run)
BAD_RUNS = [
    (["--split-type", "Lines"], {"split_type": "Lines"}),
    (["--max-payload-mb", "101"], {"max_payload_mb": 101}),
    (["--engine", "gpu"], {"engine": "gpu"}),
    (["--shards", "0"], {"shards": 0}),
    (["--merge"], {"merge": True}),
    (["--encoding", "latin-1"], {"encoding": "latin-1", "content_type": None}),
    (["--delimiter", "ab"], {"delimiter": "ab"}),
    (["--engine", "endpoint"], {"engine": "endpoint", "model": None}),
    (["--include", "*.json"], {"include": ["*.json"]}),
]


@pytest.mark.parametrize(("options", "keywords"), BAD_RUNS)
def test_an_error_of_run_is_the_commands_message_and_exit_code(
    capsys, example, tmp_path, options, keywords
):
    """R1/R2: a setting outside its rules is refused before any work, naming it."""
    arguments = {"model": example / "model", "content_type": "text/csv", **keywords}
    given = [
        *([] if arguments["model"] is None else ["--model", str(arguments["model"])]),
        *([] if arguments["content_type"] is None else ["--content-type", "text/csv"]),
    ]
    code, printed = run_cli(
        capsys, "run", str(example / "input"), "--output", str(tmp_path / "cli"),
        "--quiet", *given, *options,
    )  # fmt: skip
    with pytest.raises(batchinfer.BatchInferError) as raised:
        batchinfer.run(example / "input", output=tmp_path / "api", **arguments)
    assert printed.strip() == f"error: {raised.value}"
    assert code == raised.value.exit_code != 0
    assert not (tmp_path / "api").exists()


def test_a_missing_input_is_an_input_error_as_on_the_command_line(capsys, example, tmp_path):
    missing = tmp_path / "nowhere"
    code, printed = run_cli(
        capsys, "run", str(missing), "--output", str(tmp_path / "cli"),
        "--model", str(example / "model"), "--quiet",
    )  # fmt: skip
    with pytest.raises(batchinfer.InputError, match="nowhere: no such file") as raised:
        batchinfer.run(missing, output=tmp_path / "api", model=example / "model")
    assert printed.strip() == f"error: {raised.value}"
    assert code == raised.value.exit_code == 3


def test_a_failed_input_raises_job_failed_with_the_commands_lines_r19(capsys, example, tmp_path):
    """R19: the file with a failed record (an empty line, R6) gets no output; the other is
    written; the error's lines are the ones the command prints before it exits 1."""
    data = tmp_path / "in"
    data.mkdir()
    lines = (example / "input" / "data.csv").read_bytes().splitlines(keepends=True)
    (data / "good.csv").write_bytes(b"".join(lines[:10]))
    (data / "holed.csv").write_bytes(b"".join([*lines[:3], b"\n", *lines[3:10]]))
    options = ["--content-type", "text/csv", "--split-type", "Line", "--engine", "processing"]
    code, printed = run_cli(
        capsys, "run", str(data), "--output", str(tmp_path / "cli"),
        "--model", str(example / "model"), "--quiet", *options,
    )  # fmt: skip
    with pytest.raises(batchinfer.JobFailed) as raised:
        batchinfer.run(
            data,
            output=tmp_path / "api",
            model=example / "model",
            content_type="text/csv",
            split_type="Line",
            engine="processing",
        )
    failed = raised.value
    assert code == failed.exit_code == 1
    assert printed.strip() == str(failed)
    assert str(failed).startswith("FAILED holed.csv: record 4")
    assert failed.result.status == "FAILED"
    assert [(f.name, f.status) for f in failed.result.files] == [
        ("good.csv", "SUCCEEDED"),
        ("holed.csv", "FAILED"),
    ]
    written = sorted(p.name for p in (tmp_path / "api").iterdir())
    assert written == [RESULT_MANIFEST, "good.csv.out"]
    assert failed.result.to_json() == json.loads((tmp_path / "api" / RESULT_MANIFEST).read_text())


def test_plan_is_what_plan_json_prints(capsys, example):
    options = ["--content-type", "text/csv", "--split-type", "Line", "--shard-size", "8KiB"]
    code, printed = run_cli(capsys, "plan", str(example / "input"), "--json", *options)
    assert code == 0, printed
    plan = batchinfer.plan(
        example / "input", content_type="text/csv", split_type="Line", shard_size="8KiB"
    )
    assert isinstance(plan, batchinfer.Plan)
    assert plan.to_json() == json.loads(printed)
    assert plan.records == ROWS and plan.job is not None and plan.job.shards > 1


def test_an_error_of_plan_is_the_commands_message(capsys, example):
    code, printed = run_cli(
        capsys, "plan", str(example / "input"), "--shards", "2", "--shard-size", "1MiB"
    )
    with pytest.raises(batchinfer.ValidationError) as raised:
        batchinfer.plan(example / "input", shards=2, shard_size="1MiB")
    assert printed.strip() == f"error: {raised.value}"
    assert code == raised.value.exit_code == 2


JOIN_OPTIONS = [
    "--instance-count", "1", "--instance-type", "ml.m5.xlarge",
    "--batch-strategy", "MultiRecord", "--assemble-with", "Line", "--accept", "text/csv",
    "--content-type", "text/csv", "--split-type", "Line", "--join-source", "Input",
]  # fmt: skip


def test_the_sdk_snippet_writes_what_batchinfer_run_writes_r17(capsys, example, tmp_path):
    """The SDK's snippet with its import and model_name changed, against ``batchinfer run``
    with the same settings: the same files, byte for byte (R17: each row joined with its
    prediction); wait=False, then wait(), writes them too."""
    code, printed = run_cli(
        capsys, "run", str(example / "input"), "--output", str(tmp_path / "cli"),
        "--model", str(example / "model"), "--quiet", *JOIN_OPTIONS,
    )  # fmt: skip
    assert code == 0, printed
    from batchinfer import Transformer

    for folder, wait in (("sdk", True), ("background", False)):
        t = Transformer(
            model_name=str(example / "model"),
            instance_count=1,
            instance_type="ml.m5.xlarge",
            strategy="MultiRecord",
            assemble_with="Line",
            output_path=str(tmp_path / folder),
            accept="text/csv",
        )
        t.transform(
            f"file://{example / 'input'}",
            content_type="text/csv",
            split_type="Line",
            join_source="Input",
            wait=wait,
            logs=False,
        )
        t.wait()
        assert t.result is not None and t.result.succeeded
        cli = json.loads((tmp_path / "cli" / RESULT_MANIFEST).read_text())
        assert t.result.settings == cli["settings"]
        outputs = sorted(p.name for p in (tmp_path / "cli").iterdir())
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == outputs
        expected = (tmp_path / "cli" / "data.csv.out").read_bytes()
        assert (tmp_path / folder / "data.csv.out").read_bytes() == expected
    joined = expected.decode().splitlines()
    rows = (example / "input" / "data.csv").read_text().splitlines()
    assert [line.rsplit(",", 1)[0] for line in joined] == rows


def test_a_failed_transform_raises_job_failed_from_wait(example, tmp_path):
    data = tmp_path / "holed.csv"
    lines = (example / "input" / "data.csv").read_bytes().splitlines(keepends=True)
    data.write_bytes(b"".join([*lines[:2], b"\n", *lines[2:5]]))
    t = batchinfer.Transformer(
        model_data=example / "model", output_path=tmp_path / "out", engine="processing"
    )
    t.transform(data, content_type="text/csv", split_type="Line", wait=False, logs=False)
    with pytest.raises(batchinfer.JobFailed, match=r"FAILED holed\.csv: record 3"):
        t.wait()
    assert t.result is None
