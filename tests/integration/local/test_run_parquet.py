"""Parquet through `batchinfer run`: a file is one request (SplitType None) that the default
handler reads by column name, answered in Parquet with the prediction column, its records
its rows, counted from the footers of the input and the answer. A file that is not what its
content type says is refused naming it, and a bad Parquet file fails alone, with no output
(R8: a record larger than MaxPayloadInMB fails its file; R19: a file with any failed record
gets no output)."""

from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.errors import ValidationError
from batchinfer.serving.launcher import start_server
from batchinfer.transform.settings import TransformSettings
from tests.support.customers import FEATURES, ROWS, customers

PARQUET = dict(content_type="application/x-parquet", accept="application/x-parquet")


def job(inputs: list[Path], output: Path, model: Path, **kwargs: object) -> LocalJob:
    settings = TransformSettings(**kwargs.pop("settings", PARQUET))  # type: ignore[arg-type]
    return LocalJob(inputs=inputs, output_dir=output, model=model, settings=settings, **kwargs)  # type: ignore[arg-type]


def write(table: pd.DataFrame, path: Path, **options: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(path, index=False, **options)
    return path


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_parquet_reaches_a_dataframe_pipeline_by_name_and_is_answered_in_parquet(
    tmp_path: Path, pipeline_model: Path, engine: str
) -> None:
    """Columns in another order than the model's, one more it does not use, a category
    column (Parquet's dictionary encoding), two row groups: the answer holds the Pipeline's
    predictions, row for row, and both sides are counted from their footers."""
    table = customers()
    table["plan"] = table["plan"].astype("category")
    data = table[["plan", "income", "city", "age"]].assign(customer_id=range(ROWS))
    source = write(data, tmp_path / "in" / "customers.parquet", row_group_size=100)
    result = run_job(job([source], tmp_path / "out", pipeline_model, engine=engine))
    assert result.succeeded, result.failures
    counted = result.files[0]
    assert (counted.records_in, counted.records_out) == (ROWS, ROWS)
    written = pd.read_parquet(tmp_path / "out" / "customers.parquet.out")
    pipeline = joblib.load(pipeline_model / "model.joblib")
    expected = pd.DataFrame({"prediction": pipeline.predict(table[FEATURES])})
    pd.testing.assert_frame_equal(written, expected)


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_join_answers_the_input_columns_then_the_predictions(
    tmp_path: Path, pipeline_model: Path, engine: str
) -> None:
    """--join-source Input: the model server writes the input's columns, types kept (a
    category stays one), then the prediction, in the input's row order: the frame
    ``df.assign(prediction=pipeline.predict(df))``."""
    table = customers().assign(customer_id=range(ROWS))
    table["plan"] = table["plan"].astype("category")
    source = write(table, tmp_path / "in" / "customers.parquet", row_group_size=64)
    settings = {**PARQUET, "join_source": "Input"}
    result = run_job(
        job([source], tmp_path / "out", pipeline_model, engine=engine, settings=settings)
    )
    assert result.succeeded, result.failures
    assert (result.files[0].records_in, result.files[0].records_out) == (ROWS, ROWS)
    written = pd.read_parquet(tmp_path / "out" / "customers.parquet.out")
    pipeline = joblib.load(pipeline_model / "model.joblib")
    pd.testing.assert_frame_equal(
        written, table.assign(prediction=pipeline.predict(table[FEATURES]))
    )


def test_a_join_refuses_an_input_that_already_has_the_prediction_column(
    tmp_path: Path, pipeline_model: Path
) -> None:
    source = write(customers().assign(prediction=1), tmp_path / "in" / "scored.parquet")
    settings = {**PARQUET, "join_source": "Input"}
    result = run_job(job([source], tmp_path / "out", pipeline_model, settings=settings))
    (failed,) = result.failures
    assert "application/x-parquet column 'prediction' is in the input and in the prediction" in (
        failed.error or ""
    )


def test_a_numeric_parquet_file_reaches_an_array_model_in_column_order(tmp_path: Path) -> None:
    """A model fitted on an array gets the file's columns in order as numbers (an integer
    column, a boolean one and a missing value included), answered here in CSV."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(4)
    rows = np.column_stack([rng.normal(size=(60, 2)), rng.integers(0, 9, 60), rng.random(60) > 0.5])
    rows[3, 1] = np.nan
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    model = HistGradientBoostingRegressor(max_iter=20).fit(rows, np.nan_to_num(rows).sum(axis=1))
    joblib.dump(model, model_dir / "model.joblib")
    table = pa.table(
        {
            "x": rows[:, 0],
            "y": rows[:, 1],
            "count": rows[:, 2].astype(np.int32),
            "flag": rows[:, 3].astype(bool),
        }
    )
    source = tmp_path / "in" / "rows.parquet"
    source.parent.mkdir()
    pq.write_table(table, source)
    settings = {**PARQUET, "accept": "text/csv"}
    result = run_job(job([source], tmp_path / "out", model_dir, settings=settings))
    assert result.succeeded, result.failures
    written = np.loadtxt(tmp_path / "out" / "rows.parquet.out")
    np.testing.assert_array_equal(written, model.predict(rows))


def test_a_parquet_file_sent_as_csv_is_refused_before_anything_runs(
    tmp_path: Path, pipeline_model: Path
) -> None:
    source = write(customers(), tmp_path / "in" / "customers.parquet")
    csv = dict(content_type="text/csv", split_type="Line", assemble_with="Line")
    with pytest.raises(ValidationError, match=r"customers.parquet: is a Parquet file \(starts "):
        run_job(job([source], tmp_path / "out", pipeline_model, settings=csv))
    assert not (tmp_path / "out").exists()


def test_bad_parquet_files_fail_alone_naming_the_file_and_what_is_wrong(
    tmp_path: Path, pipeline_model: Path
) -> None:
    """A truncated file, a CSV file named .parquet, a file over MaxPayloadInMB (of one row
    group over it, and of many row groups that are not) and a file without a column the
    model needs each fail with no output; the good file is scored."""
    good = write(customers(), tmp_path / "in" / "good.parquet")
    whole = good.read_bytes()
    (tmp_path / "in" / "truncated.parquet").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "in" / "text.parquet").write_text("age,income\n1,2\n")
    big = customers(40_000)
    big["note"] = [f"{i:08d}" * 4 for i in range(len(big))]
    write(big, tmp_path / "in" / "big.parquet", compression="none")
    write(big, tmp_path / "in" / "grouped.parquet", compression="none", row_group_size=5_000)
    write(customers().drop(columns="city"), tmp_path / "in" / "no_city.parquet")
    settings = {**PARQUET, "max_payload_mb": 1}
    result = run_job(job([tmp_path / "in"], tmp_path / "out", pipeline_model, settings=settings))
    errors = {Path(f.input).name: f.error for f in result.files if f.error}
    assert set(errors) == {
        "truncated.parquet",
        "text.parquet",
        "big.parquet",
        "grouped.parquet",
        "no_city.parquet",
    }
    assert (
        "does not end with PAR1: not a Parquet file, or a truncated one, but content_type ("
        in (errors["truncated.parquet"])
    )
    assert errors["text.parquet"] == (
        "text.parquet: does not start with PAR1: not a Parquet file, but content_type "
        "(ContentType) is 'application/x-parquet'"
    )
    assert (
        "big.parquet: records 1-40000: are row group 0 of this Parquet file"
        in (errors["big.parquet"])
    )
    assert (
        "over MaxPayloadInMB=1 (1048576 bytes); a request holds whole row groups"
        in (errors["big.parquet"])
    )
    assert "grouped.parquet: records 1-40000: are a Parquet file of" in errors["grouped.parquet"]
    assert "in 8 row groups, over MaxPayloadInMB=1 (1048576 bytes)" in errors["grouped.parquet"]
    assert "--shards auto keeps each within the limit" in errors["grouped.parquet"]
    assert (
        "application/x-parquet records have no column 'city', a feature the model needs"
        in (errors["no_city.parquet"])
    )
    outputs = sorted(p.name for p in (tmp_path / "out").glob("*.out"))
    assert outputs == ["good.parquet.out"]


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_file_split_into_row_group_shards_merges_into_one_parquet_of_the_input_frame(
    tmp_path: Path, pipeline_model: Path, engine: str
) -> None:
    """--shards 3 on a file of 6 row groups: three standalone files of two row groups each
    are scored by three instances, each answering one Parquet file, and --merge writes one
    Parquet file whose row groups are the answers', in order: the frame
    ``df.assign(prediction=pipeline.predict(df))`` (R3: each input object goes whole to one
    instance, so shards are what spreads one file over instances)."""
    table = customers().assign(customer_id=range(ROWS))
    table["plan"] = table["plan"].astype("category")
    source = write(table, tmp_path / "in" / "customers.parquet", row_group_size=40)
    settings = {**PARQUET, "join_source": "Input", "instance_count": 3}
    run = job(
        [source],
        tmp_path / "out",
        pipeline_model,
        engine=engine,
        settings=settings,
        shards=3,
        merge=True,
    )
    result = run_job(run)
    assert result.succeeded, result.failures
    (scored,) = result.files
    assert (scored.shards, scored.instances) == (3, [1, 2, 3])
    assert (scored.records_in, scored.records_out) == (ROWS, ROWS)
    merged = tmp_path / "out" / "customers.parquet.out"
    assert [pq.ParquetFile(merged).metadata.row_group(i).num_rows for i in range(3)] == [80] * 3
    pipeline = joblib.load(pipeline_model / "model.joblib")
    pd.testing.assert_frame_equal(
        pd.read_parquet(merged), table.assign(prediction=pipeline.predict(table[FEATURES]))
    )


def test_shards_auto_keeps_each_request_within_max_payload(tmp_path: Path, pipeline_model: Path):
    """R8: a file of 8 row groups, 2 MB in all, over MaxPayloadInMB 1: --shards auto packs
    its row groups into shards of at most 1 MiB, each one request, and the merged answer is
    the whole file's."""
    big = customers(40_000)
    big["note"] = [f"{i:08d}" * 4 for i in range(len(big))]
    source = write(
        big, tmp_path / "in" / "grouped.parquet", compression="none", row_group_size=5_000
    )
    settings = {**PARQUET, "max_payload_mb": 1, "join_source": "Input"}
    run = job(
        [source], tmp_path / "out", pipeline_model, settings=settings, shards="auto", merge=True
    )
    result = run_job(run)
    assert result.succeeded, result.failures
    (scored,) = result.files
    # whole, the file fails (the test above); every shard passed the engine's own check
    assert scored.shards is not None and scored.shards >= 2
    assert scored.bytes_in > 1 << 20
    pipeline = joblib.load(pipeline_model / "model.joblib")
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "out" / "grouped.parquet.out"),
        big.assign(prediction=pipeline.predict(big[FEATURES])),
    )


def test_the_endpoint_engine_joins_parquet_through_each_requests_custom_attributes(
    tmp_path: Path, pipeline_model: Path
):
    """An endpoint's server has its own environment: the join a job's environment asks
    for rides in each request's CustomAttributes. Row-group shards, scored through a real
    `batchinfer serve`, merge into the frame ``df.assign(prediction=pipeline.predict(df))``."""
    table = customers().assign(customer_id=range(ROWS))
    table["plan"] = table["plan"].astype("category")
    source = write(table, tmp_path / "in" / "customers.parquet", row_group_size=40)
    with start_server(pipeline_model, workers=1) as server:
        server.wait_healthy(120.0)
        run = LocalJob(
            inputs=[source],
            output_dir=tmp_path / "out",
            model=None,
            settings=TransformSettings(**PARQUET, join_source="Input", instance_count=2),
            engine="endpoint",
            endpoint_url=server.url,
            shards=3,
            merge=True,
        )
        result = run_job(run)
    assert result.succeeded, result.failures
    assert (result.files[0].shards, result.files[0].records_out) == (3, ROWS)
    pipeline = joblib.load(pipeline_model / "model.joblib")
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "out" / "customers.parquet.out"),
        table.assign(prediction=pipeline.predict(table[FEATURES])),
    )
