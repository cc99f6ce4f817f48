"""An S3 prefix as the place a local job publishes to, against a real S3 endpoint: objects
appear only whole (R19: a file with any failed record gets no output), named relative to the
prefix (R12: each input object gives one output named after it)."""

import threading
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from batchinfer.engine.s3_place import S3Place
from batchinfer.multipart import MIN_PART_SIZE


@pytest.fixture
def place(s3):
    s3.create_bucket(Bucket="out")
    s3.put_object(Bucket="out", Key="elsewhere.out", Body=b"not below the prefix")
    return S3Place(s3, "s3://out/job", part_size=MIN_PART_SIZE)


def test_names_read_text_and_size_see_only_what_is_below_the_prefix(s3, place):
    assert place.location == "s3://out/job/"
    assert place.names() == []
    assert place.read_text("_manifest.json") is None and place.size("a.csv.out") is None
    s3.put_object(Bucket="out", Key="job/day1/b.csv.out", Body=b"2\n")
    s3.put_object(Bucket="out", Key="job/a.csv.out", Body=b"1\n")
    s3.put_object(Bucket="out", Key="job/folder/", Body=b"")  # a console's folder marker
    place.put_text("_manifest.json", '{"status": "SUCCEEDED"}\n')
    assert place.names() == ["_manifest.json", "a.csv.out", "day1/b.csv.out"]
    assert place.read_text("_manifest.json") == '{"status": "SUCCEEDED"}\n'
    assert place.size("day1/b.csv.out") == 2
    head = s3.head_object(Bucket="out", Key="job/_manifest.json")
    assert head["ContentType"] == "application/json"


def test_a_large_file_goes_up_in_parts_and_replaces_the_object(s3, place, tmp_path):
    big = tmp_path / "big.out"
    big.write_bytes(b"0123456789\n" * (MIN_PART_SIZE // 11 * 2 + 7))  # three parts
    s3.put_object(Bucket="out", Key="job/big.csv.out", Body=b"an earlier run\n")
    place.put_file(big, "big.csv.out")
    head = s3.head_object(Bucket="out", Key="job/big.csv.out")
    assert head["ETag"].strip('"').endswith("-3")  # a multipart upload of three parts
    body = s3.get_object(Bucket="out", Key="job/big.csv.out")["Body"].read()
    assert body == big.read_bytes()
    assert place.size("big.csv.out") == big.stat().st_size


def test_an_upload_that_fails_midway_leaves_no_object_and_no_upload(s3, place, tmp_path):
    big = tmp_path / "big.out"
    big.write_bytes(b"x" * (MIN_PART_SIZE * 3))
    calls = 0
    lock = threading.Lock()

    def fail_the_third_part(params, **_):  # S3 refuses one part, the others go up
        nonlocal calls
        with lock:
            calls += 1
            if calls == 3:
                raise ClientError(
                    {"Error": {"Code": "InternalError", "Message": "part refused"}}, "UploadPart"
                )

    s3.meta.events.register("before-call.s3.UploadPart", fail_the_third_part)
    with pytest.raises(ClientError) as failed:
        place.put_file(big, "big.csv.out")
    assert failed.value.__notes__ == ["s3://out/job/big.csv.out"]
    assert place.names() == []
    assert s3.list_multipart_uploads(Bucket="out").get("Uploads", []) == []


def test_remove_deletes_the_named_objects_only(s3, place, tmp_path):
    for name in ("a.out", "b.out", "c.out"):
        place.put_text(name, name)
    place.remove(["a.out", "c.out", "never-written.out"])
    assert place.names() == ["b.out"]
    place.remove([])
    assert place.names() == ["b.out"]


def test_a_missing_file_to_upload_and_a_missing_bucket_name_the_uri(s3, tmp_path):
    missing_bucket = S3Place(s3, "s3://no-such-bucket/out/")
    with pytest.raises(ClientError) as failed:
        missing_bucket.names()
    assert failed.value.response["Error"]["Code"] == "NoSuchBucket"
    assert failed.value.__notes__ == ["s3://no-such-bucket/out/"]
    with pytest.raises(ClientError) as failed:
        missing_bucket.put_file(_file(tmp_path), "a.out")
    assert failed.value.__notes__ == ["s3://no-such-bucket/out/a.out"]


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "a.out"
    path.write_bytes(b"1\n")
    return path
