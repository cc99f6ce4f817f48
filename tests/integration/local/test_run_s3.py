"""`batchinfer run` over s3:// against a real S3 endpoint (moto's server): inputs listed as the
pipeline lists them (R4: a key prefix or a ManifestFile selects the input objects) and read per
shard as instances take them (R3: each input object, or shard, goes whole to one instance),
outputs named after them (R12: each input object gives one output named after it), the model
from S3 (C2: the model artifact is extracted into /opt/ml/model), and every AWS failure one line
with its exit code."""

import gzip
import json
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import boto3
import joblib
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.linear_model import LinearRegression

import batchinfer
from batchinfer.engine.outcomes import Progress
from batchinfer.engine.previous_run import WORKDIR_PREFIX
from batchinfer.sharding import plan_shards
from batchinfer.sharding.planner import FIRST_WINDOW
from tests.support.cli import run_cli
from tests.support.stopping import output_once_stopped

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]
CSV += ["--assemble-with", "Line"]
# --shards auto cuts an input of 8 MiB or more, into one shard per instance at this size.
SHARDED = ["--shards", "auto", "--merge", "--header", "--instance-count", "2"]
COUNTS = ("status", "outputs", "records_in", "records_out", "bytes_in", "bytes_out", "shards")


def _rows(count: int, start: int = 0) -> bytes:
    return b"".join(b"%d,%d,%d,%d\n" % (n, n % 7, n % 11, n * 3) for n in range(start, count))


def _sums(count: int) -> bytes:
    """What the row-sum model answers for ``_rows(count)``."""
    return b"".join(b"%d\n" % (n + n % 7 + n % 11 + n * 3) for n in range(count))


@pytest.fixture
def data(s3, tmp_path: Path) -> Path:
    """The same inputs in a local folder and under s3://inputs/data/: a header CSV of 8.3 MiB
    (two shards with --shards auto and two instances), a small one in a sub-folder, and a
    _SUCCESS marker that is no input."""
    folder = tmp_path / "data"
    (folder / "day2").mkdir(parents=True)
    (folder / "big.csv").write_bytes(b"a,b,c,d\n" + _rows(480_000))
    (folder / "day2" / "small.csv").write_bytes(b"a,b,c,d\n" + _rows(50))
    (folder / "_SUCCESS").write_bytes(b"")
    _upload(s3, folder, "inputs", "data/")
    return folder


@pytest.fixture
def s3_model(s3, tmp_path: Path, row_sum_model: Path) -> str:
    """The row-sum model as s3://models/row-sum/model.tar.gz."""
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(row_sum_model.rglob("*")):
            tar.add(path, arcname=path.relative_to(row_sum_model).as_posix(), recursive=False)
    s3.create_bucket(Bucket="models")
    s3.upload_file(str(archive), "models", "row-sum/model.tar.gz")
    return "s3://models/row-sum/model.tar.gz"


@pytest.fixture
def sent(s3) -> list[tuple[str, str, tuple[int, int] | None]]:
    """The S3 requests of every client made from now on (the job's, not ``s3``'s), as
    (operation, bucket/key, the [start, end) bytes a ranged GET asks for, else None)."""
    requests = []

    def record(request, event_name: str, **_) -> None:
        asked = request.headers.get("Range")  # signed headers are bytes
        first, last = asked.decode().removeprefix("bytes=").split("-") if asked else ("", "")
        requests.append(
            (
                event_name.rsplit(".", 1)[-1],
                unquote(urlsplit(request.url).path).lstrip("/"),
                (int(first), int(last) + 1) if asked else None,
            )
        )

    boto3.setup_default_session()
    boto3.DEFAULT_SESSION.events.register("before-send.s3", record)
    return requests


def _upload(s3, folder: Path, bucket: str, prefix: str) -> None:
    s3.create_bucket(Bucket=bucket)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        s3.upload_file(str(path), bucket, prefix + path.relative_to(folder).as_posix())


def _outputs(folder: Path) -> dict[str, bytes]:
    """Every output below ``folder`` (the .out files and the markers), by name."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "_manifest.json"
    }


def _objects(s3, bucket: str, prefix: str, *, manifest: bool = False) -> dict[str, bytes]:
    """Every object below ``prefix`` (but the manifest unless ``manifest``), by name
    relative to it."""
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {
        obj["Key"][len(prefix) :]: s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
        for obj in listed
        if manifest or obj["Key"] != prefix + "_manifest.json"
    }


def _s3_counts(s3, bucket: str, prefix: str) -> dict[str, dict[str, object]]:
    body = s3.get_object(Bucket=bucket, Key=prefix + "_manifest.json")["Body"].read()
    return {f["name"]: {key: f[key] for key in COUNTS} for f in json.loads(body)["files"]}


def _counts(folder: Path) -> dict[str, dict[str, object]]:
    manifest = json.loads((folder / "_manifest.json").read_text())
    return {f["name"]: {key: f[key] for key in COUNTS} for f in manifest["files"]}


def _run_here_and_on_s3(
    capsys, s3, folder: Path, prefix: str, model: Path, options: list[str]
) -> dict[str, dict[str, object]]:
    """Run ``folder``'s one file into ``local-out`` beside it, and its upload under
    ``prefix`` of bucket inputs into the same prefix of bucket outputs: the same bytes and
    counts; the counts."""
    _upload(s3, folder, "inputs", prefix)
    s3.create_bucket(Bucket="outputs")
    (name,) = [p.name for p in folder.iterdir()]
    here = folder.parent / "local-out"
    stem = name.split(".")[0]
    runs = ((str(folder), str(here)), (f"s3://inputs/{prefix}{stem}", f"s3://outputs/{prefix}"))
    for source, out in runs:
        code, said = run_cli(
            capsys, "run", source, "--model", str(model), "--output", out, *options
        )
        assert code == 0, said
    assert _objects(s3, "outputs", prefix) == _outputs(here)
    counts = _s3_counts(s3, "outputs", prefix)
    assert counts == _counts(here)
    return counts


def test_an_s3_prefix_and_model_into_an_s3_prefix_as_local_folders_r4_r12_c2(
    capsys, s3, data, s3_model, row_sum_model, tmp_path
):
    here = tmp_path / "local-out"
    code, said = run_cli(
        capsys, "run", str(data), "--model", str(row_sum_model), "--output", str(here),
        *CSV, *SHARDED,
    )  # fmt: skip
    assert code == 0, said
    s3.create_bucket(Bucket="outputs")
    code, said = run_cli(
        capsys, "run", "s3://inputs/data/", "--model", s3_model,
        "--output", "s3://outputs/run1/", *CSV, *SHARDED,
    )  # fmt: skip
    assert code == 0, said
    there = _objects(s3, "outputs", "run1/")
    assert set(there) == {"_SUCCESS", "big.csv.out", "day2/small.csv.out"}
    assert there == _outputs(here)
    counts = _s3_counts(s3, "outputs", "run1/")
    assert counts == _counts(here) and counts["big.csv"]["shards"] == 2
    manifest = json.loads(s3.get_object(Bucket="outputs", Key="run1/_manifest.json")["Body"].read())
    assert manifest["output_dir"] == "s3://outputs/run1/"
    assert [f["input"] for f in manifest["files"]] == [
        "s3://inputs/data/big.csv",
        "s3://inputs/data/day2/small.csv",
    ]
    assert s3.list_multipart_uploads(Bucket="outputs").get("Uploads", []) == []


def test_s3_inputs_into_a_local_folder_r12(capsys, data, row_sum_model, tmp_path):
    here, there = tmp_path / "local-out", tmp_path / "s3-in"
    for source, out in ((str(data), here), ("s3://inputs/data/", there)):
        code, said = run_cli(
            capsys, "run", source, "--model", str(row_sum_model), "--output", str(out), *CSV,
            "--header",
        )  # fmt: skip
        assert code == 0, said
    assert _outputs(there) == _outputs(here) and _counts(there) == _counts(here)
    assert [p.name for p in there.iterdir() if p.name.startswith(".")] == []  # fetched units gone


def test_a_gzip_object_runs_as_the_local_gzip_file_r11(capsys, s3, row_sum_model, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "rows.csv.gz").write_bytes(gzip.compress(b"a,b,c,d\n" + _rows(30_000)))
    options = [*CSV, "--compression-type", "Gzip", "--shards", "3", "--merge", "--header"]
    counts = _run_here_and_on_s3(capsys, s3, folder, "gz/", row_sum_model, options)
    assert counts["rows.csv.gz"]["shards"] == 3


def test_s3_inputs_are_selected_as_local_ones_and_by_an_s3_manifest_r4(
    capsys, s3, row_sum_model, tmp_path
):
    s3.create_bucket(Bucket="inputs")
    for key in ("p/a.csv", "p/b.json", "p/.hidden.csv", "p/_tmp/c.csv", "p/_named.csv"):
        s3.put_object(Bucket="inputs", Key=key, Body=b"1,2\n")
    runs = {
        "prefix": ["s3://inputs/p/"],
        "included": ["s3://inputs/p/", "--include", "*.json"],
        "named": ["s3://inputs/p/_named"],
    }
    manifest = tmp_path / "inputs.manifest"
    manifest.write_text(json.dumps([{"prefix": "s3://inputs/p"}, "_tmp/c.csv", "a.csv"]))
    runs["manifest"] = [str(manifest)]
    names = {}
    for run, args in runs.items():
        out = tmp_path / run
        code, said = run_cli(
            capsys, "run", *args, "--model", str(row_sum_model), "--output", str(out), *CSV
        )
        assert code == 0, said
        names[run] = sorted(_counts(out))
    assert names == {
        "prefix": ["a.csv", "b.json"],
        "included": ["b.json"],
        "named": ["_named.csv"],
        "manifest": ["_tmp/c.csv", "a.csv"],
    }
    assert (tmp_path / "manifest" / "_tmp" / "c.csv.out").read_bytes() == b"3\n"


def test_a_failed_input_leaves_no_object_and_no_success_marker_r19(
    capsys, s3, row_sum_model, tmp_path
):
    s3.create_bucket(Bucket="inputs")
    s3.create_bucket(Bucket="outputs")
    s3.put_object(Bucket="inputs", Key="p/good.csv", Body=b"1,2\n3,4\n")
    s3.put_object(Bucket="inputs", Key="p/bad.csv", Body=b"1,2\nbad\n")
    code, said = run_cli(
        capsys, "run", "s3://inputs/p/", "--model", str(row_sum_model),
        "--output", "s3://outputs/r19/", "--quiet", *CSV,
    )  # fmt: skip
    assert code == 1 and "FAILED bad.csv" in said
    assert _objects(s3, "outputs", "r19/") == {"good.csv.out": b"3\n7\n"}
    assert _s3_counts(s3, "outputs", "r19/")["bad.csv"]["status"] == "FAILED"


def test_an_interrupted_run_leaves_only_whole_objects_it_lists_and_resumes_r19(
    s3, row_sum_model, tmp_path
):
    """Until Ctrl-C, and after it: every object under the output prefix is whole and listed
    by _manifest.json; the interrupted input has none, and there is no _SUCCESS. --resume
    then scores only the interrupted input and ends as a run that never stopped."""
    s3.create_bucket(Bucket="inputs")
    s3.create_bucket(Bucket="outputs")
    s3.put_object(Bucket="inputs", Key="p/slow.csv", Body=b"slow,1\n" * 200)
    s3.put_object(Bucket="inputs", Key="p/fast.csv", Body=b"1,2\n" * 10)
    flag = tmp_path / "slow-while"  # slow.csv is slow while it exists
    flag.touch()
    command = [
        sys.executable, "-m", "batchinfer", "run", "s3://inputs/p/", "--model",
        str(row_sum_model), "--output", "s3://outputs/stopped/", "--instance-count", "2",
        "--batch-strategy", "SingleRecord", "--env", f"SLOW_WHILE={flag}", *CSV,
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while "_manifest.json" not in _objects(s3, "outputs", "stopped/", manifest=True):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    assert set(_objects(s3, "outputs", "stopped/")) == {"fast.csv.out"}
    proc.send_signal(signal.SIGINT)
    stderr = output_once_stopped(proc)
    assert proc.returncode == 130, stderr
    assert "s3://outputs/stopped/_manifest.json records" in " ".join(stderr.split())
    manifest = json.loads(
        s3.get_object(Bucket="outputs", Key="stopped/_manifest.json")["Body"].read()
    )
    assert manifest["status"] == "INTERRUPTED"
    listed = {name for entry in manifest["files"] for name in entry["outputs"]}
    assert _objects(s3, "outputs", "stopped/") == {
        "fast.csv.out": b"3\n3\n3\n3\n3\n3\n3\n3\n3\n3\n"
    }
    assert listed == {"fast.csv.out"}
    assert s3.list_multipart_uploads(Bucket="outputs").get("Uploads", []) == []

    kept = s3.head_object(Bucket="outputs", Key="stopped/fast.csv.out")["LastModified"]
    flag.unlink()
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads(
        s3.get_object(Bucket="outputs", Key="stopped/_manifest.json")["Body"].read()
    )
    assert (manifest["status"], manifest["kept_inputs"]) == ("SUCCEEDED", 1)
    assert [(f["name"], f["records_in"]) for f in manifest["files"]] == [
        ("fast.csv", 10),
        ("slow.csv", 200),
    ]
    outputs = _objects(s3, "outputs", "stopped/")
    assert outputs["slow.csv.out"] == b"1\n" * 200
    assert s3.head_object(Bucket="outputs", Key="stopped/fast.csv.out")["LastModified"] == kept
    assert "_SUCCESS" in _objects(s3, "outputs", "stopped/", manifest=True)


def test_each_shard_of_an_object_is_fetched_by_its_own_ranges_when_taken_r3(
    s3, sent, row_sum_model, tmp_path
):
    """A plain object is planned where it is and each shard fetched by ranged GETs of its own
    bytes only as an instance takes it: besides those, only small ranged reads (its first
    bytes, a window after each cut), and at no time more shard files on disk than the two
    instances' and the two fetched ahead of them."""
    body = _rows(40_000)
    s3.create_bucket(Bucket="inputs")
    s3.put_object(Bucket="inputs", Key="p/rows.csv", Body=body)
    out = tmp_path / "out"
    on_disk = []

    class Sampler(Progress):
        def file_started(self, instance: int, file: object) -> None:
            staged = out.glob(f"{WORKDIR_PREFIX}*/inputs/**/*")
            on_disk.append(sum(path.is_file() for path in staged))

    result = batchinfer.run(
        "s3://inputs/p/", output=out, model=row_sum_model, shards=8, merge=True,
        instance_count=2, content_type="text/csv", split_type="Line", assemble_with="Line",
        progress=Sampler(),
    )  # fmt: skip
    assert result.succeeded and result.files[0].shards == 8
    assert (out / "rows.csv.out").read_bytes() == _sums(40_000)
    assert len(on_disk) == 8 and max(on_disk) <= 2 + 2
    gets = [asked for operation, _key, asked in sent if operation == "GetObject"]
    assert {key for operation, key, _ in sent if operation == "GetObject"} == {"inputs/p/rows.csv"}
    assert None not in gets  # no GET of the whole object
    shards = plan_shards(len(body), lambda start, end: body[start:end], shards=8).ranges
    assert sorted(g for g in gets if g[1] - g[0] > FIRST_WINDOW) == shards
    small = [g for g in gets if g[1] - g[0] <= FIRST_WINDOW]
    assert len(small) <= 1 + 7  # the gzip check's first bytes, a window after each cut
    assert sum(end - start for start, end in gets) <= len(body) + len(small) * FIRST_WINDOW


def test_fetched_units_reach_processing_instances_and_a_gzip_object_streams_whole_r3_r11(
    s3, sent, row_sum_model, tmp_path
):
    """The processing engine gets each shard of a plain object as a whole file of its own; an
    unsplit gzip object is fetched whole when taken and decompressed as it is read."""
    s3.create_bucket(Bucket="inputs")
    s3.put_object(Bucket="inputs", Key="p/rows.csv", Body=_rows(30_000))
    s3.put_object(Bucket="inputs", Key="gz/rows.csv.gz", Body=gzip.compress(_rows(20_000)))
    csv = {"content_type": "text/csv", "split_type": "Line", "assemble_with": "Line"}
    result = batchinfer.run(
        "s3://inputs/p/", output=tmp_path / "processing", model=row_sum_model,
        engine="processing", shards=3, merge=True, instance_count=2, **csv,
    )  # fmt: skip
    assert result.succeeded and result.files[0].shards == 3
    assert (tmp_path / "processing" / "rows.csv.out").read_bytes() == _sums(30_000)
    sent.clear()
    result = batchinfer.run(
        "s3://inputs/gz/", output=tmp_path / "gzip", model=row_sum_model,
        compression_type="Gzip", **csv,
    )  # fmt: skip
    assert result.succeeded
    assert (tmp_path / "gzip" / "rows.csv.gz.out").read_bytes() == _sums(20_000)
    size = s3.head_object(Bucket="inputs", Key="gz/rows.csv.gz")["ContentLength"]
    assert [asked for operation, _, asked in sent if operation == "GetObject"] == [(0, size)]


def test_an_s3_prefix_that_holds_objects_is_refused_or_resumed_by_etag(
    capsys, s3, sent, row_sum_model
):
    s3.create_bucket(Bucket="inputs")
    s3.create_bucket(Bucket="outputs")
    s3.put_object(Bucket="inputs", Key="p/a.csv", Body=b"1,2\n")
    s3.put_object(Bucket="inputs", Key="p/b.csv", Body=b"3,4\n")
    run = ["run", "s3://inputs/p/", "--model", str(row_sum_model), "--output", "s3://outputs/o/"]
    code, said = run_cli(capsys, *run, "--quiet", *CSV)
    assert code == 0, said
    code, said = run_cli(capsys, *run, "--quiet", *CSV)
    assert code == 2 and "--output s3://outputs/o/ already holds 4 files" in said, said
    s3.put_object(Bucket="inputs", Key="p/b.csv", Body=b"5,6\n")  # a new ETag
    sent.clear()
    code, said = run_cli(capsys, *run, "--resume", "--quiet", *CSV)
    assert code == 0, said
    assert "inputs/p/a.csv" not in {key for _operation, key, _ in sent}  # kept: nothing read
    assert ("GetObject", "inputs/p/b.csv", (0, 4)) in sent
    manifest = json.loads(s3.get_object(Bucket="outputs", Key="o/_manifest.json")["Body"].read())
    assert manifest["kept_inputs"] == 1  # a.csv, unchanged; b.csv ran again
    assert _objects(s3, "outputs", "o/") == {
        "a.csv.out": b"3\n",
        "b.csv.out": b"11\n",
        "_SUCCESS": b"",
    }


def test_the_python_api_runs_s3_to_s3_as_the_command_does(s3, row_sum_model):
    s3.create_bucket(Bucket="inputs")
    s3.create_bucket(Bucket="outputs")
    s3.put_object(Bucket="inputs", Key="p/a.csv", Body=b"1,2\n3,4\n")
    result = batchinfer.run(
        "s3://inputs/p/",
        output="s3://outputs/api/",
        model=row_sum_model,
        content_type="text/csv",
        split_type="Line",
        assemble_with="Line",
    )
    assert result.succeeded and result.output_dir == "s3://outputs/api/"
    assert _objects(s3, "outputs", "api/") == {"a.csv.out": b"3\n7\n", "_SUCCESS": b""}


def _one_error_line(said: str) -> str:
    assert "Traceback" not in said
    lines = said.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), said
    return lines[0]


def test_missing_buckets_keys_and_models_are_one_line_naming_the_uri(
    capsys, s3, row_sum_model, tmp_path
):
    s3.create_bucket(Bucket="inputs")
    s3.put_object(Bucket="inputs", Key="p/a.csv", Body=b"1,2\n")
    manifest = tmp_path / "inputs.manifest"
    manifest.write_text(json.dumps([{"prefix": "s3://inputs/p/"}, "a.csv", "gone.csv"]))
    model, gone = str(row_sum_model), "s3://inputs/models/gone.tar.gz"
    out = str(tmp_path / "out")
    cases = [
        (["s3://no-such-bucket/p/", "--model", model], 9, "s3://no-such-bucket/p/: AWS "),
        (["s3://inputs/nothing/", "--model", model], 3, "no objects under s3://inputs/nothing/"),
        ([str(manifest), "--model", model], 3, "no object s3://inputs/p/gone.csv"),
        (["s3://inputs/p/", "--model", gone], 3, f"{gone}: object not found"),
        (["s3://inputs/p/", str(tmp_path), "--model", model], 2, "not both"),
    ]
    cases = [([*args, "--output", out], code, named) for args, code, named in cases]
    missing_output = "s3://no-such-bucket/out/"
    cases.append(
        (["s3://inputs/p/", "--model", model, "--output", missing_output], 9, missing_output)
    )
    for args, exit_code, named in cases:
        code, said = run_cli(capsys, "run", *args, "--quiet", *CSV)
        assert (code, named) == (exit_code, named) and named in _one_error_line(said), said
        assert not (tmp_path / "out" / "_manifest.json").exists()


def test_without_credentials_an_s3_run_says_how_to_configure_them_exit_5(
    capsys, s3, monkeypatch, row_sum_model, tmp_path
):
    s3.create_bucket(Bucket="inputs")
    s3.put_object(Bucket="inputs", Key="p/a.csv", Body=b"1,2\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # a new process's, without credentials
    out = tmp_path / "out"
    code, said = run_cli(
        capsys, "run", "s3://inputs/p/", "--model", str(row_sum_model), "--output", str(out),
        "--quiet", *CSV,
    )  # fmt: skip
    assert code == 5
    assert "AWS credentials: Unable to locate credentials" in _one_error_line(said)
    assert not out.exists()


def test_plan_measures_an_s3_model_as_the_same_local_one(capsys, s3, s3_model, row_sum_model):
    """plan --model s3://…/model.tar.gz calibrates on a copy of it, as on the local model."""
    folder = Path(row_sum_model).parent / "plan-input"
    folder.mkdir(exist_ok=True)
    (folder / "d.csv").write_bytes(_rows(500))
    measured = {}
    for model in (s3_model, str(row_sum_model)):
        code, said = run_cli(
            capsys, "plan", str(folder), "--model", model, "--sample-records", "200",
            "--json", *CSV,
        )  # fmt: skip
        assert code == 0, said
        plan = json.loads(said[said.index("{") :])
        measured[model] = plan["calibration"]["records"]
    assert measured[s3_model] == measured[str(row_sum_model)] == 200


def test_a_parquet_object_splits_into_row_groups_and_merges_as_the_local_file_r3(
    capsys, s3, tmp_path
):
    """The object is fetched whole, cut into standalone files of whole row groups, and the
    shards' Parquet answers are joined into one object: the local file's bytes."""
    rows = np.random.default_rng(3).random((6_000, 3))
    model = tmp_path / "model"
    model.mkdir()
    fitted = LinearRegression().fit(rows, rows.sum(axis=1))
    joblib.dump(fitted, model / "model.joblib")
    folder = tmp_path / "data"
    folder.mkdir()
    table = pa.table({name: rows[:, k] for k, name in enumerate("abc")})
    pq.write_table(table, folder / "rows.parquet", row_group_size=1_000)
    options = ["--content-type", "application/x-parquet", "--shards", "3", "--merge"]
    counts = _run_here_and_on_s3(capsys, s3, folder, "pq/", model, options)
    assert (counts["rows.parquet"]["shards"], counts["rows.parquet"]["records_out"]) == (3, 6_000)
    merged = pq.read_table(tmp_path / "local-out" / "rows.parquet.out").column("prediction")
    merged = merged.to_numpy()
    np.testing.assert_array_equal(merged, fitted.predict(rows))
