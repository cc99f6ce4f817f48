"""The engine's side of the container contract and job inputs: manifests (R4), ordering
under concurrency (R9, R14), retries (R20) and the container environment (R21, C6)."""

import json
import textwrap
from pathlib import Path

import pytest

from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.errors import InputError
from batchinfer.transform.settings import TransformSettings

CSV = dict(content_type="text/csv", accept="text/csv", split_type="Line", assemble_with="Line")

# Echoes, for every record, the record and the container environment variables it names;
# a record "flaky:<path>" fails with 500 until <path> exists (it creates it on the way);
# "reject:<path>" is answered 400 and "fail:<path>" 500, each request adding a line to <path>;
# "sleep:<seconds>" answers after that long.
CONTRACT_MODEL = textwrap.dedent(
    """
    import os
    import time
    from pathlib import Path


    def model_fn(model_dir):
        return None


    def input_fn(body, content_type):
        return [line for line in body.split("\\n") if line]


    def predict_fn(records, model):
        out = []
        for record in records:
            kind, _, arg = record.partition(":")
            if kind == "flaky" and not Path(arg).exists():
                Path(arg).touch()
                raise RuntimeError("transient failure")
            if kind in ("reject", "fail"):
                with open(arg, "a") as requests:
                    requests.write("received\\n")
                if kind == "reject":
                    raise ValueError("this record is malformed")  # the server answers 400
                raise RuntimeError("the model broke")  # the server answers 500
            if kind == "sleep":
                time.sleep(float(arg))
            if kind == "env":
                record = ",".join(os.environ.get(name, "-") for name in arg.split("|"))
            out.append(record)
        return out


    def output_fn(prediction, accept):
        return "\\n".join(prediction)
    """
)


@pytest.fixture(scope="module")
def contract_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model_dir = tmp_path_factory.mktemp("contract-model")
    (model_dir / "inference.py").write_text(CONTRACT_MODEL)
    return model_dir


def run(inputs: list[Path], out: Path, model: Path, **settings):
    return run_job(LocalJob(inputs, out, model, TransformSettings(**settings)))


def test_manifest_file_input_reads_prefix_plus_each_relative_path_r4(tmp_path, row_sum_model):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.csv").write_bytes(b"1,2\n")
    (data / "sub" / "b.csv").write_bytes(b"3,4\n")
    (data / "skipped.csv").write_bytes(b"5,6\n")
    manifest = tmp_path / "inputs.manifest"
    manifest.write_text(json.dumps([{"prefix": f"{data}/"}, "a.csv", "sub/b.csv"]))
    result = run([manifest], tmp_path / "out", row_sum_model, **CSV)
    assert result.succeeded
    assert [f.name for f in result.files] == ["a.csv", "sub/b.csv"]
    assert (tmp_path / "out" / "sub" / "b.csv.out").read_bytes() == b"7\n"
    assert not (tmp_path / "out" / "skipped.csv.out").exists()


def test_a_manifest_entry_that_is_not_a_file_is_named(tmp_path, row_sum_model):
    manifest = tmp_path / "inputs.manifest"
    manifest.write_text(json.dumps([{"prefix": f"{tmp_path}/"}, "missing.csv"]))
    with pytest.raises(InputError, match=r"entry 1 names .*missing.csv"):
        run([manifest], tmp_path / "out", row_sum_model, **CSV)


def test_concurrent_requests_never_change_the_output_order_r9_r14(tmp_path, contract_model):
    delays = [0.2, 0.0, 0.1, 0.0, 0.15, 0.05, 0.0, 0.1]
    records = b"".join(b"sleep:%.2f\n" % d for d in delays)
    data = tmp_path / "in" / "d.csv"
    data.parent.mkdir()
    data.write_bytes(records)
    settings = dict(CSV, batch_strategy="SingleRecord", max_concurrent_transforms=4)
    result = run_job(
        LocalJob([data], tmp_path / "out", contract_model, TransformSettings(**settings),
                 workers_per_instance=4)
    )  # fmt: skip
    assert result.succeeded
    assert result.effective["max_concurrent_transforms"] == 4
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == records


def test_a_5xx_answer_is_retried_up_to_invocations_max_retries_r20(tmp_path, contract_model):
    marker = tmp_path / "failed-once"
    data = tmp_path / "in" / "d.csv"
    data.parent.mkdir()
    data.write_bytes(f"a\nflaky:{marker}\nb\n".encode())
    result = run([data], tmp_path / "out", contract_model, batch_strategy="SingleRecord", **CSV)
    assert result.succeeded and marker.exists()
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == f"a\nflaky:{marker}\nb\n".encode()

    marker.unlink()
    result = run(
        [data],
        tmp_path / "out2",
        contract_model,
        batch_strategy="SingleRecord",
        invocations_max_retries=0,
        **CSV,
    )
    assert not result.succeeded and "500" in result.failures[0].error
    assert not (tmp_path / "out2" / "d.csv.out").exists()


def test_a_4xx_answer_fails_the_file_at_once_and_only_5xx_is_retried_r19_r20(
    tmp_path, contract_model
):
    """Against a real server: a record answered 400 is sent exactly once and fails its file
    naming the file and the record, with no retry said (R19); one answered 500 is sent
    1 + InvocationsMaxRetries times (R20); a file without either completes."""
    rejected, failed = tmp_path / "rejected.requests", tmp_path / "failed.requests"
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text(f"ok\nreject:{rejected}\nok\n")
    (data / "b.csv").write_text(f"ok\nfail:{failed}\n")
    (data / "c.csv").write_text("ok\n")
    result = run(
        [data],
        tmp_path / "out",
        contract_model,
        batch_strategy="SingleRecord",
        invocations_max_retries=2,
        **CSV,
    )
    assert rejected.read_text().splitlines() == ["received"]
    assert failed.read_text().splitlines() == ["received"] * 3
    errors = {failure.name: failure.error for failure in result.failures}
    assert errors.keys() == {"a.csv", "b.csv"}
    assert errors["a.csv"].startswith(
        "a.csv: record 2: request failed: HTTP 400: predict_fn rejected the request: "
        "this record is malformed"
    )
    assert "attempt" not in errors["a.csv"]
    assert errors["b.csv"].startswith("b.csv: record 2: request failed: HTTP 500: RuntimeError")
    assert errors["b.csv"].endswith("(after 3 attempts)")
    out = tmp_path / "out"
    assert sorted(path.name for path in out.glob("*.out")) == ["c.csv.out"]


def test_container_environment_is_job_environment_plus_sagemaker_batch_vars_r21_c6(
    tmp_path, contract_model
):
    names = "GREETING|SAGEMAKER_BATCH|SAGEMAKER_MAX_PAYLOAD_IN_MB|SAGEMAKER_BATCH_STRATEGY"
    data = tmp_path / "in" / "d.csv"
    data.parent.mkdir()
    data.write_bytes(f"env:{names}|SAGEMAKER_MAX_CONCURRENT_TRANSFORMS\n".encode())
    result = run(
        [data],
        tmp_path / "out",
        contract_model,
        batch_strategy="SingleRecord",
        max_payload_mb=2,
        environment={"GREETING": "hello"},
        **CSV,
    )
    assert result.succeeded
    # Only what the job sets is passed (C6): MaxConcurrentTransforms was not set.
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == b"hello,true,2,SINGLE_RECORD,-\n"
