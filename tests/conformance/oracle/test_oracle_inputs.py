"""Which objects a job reads and what it names their outputs: gzip input (R11) and nested
prefixes (R4, R12), on file:// and on S3 (moto), against the SDK's local mode."""

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.conformance.oracle.departures import GZIP, NESTED_FILES, S3_OUTPUT_PREFIX
from tests.conformance.oracle.outputs import output_tree, write_tree
from tests.conformance.oracle.sdk_local import sdk_transform
from tests.support.aws import REGION

pytestmark = pytest.mark.oracle

CSV_JOB = dict(
    content_type="text/csv",
    accept="text/csv",
    split_type="Line",
    batch_strategy="MultiRecord",
    assemble_with="Line",
)
PLAIN = {"d.csv.gz": b"1,2\n3,4\n5,6\n", "e.csv.gz": b"10,1\n"}
# Objects at the top of the input and in sub-folders (E5).
NESTED = {"a.csv": b"1,2\n", "sub/c.csv": b"5,6\n7,8\n", "sub/deeper/e.csv": b"1,1,1\n"}
BUCKET = "oracle-data"


def test_gzip_input_is_decompressed_and_named_x_gz_out_r11(tmp_path, row_sum_model, batchinfer_run):
    """GZIP: the SDK sends the compressed bytes (and fails to read them as text); given the
    decompressed bytes under the same names it must write what batchinfer writes for the
    gzip objects: plain outputs named <name>.out."""
    packed = write_tree(tmp_path / "in", {n: gzip.compress(b) for n, b in PLAIN.items()})
    settings = dict(CSV_JOB, compression_type="Gzip")
    ours = batchinfer_run(row_sum_model, packed, tmp_path / "ours", **settings)
    with pytest.raises(UnicodeDecodeError):
        sdk_transform(row_sum_model, f"file://{packed}", f"file://{tmp_path / 'x'}", **settings)
    unpacked = write_tree(tmp_path / "unpacked", PLAIN)
    sdk_transform(row_sum_model, f"file://{unpacked}", f"file://{tmp_path / 'sdk'}", **settings)

    assert not (tmp_path / "x").exists(), str(GZIP)
    assert ours.exit_code == 0, ours.said
    assert ours.records_in() == {"d.csv.gz": 3, "e.csv.gz": 1}
    assert output_tree(tmp_path / "ours") == output_tree(tmp_path / "sdk")
    assert output_tree(tmp_path / "ours") == {
        "d.csv.gz.out": b"3\n7\n11\n",
        "e.csv.gz.out": b"11\n",
    }


def folders(files: dict[str, bytes]) -> list[str]:
    """The folders holding ``files``, "" for the top, sorted."""
    return sorted({str(Path(name).parent).removeprefix(".") for name in files})


def test_nested_folders_keep_their_sub_paths_r4_r12(tmp_path, row_sum_model, batchinfer_run):
    """NESTED_FILES: a file:// job of the SDK transforms only the top folder's files; one SDK
    job per folder, each writing to the same sub-folder, gives batchinfer's tree."""
    data = write_tree(tmp_path / "in", NESTED)
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **CSV_JOB)
    sdk_out = tmp_path / "sdk"
    for folder in folders(NESTED):
        sdk_transform(
            row_sum_model,
            f"file://{data / folder}",
            f"file://{sdk_out / folder}",
            **CSV_JOB,
        )
        if folder == "":
            assert output_tree(sdk_out) == {"a.csv.out": b"3\n"}, str(NESTED_FILES)

    assert ours.exit_code == 0, ours.said
    assert output_tree(tmp_path / "ours") == output_tree(sdk_out)
    assert output_tree(sdk_out) == {
        "a.csv.out": b"3\n",
        "sub/c.csv.out": b"11\n15\n",
        "sub/deeper/e.csv.out": b"3\n",
    }


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An S3 client on moto, with the bucket the SDK reads from and writes to."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        yield client


def s3_tree(s3: Any, prefix: str) -> dict[str, bytes]:
    """Every object below ``prefix`` by its key relative to it."""
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {
        item["Key"].removeprefix(prefix): s3.get_object(Bucket=BUCKET, Key=item["Key"])[
            "Body"
        ].read()
        for item in listed
    }


def test_nested_s3_prefix_outputs_match_once_read_below_the_job_name_r4_r12(
    tmp_path, s3, row_sum_model, batchinfer_run
):
    """S3_OUTPUT_PREFIX and NESTED_FILES on S3: the SDK writes under out/<job name>/ and
    skips the sub-prefixes' objects it downloaded; one job per sub-prefix, read below each
    job name, gives what batchinfer writes for the same objects."""
    for name, data in NESTED.items():
        s3.put_object(Bucket=BUCKET, Key=f"in/{name}", Body=data)
    ours = batchinfer_run(
        row_sum_model, write_tree(tmp_path / "in", NESTED), tmp_path / "ours", **CSV_JOB
    )
    sdk_outputs: dict[str, bytes] = {}
    for folder in folders(NESTED):
        prefix = f"in/{folder}/" if folder else "in/"
        name = sdk_transform(
            row_sum_model, f"s3://{BUCKET}/{prefix}", f"s3://{BUCKET}/out", **CSV_JOB
        ).job_name
        written = s3_tree(s3, f"out/{name}/")
        below_job = {f"{name}/{key}" for key in written}
        assert set(s3_tree(s3, "out/")) == below_job, str(S3_OUTPUT_PREFIX)
        if folder == "":
            assert written == {"a.csv.out": b"3\n"}, str(NESTED_FILES)
        sdk_outputs |= {f"{folder}/{key}".lstrip("/"): data for key, data in written.items()}
        for key in written:
            s3.delete_object(Bucket=BUCKET, Key=f"out/{name}/{key}")

    assert ours.exit_code == 0, ours.said
    assert output_tree(tmp_path / "ours") == sdk_outputs
    assert set(sdk_outputs) == {"a.csv.out", "sub/c.csv.out", "sub/deeper/e.csv.out"}
