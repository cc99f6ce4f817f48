"""Real tables through `batchinfer run`: a header row, string and categorical columns, a
scikit-learn Pipeline fitted on a pandas DataFrame, named JSON features, other delimiters and
encodings. Each case scores what users bring and compares with ``pipeline.predict(df)`` in
process (R6: a record is a line; R16: the input filter selects what the model gets)."""

import json
from collections.abc import Iterator
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest

from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.errors import InputError, ValidationError
from batchinfer.serving.launcher import start_server
from batchinfer.transform.settings import TransformSettings
from tests.support.cli import run_cli
from tests.support.customers import FEATURES, ROWS

LINES = dict(split_type="Line", assemble_with="Line")
CSV = dict(content_type="text/csv", accept="text/csv", **LINES)
JSONL = dict(content_type="application/jsonlines", accept="application/jsonlines", **LINES)


def expected(model: Path, frame: pd.DataFrame) -> list[str]:
    return [str(v) for v in joblib.load(model / "model.joblib").predict(frame[FEATURES])]


def predictions(output: Path) -> list[str]:
    return output.read_text().splitlines()


def job(inputs: list[Path], output: Path, model: Path | None, **kwargs: object) -> LocalJob:
    settings = TransformSettings(**kwargs.pop("settings", CSV))  # type: ignore[arg-type]
    return LocalJob(inputs=inputs, output_dir=output, model=model, settings=settings, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ["transform", "processing"])
@pytest.mark.parametrize("shards", [None, 3])
def test_header_csv_reaches_a_dataframe_pipeline_by_name(
    tmp_path: Path, pipeline_model: Path, frame: pd.DataFrame, engine: str, shards: int | None
) -> None:
    """A header row in another column order than the model's, quoted commas and accents:
    the header is no record (R6), and the Pipeline gets its columns by name."""
    data = tmp_path / "customers.csv"
    frame[["plan", "city", "income", "age"]].to_csv(data, index=False)
    result = run_job(
        job(
            [data],
            tmp_path / "out",
            pipeline_model,
            engine=engine,
            shards=shards,
            merge=shards is not None,
            header=True,
        )
    )
    assert result.succeeded, result.failures
    assert result.files[0].records_in == ROWS
    assert predictions(tmp_path / "out" / "customers.csv.out") == expected(pipeline_model, frame)


def test_without_header_option_the_header_row_is_named_as_the_fault(
    tmp_path: Path, pipeline_model: Path, frame: pd.DataFrame
) -> None:
    """Without --header the header row is record 1 (the platform's rule, R6), which the model
    cannot read: the file fails naming that record, not a traceback."""
    data = tmp_path / "customers.csv"
    frame[FEATURES].to_csv(data, index=False)
    result = run_job(job([data], tmp_path / "out", pipeline_model))
    assert not result.succeeded
    error = result.failures[0].error or ""
    assert "record 1 holds the model's feature names: it is a header row; pass --header" in error


def test_headerless_csv_is_named_by_the_models_feature_order(
    tmp_path: Path, pipeline_model: Path, frame: pd.DataFrame
) -> None:
    data = tmp_path / "customers.csv"
    frame[FEATURES].to_csv(data, index=False, header=False)
    result = run_job(job([data], tmp_path / "out", pipeline_model))
    assert result.succeeded, result.failures
    assert predictions(tmp_path / "out" / "customers.csv.out") == expected(pipeline_model, frame)


def test_a_column_the_model_needs_is_named_when_missing(
    tmp_path: Path, pipeline_model: Path, frame: pd.DataFrame
) -> None:
    data = tmp_path / "customers.csv"
    frame[["age", "city", "plan"]].to_csv(data, index=False)
    result = run_job(job([data], tmp_path / "out", pipeline_model, header=True))
    assert not result.succeeded
    assert "no column 'income', a feature the model needs" in (result.failures[0].error or "")
    assert not (tmp_path / "out" / "customers.csv.out").exists()  # R19: nothing partial


def test_inputs_with_different_headers_are_refused_naming_the_file(
    tmp_path: Path, pipeline_model: Path, frame: pd.DataFrame
) -> None:
    (tmp_path / "in").mkdir()
    frame[FEATURES].to_csv(tmp_path / "in" / "a.csv", index=False)
    frame[["plan", "age", "income", "city"]].to_csv(tmp_path / "in" / "b.csv", index=False)
    with pytest.raises(InputError, match=r"b\.csv: header column 1 is 'plan' where .*a\.csv"):
        run_job(job([tmp_path / "in"], tmp_path / "out", pipeline_model, header=True))


def test_semicolons_and_latin1_are_read_as_given(
    tmp_path: Path,
    pipeline_model: Path,
    frame: pd.DataFrame,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A European export: `;` between fields, latin-1 text (the Content-Type's charset)."""
    data = tmp_path / "export.csv"
    data.write_bytes(frame[FEATURES].to_csv(index=False, sep=";").encode("latin-1"))
    out = tmp_path / "out"
    code, said = run_cli(
        capsys,
        *[
            "run",
            str(data),
            "--model",
            str(pipeline_model),
            "--output",
            str(out),
            "--header",
            "--delimiter",
            ";",
            "--encoding",
            "latin-1",
            "--content-type",
            "text/csv",
            "--accept",
            "text/csv",
            "--split-type",
            "Line",
            "--assemble-with",
            "Line",
            "--quiet",
        ],
    )
    assert code == 0, said
    assert predictions(out / "export.csv.out") == expected(pipeline_model, frame)


def test_latin1_without_its_charset_names_the_record(
    tmp_path: Path, pipeline_model: Path, frame: pd.DataFrame
) -> None:
    data = tmp_path / "export.csv"
    data.write_bytes(frame[FEATURES].to_csv(index=False).encode("latin-1"))
    result = run_job(job([data], tmp_path / "out", pipeline_model, header=True))
    error = result.failures[0].error or ""
    assert "is not UTF-8 text (another encoding: give its charset)" in error
    assert "record" in error


def shuffled_objects(frame: pd.DataFrame, seed: int = 1) -> bytes:
    """One JSON object per line under "features", its keys in a random order per record."""
    rng = np.random.default_rng(seed)
    lines = []
    for row in frame[FEATURES].to_dict("records"):
        keys = list(row)
        rng.shuffle(keys)
        features = {key: row[key] for key in keys}
        lines.append(json.dumps({"id": len(lines), "features": features}, default=int))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def served_pipeline(pipeline_model: Path) -> Iterator[str]:
    with start_server(pipeline_model, workers=1) as server:
        server.wait_healthy(120.0)
        yield server.url


@pytest.mark.parametrize("engine", ["transform", "processing", "endpoint"])
def test_json_objects_reach_the_model_by_key_whatever_their_order(
    tmp_path: Path,
    pipeline_model: Path,
    served_pipeline: str,
    frame: pd.DataFrame,
    engine: str,
) -> None:
    """`$.features` sends each object whole (R16); the server maps its keys to the
    model's features by name, so a shuffled key order changes nothing."""
    data = tmp_path / "customers.jsonl"
    data.write_bytes(shuffled_objects(frame))
    endpoint = engine == "endpoint"
    result = run_job(
        job(
            [data],
            tmp_path / "out",
            None if endpoint else pipeline_model,
            engine=engine,
            endpoint_url=served_pipeline if endpoint else None,
            settings={**JSONL, "input_filter": "$.features"},
        )
    )
    assert result.succeeded, result.failures
    assert predictions(tmp_path / "out" / "customers.jsonl.out") == expected(pipeline_model, frame)


def test_spreading_objects_whose_key_order_differs_is_refused(
    tmp_path: Path, pipeline_model: Path, frame: pd.DataFrame
) -> None:
    """`$.features.*` passes an object's values in its key order (R16); with another order in
    a later record the values would change places silently: the file fails naming it."""
    data = tmp_path / "customers.jsonl"
    data.write_bytes(shuffled_objects(frame))
    result = run_job(
        job(
            [data],
            tmp_path / "out",
            pipeline_model,
            settings={**JSONL, "input_filter": "$.features.*"},
        )
    )
    error = result.failures[0].error or ""
    assert "whose keys are in another order than in the first record" in error
    assert "filter with $.features instead" in error
    assert not (tmp_path / "out" / "customers.jsonl.out").exists()


def test_headerless_csv_through_the_endpoint_engine(
    tmp_path: Path, pipeline_model: Path, served_pipeline: str, frame: pd.DataFrame
) -> None:
    """An endpoint serves its own model: headerless records in its feature order are named
    by position there."""
    data = tmp_path / "customers.csv"
    frame[FEATURES].to_csv(data, index=False, header=False)
    result = run_job(
        job([data], tmp_path / "out", None, engine="endpoint", endpoint_url=served_pipeline)
    )
    assert result.succeeded, result.failures
    assert predictions(tmp_path / "out" / "customers.csv.out") == expected(pipeline_model, frame)


def test_a_header_reaches_an_endpoints_server_in_each_requests_custom_attributes(
    tmp_path: Path, pipeline_model: Path, served_pipeline: str, frame: pd.DataFrame
) -> None:
    """An endpoint serves its own model in its own environment: the names (and delimiter)
    go with each request, in the CustomAttributes InvokeEndpoint passes to the container."""
    data = tmp_path / "customers.csv"
    frame[["plan", "city", "income", "age"]].to_csv(data, index=False, sep=";")
    result = run_job(
        job(
            [data],
            tmp_path / "out",
            None,
            engine="endpoint",
            endpoint_url=served_pipeline,
            header=True,
            settings={**CSV, "environment": {"BATCHINFER_CSV_DELIMITER": ";"}},
        )
    )
    assert result.succeeded, result.failures
    assert predictions(tmp_path / "out" / "customers.csv.out") == expected(pipeline_model, frame)


def test_names_too_long_for_custom_attributes_are_refused_before_any_request(
    tmp_path: Path, served_pipeline: str
) -> None:
    data = tmp_path / "wide.csv"
    names = [f"feature_number_{i}" for i in range(80)]
    data.write_text(",".join(names) + "\n" + ",".join("1" * 80) + "\n")
    with pytest.raises(ValidationError, match="CustomAttributes, which hold at most 1024"):
        run_job(
            job(
                [data],
                tmp_path / "out",
                None,
                engine="endpoint",
                endpoint_url=served_pipeline,
                header=True,
            )
        )
