"""A record the model refuses (R19, E9): batchinfer fails that file alone and writes no
output for it; the SDK writes the refusal into the output, so only the other files are
compared."""

import pytest

from tests.conformance.oracle.departures import FAILED_RECORDS
from tests.conformance.oracle.outputs import output_tree, write_tree
from tests.conformance.oracle.sdk_local import sdk_transform

pytestmark = pytest.mark.oracle

FILES = {"bad.csv": b"1,2\nbad,1\n3,4\n", "good.csv": b"1,2\n3,4\n"}


@pytest.mark.parametrize("batch_strategy", ["SingleRecord", "MultiRecord"])
def test_a_refused_record_fails_its_file_the_others_match_the_sdk_r19(
    tmp_path, row_sum_model, batchinfer_run, batch_strategy
):
    data = write_tree(tmp_path / "in", FILES)
    settings = dict(
        content_type="text/csv",
        accept="text/csv",
        split_type="Line",
        batch_strategy=batch_strategy,
        assemble_with="Line",
    )
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **settings)
    sdk = sdk_transform(
        row_sum_model,
        f"file://{data}",
        f"file://{tmp_path / 'sdk'}",
        **settings,
    )

    assert ours.exit_code == 1
    failed = {f["name"]: f for f in ours.manifest["files"]}["bad.csv"]
    assert failed["status"] == "FAILED" and failed["outputs"] == []
    assert "bad.csv" in ours.said and "400" in ours.said
    refusals = [e for e in sdk.exchanges if e.status == 400]
    assert [e.request for e in refusals] == (
        [b"bad,1\n"] if batch_strategy == "SingleRecord" else [FILES["bad.csv"]]
    )
    assert b"row holds 'bad'" in refusals[0].response

    sdk_tree = output_tree(tmp_path / "sdk")
    assert output_tree(tmp_path / "ours") == {"good.csv.out": sdk_tree["good.csv.out"]}
    assert sdk_tree["good.csv.out"] == b"3\n7\n"
    assert sdk.description["TransformJobStatus"] == "Completed", str(FAILED_RECORDS)
    written = (
        b"3\n" + refusals[0].response + b"\n7\n"
        if batch_strategy == "SingleRecord"
        else refusals[0].response + b"\n"
    )
    assert sdk_tree["bad.csv.out"] == written, str(FAILED_RECORDS)
