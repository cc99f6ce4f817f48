"""Records set aside (``--bad-records quarantine``) by every local engine: a file with a few
records the model refuses is scored but for them, and they are named, with their number,
file, reason and text, in ``<output>.errors.jsonl``; the engines write the same bytes;
past ``--max-bad-records`` the file fails as the platform fails it (R19: a file with any
failed record gets no output); errors of the model, not of a record, are never set aside."""

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import joblib
import pytest

from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.serving.launcher import start_server
from batchinfer.transform.settings import TransformSettings
from tests.support.cli import run_cli
from tests.support.customers import FEATURES
from tests.support.models import write_model

QUARANTINE = dict(
    content_type="text/csv",
    accept="text/csv",
    split_type="Line",
    assemble_with="Line",
    bad_records="quarantine",
)
BAD = (17, 5_000, 9_998)  # the records 18, 5,001 and 9,999 of the file
START_TIMEOUT = 60.0


def rows(count: int = 10_000, bad: tuple[int, ...] = BAD) -> bytes:
    return b"".join(b"%d,bad\n" % n if n in bad else b"%d,%d\n" % (n, n % 7) for n in range(count))


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def errors_of(folder: Path, name: str = "data.csv") -> list[dict]:
    text = (folder / f"{name}.out.errors.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def endpoint_url(row_sum_model: Path) -> Iterator[str]:
    with start_server(row_sum_model, workers=2) as server:
        server.wait_healthy(START_TIMEOUT)
        yield server.url


def run(tmp_path: Path, engine: str, model: Path, url: str, out: str, **job: object):
    settings = TransformSettings.from_request(
        {**QUARANTINE, **job.pop("settings", {})}  # type: ignore[dict-item]
    )
    return run_job(
        LocalJob(
            [tmp_path / "in"],
            tmp_path / out,
            None if engine == "endpoint" else model,
            settings,
            engine=engine,  # type: ignore[arg-type]
            endpoint_url=url if engine == "endpoint" else None,
            **job,  # type: ignore[arg-type]
        )
    )


def test_three_bad_records_among_ten_thousand_are_set_aside_alike_by_every_engine(
    tmp_path, row_sum_model, endpoint_url
):
    """9,997 scored, 3 set aside and named; the same bytes from the transform engine (the
    model server bisects, as in a transform job), the processing engine (the same handler in
    process), the endpoint engine (which bisects the requests the endpoint refuses) and a
    transform run pre-split into merged shards (numbers counted across them)."""
    write(tmp_path / "in" / "data.csv", rows())
    runs = {
        "transform": dict(),
        "processing": dict(),
        "endpoint": dict(),
        "shards": dict(shards=3, merge=True),
        "single": dict(settings={"batch_strategy": "SingleRecord"}, shards=4, merge=True),
    }
    written = {}
    for case, job in runs.items():
        engine = case if case in ("transform", "processing", "endpoint") else "transform"
        result = run(tmp_path, engine, row_sum_model, endpoint_url, case, **job)
        assert result.succeeded, result.failures
        (file,) = result.files
        assert (file.records_in, file.records_out, file.records_quarantined) == (
            10_000,
            9_997,
            3,
        )
        assert file.outputs == ["data.csv.out", "data.csv.out.errors.jsonl"]
        manifest = json.loads((tmp_path / case / "_manifest.json").read_text())
        assert manifest["totals"]["records_quarantined"] == 3
        written[case] = {name: (tmp_path / case / name).read_bytes() for name in file.outputs}
    assert all(files == written["transform"] for files in written.values())
    scores = written["transform"]["data.csv.out"].decode().splitlines()
    assert scores == [str(n + n % 7) for n in range(10_000) if n not in BAD]
    assert errors_of(tmp_path / "transform") == [
        {
            "file": "data.csv",
            "record": n + 1,
            "reason": "input_fn rejected the request: row holds 'bad'",
            "input": f"{n},bad",
        }
        for n in BAD
    ]


@pytest.mark.parametrize("engine", ["transform", "processing", "endpoint"])
def test_past_max_bad_records_the_file_fails_naming_it_and_leaves_nothing(
    tmp_path, row_sum_model, endpoint_url, engine
):
    write(tmp_path / "in" / "data.csv", rows())
    write(tmp_path / "in" / "good.csv", rows(100, bad=()))
    result = run(
        tmp_path, engine, row_sum_model, endpoint_url, "out", settings={"max_bad_records": 2}
    )
    assert not result.succeeded
    failed = {f.name: f.error for f in result.failures}
    assert list(failed) == ["data.csv"]
    assert "more than max_bad_records 2" in (failed["data.csv"] or "")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "_manifest.json",
        "good.csv.out",
    ]


def test_without_quarantine_a_refused_record_still_fails_its_file(tmp_path, row_sum_model):
    """The platform's rule stays the default (R19)."""
    write(tmp_path / "in" / "data.csv", rows(1_000))
    result = run(tmp_path, "transform", row_sum_model, "", "out", settings={"bad_records": "fail"})
    assert [f.name for f in result.failures] == ["data.csv"]
    assert result.files[0].records_quarantined is None
    assert not list((tmp_path / "out").glob("*.errors.jsonl"))


# A model that refuses every record (a wrong model, a wrong content type) and counts each
# request it is asked, or fails with an error of its own (a 500) on a record holding "oom".
REFUSING = textwrap.dedent(
    """
    import os


    def model_fn(model_dir):
        return None


    def input_fn(body, content_type):
        with open(os.environ["CALLS"], "ab") as calls:
            calls.write(b".")
        text = body.decode() if isinstance(body, bytes) else body
        if "oom" in text:
            raise MemoryError("out of memory")
        raise ValueError("cannot read this model's input")


    def predict_fn(data, model):
        return data
    """
)


@pytest.mark.parametrize(
    ("strategy", "most_requests"),
    [("MultiRecord", 1 + 2 * 16 * 14), ("SingleRecord", 16 + 8)],
)
def test_a_model_that_refuses_every_record_fails_its_file_after_a_bounded_number_of_requests(
    tmp_path, strategy, most_requests
):
    """Not a request per record: 16 records refused before any is answered fail the file
    (in the server's bisection of a request, or in the engine's count over SingleRecord
    requests, of which up to 8 may be in flight)."""
    model = write_model(tmp_path / "model", REFUSING)
    calls = tmp_path / "calls"
    write(tmp_path / "in" / "data.csv", rows(10_000, bad=()))
    settings = {
        "batch_strategy": strategy,
        "max_concurrent_transforms": 8,
        "max_payload_mb": 1,
        "environment": {"CALLS": str(calls)},
    }
    result = run(tmp_path, "transform", model, "", "out", settings=settings)
    assert [f.name for f in result.failures] == ["data.csv"]
    assert "refused" in (result.failures[0].error or "")
    assert len(calls.read_bytes()) <= most_requests


def test_an_error_of_the_model_is_never_set_aside(tmp_path):
    """A 500 (the model ran out of memory) is the platform's to retry, then fails the file:
    no record of it is quarantined."""
    model = write_model(tmp_path / "model", REFUSING)
    write(tmp_path / "in" / "data.csv", b"1,2\noom\n")
    settings = {"environment": {"CALLS": str(tmp_path / "calls")}, "invocations_max_retries": 0}
    result = run(tmp_path, "transform", model, "", "out", settings=settings)
    assert "MemoryError: out of memory" in (result.failures[0].error or "")
    assert not list((tmp_path / "out").glob("*.errors.jsonl"))


def test_bad_rows_of_a_header_csv_for_a_dataframe_pipeline_are_set_aside_by_the_cli(
    tmp_path, capsys, pipeline_model, frame
):
    """What users bring: a header CSV with a categorical column, three rows whose income is
    not a number. The Pipeline scores the others as it scores them in process; the three are
    named by record (the header is no record) with the row as written."""
    table = frame[FEATURES].astype(object)
    for row in (4, 100, 230):
        table.loc[row, "income"] = "n/a"
    table.to_csv(write(tmp_path / "in" / "customers.csv", b""), index=False)
    out = tmp_path / "out"
    code, text = run_cli(
        capsys,
        "run", str(tmp_path / "in"), "--model", str(pipeline_model), "--output", str(out),
        "--header", "--content-type", "text/csv", "--split-type", "Line",
        "--assemble-with", "Line", "--bad-records", "quarantine", "--max-bad-records", "5",
    )  # fmt: skip
    assert code == 0, text
    assert "set aside: 3 records the model refused" in text
    good = frame[FEATURES].drop(index=[4, 100, 230])
    expected = [str(v) for v in joblib.load(pipeline_model / "model.joblib").predict(good)]
    assert (out / "customers.csv.out").read_text().splitlines() == expected
    named = errors_of(out, "customers.csv")
    assert [(e["record"], e["file"]) for e in named] == [
        (5, "customers.csv"),
        (101, "customers.csv"),
        (231, "customers.csv"),
    ]
    written = (tmp_path / "in" / "customers.csv").read_text().splitlines()
    assert [e["input"] for e in named] == [written[row + 1] for row in (4, 100, 230)]
    assert all(e["reason"] for e in named)


def test_past_max_bad_records_over_an_inputs_shards_the_input_fails(tmp_path, row_sum_model):
    """One bad record in each of three shards: each shard is within the limit, the input
    is not; it fails as in the pipeline, none of its shards' outputs kept (R19)."""
    write(tmp_path / "in" / "data.csv", rows())
    settings = {"max_bad_records": 2}
    for merge in (True, False):
        out = f"out-{merge}"
        job = dict(settings=settings, shards=3, merge=merge)
        result = run(tmp_path, "transform", row_sum_model, "", out, **job)
        (failed,) = result.failures
        assert failed.error == "data.csv: 3 records set aside, more than max_bad_records 2"
        assert [p.name for p in (tmp_path / out).iterdir()] == ["_manifest.json"]


def test_resume_keeps_an_input_whose_records_were_set_aside(tmp_path, row_sum_model):
    write(tmp_path / "in" / "data.csv", rows(1_000))
    first = run(tmp_path, "transform", row_sum_model, "", "out")
    kept = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    again = run(tmp_path, "transform", row_sum_model, "", "out", resume=True)
    assert again.kept_inputs == 1
    assert again.files[0].records_quarantined == first.files[0].records_quarantined == 1
    assert {n: (tmp_path / "out" / n).read_bytes() for n in kept if n[0] != "_"} == {
        n: data for n, data in kept.items() if n[0] != "_"
    }


def test_a_server_that_sets_records_aside_unasked_fails_the_file(tmp_path, row_sum_model):
    """An endpoint deployed with BATCHINFER_MAX_BAD_RECORDS answers marker lines; without
    quarantine nothing would take them out, so the file fails rather than hold them."""
    write(tmp_path / "in" / "data.csv", rows(100, bad=(7,)))
    with start_server(row_sum_model, env={"BATCHINFER_MAX_BAD_RECORDS": "5"}) as server:
        server.wait_healthy(START_TIMEOUT)
        result = run(
            tmp_path, "endpoint", row_sum_model, server.url, "out", settings={"bad_records": "fail"}
        )
    assert "the model server set records aside" in (result.failures[0].error or "")
    assert not (tmp_path / "out" / "data.csv.out").exists()
