"""`batchinfer run` against the worked examples and rules of the spec, with real servers.

Every test runs the local engine end to end: real gunicorn model servers on localhost
serving model M (tests/integration/local/conftest.py), real files, real gzip.
"""

import gzip
import json
from pathlib import Path

import pytest

from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.sharding.local_files import LocalSource
from batchinfer.transform.settings import TransformSettings


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


CSV_LINES = dict(content_type="text/csv", accept="text/csv", split_type="Line")


def run(inputs: list[Path], out: Path, model: Path, **kwargs):
    engine = kwargs.pop("engine", "transform")
    shards = kwargs.pop("shards", None)
    merge = kwargs.pop("merge", False)
    overwrite = kwargs.pop("overwrite", False)
    settings = TransformSettings(**kwargs)
    return run_job(
        LocalJob(
            inputs,
            out,
            model,
            settings,
            engine=engine,
            shards=shards,
            merge=merge,
            overwrite=overwrite,
        )
    )


def test_e1_csv_join_with_input_and_output_filters_r15_r16_r17(tmp_path, row_sum_model):
    data = write(tmp_path / "in" / "data.csv", b"id1,1,2\nid2,3,4\nid3,5,6\n")
    common = dict(
        CSV_LINES,
        assemble_with="Line",
        batch_strategy="MultiRecord",
        max_payload_mb=1,
        input_filter="$[1:]",
        join_source="Input",
    )
    result = run([data], tmp_path / "out", row_sum_model, output_filter="$[0,-1]", **common)
    assert result.succeeded
    assert (tmp_path / "out" / "data.csv.out").read_bytes() == b"id1,3\nid2,7\nid3,11\n"

    run([data], tmp_path / "out2", row_sum_model, **common)
    assert (tmp_path / "out2" / "data.csv.out").read_bytes() == (
        b"id1,1,2,3\nid2,3,4,7\nid3,5,6,11\n"
    )


def test_e2_json_lines_join_r18(tmp_path, row_sum_model):
    rec = write(tmp_path / "in" / "r.jsonl", b'{"id":"a","f":[1,2]}\n')
    arr = write(tmp_path / "in" / "arr.jsonl", b"[5,6]\n")
    common = dict(
        content_type="application/jsonlines",
        accept="application/jsonlines",
        split_type="Line",
        assemble_with="Line",
        batch_strategy="SingleRecord",
        join_source="Input",
    )
    run([rec], tmp_path / "o1", row_sum_model, input_filter="$.f", **common)
    assert json.loads((tmp_path / "o1" / "r.jsonl.out").read_bytes()) == {
        "id": "a",
        "f": [1, 2],
        "SageMakerOutput": {"score": 3},
    }
    run(
        [rec],
        tmp_path / "o2",
        row_sum_model,
        input_filter="$.f",
        output_filter="$['id','SageMakerOutput']",
        **common,
    )
    assert json.loads((tmp_path / "o2" / "r.jsonl.out").read_bytes()) == {
        "id": "a",
        "SageMakerOutput": {"score": 3},
    }
    run([arr], tmp_path / "o3", row_sum_model, **common)
    assert json.loads((tmp_path / "o3" / "arr.jsonl.out").read_bytes()) == {
        "SageMakerInput": [5, 6],
        "SageMakerOutput": {"score": 11},
    }


@pytest.mark.parametrize(("assemble", "expected"), [("None", b"3\n7"), ("Line", b"3\n7\n")])
def test_e3_split_none_sends_the_whole_file_r6_r13(tmp_path, row_sum_model, assemble, expected):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n3,4\n")
    settings = dict(content_type="text/csv", accept="text/csv", assemble_with=assemble)
    result = run([data], tmp_path / "out", row_sum_model, **settings)
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == expected
    assert result.files[0].records_in == 1  # SplitType None: one request, one record


@pytest.mark.parametrize(
    ("strategy", "assemble", "expected"),
    [
        ("SingleRecord", "None", b"3711"),
        ("SingleRecord", "Line", b"3\n7\n11\n"),
        ("MultiRecord", "None", b"3\n7\n11"),
        ("MultiRecord", "Line", b"3\n7\n11\n"),
    ],
)
def test_e4_batch_strategy_and_assembly_r7_r13(
    tmp_path, row_sum_model, strategy, assemble, expected
):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n3,4\n5,6\n")
    settings = dict(CSV_LINES, batch_strategy=strategy, assemble_with=assemble)
    assert run([data], tmp_path / "out", row_sum_model, **settings).succeeded
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == expected


def test_e5_one_output_per_input_never_merged_nested_names_kept_r5_r12(tmp_path, row_sum_model):
    write(tmp_path / "in" / "a.csv", b"1,2\n")
    write(tmp_path / "in" / "b.csv", b"3,4\n")
    write(tmp_path / "in" / "sub" / "c.csv", b"5,6\n")
    result = run([tmp_path / "in"], tmp_path / "out", row_sum_model, **CSV_LINES)
    assert result.succeeded
    outputs = sorted(
        p.relative_to(tmp_path / "out").as_posix()
        for p in (tmp_path / "out").rglob("*")
        if p.is_file()
    )
    assert outputs == ["_SUCCESS", "_manifest.json", "a.csv.out", "b.csv.out", "sub/c.csv.out"]
    assert (tmp_path / "out" / "sub" / "c.csv.out").read_bytes() == b"11"


def test_e6_gzip_input_is_decompressed_output_plain_r11(tmp_path, row_sum_model):
    data = write(tmp_path / "in" / "d.csv.gz", gzip.compress(b"1,2\n3,4\n"))
    settings = dict(CSV_LINES, batch_strategy="MultiRecord", assemble_with="Line")
    run([data], tmp_path / "out", row_sum_model, compression_type="Gzip", **settings)
    assert (tmp_path / "out" / "d.csv.gz.out").read_bytes() == b"3\n7\n"


def test_e8_oversize_record_fails_only_its_file_r8_r19(tmp_path, row_sum_model):
    big = write(tmp_path / "in" / "big.csv", b"1," * (1024 * 1024) + b"1\n")
    small = write(tmp_path / "in" / "small.csv", b"1,2\n")
    settings = dict(CSV_LINES, max_payload_mb=1, assemble_with="Line")
    result = run([big, small], tmp_path / "out", row_sum_model, **settings)
    assert not result.succeeded
    assert not (tmp_path / "out" / "big.csv.out").exists()
    assert (tmp_path / "out" / "small.csv.out").read_bytes() == b"3\n"
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    [failure] = result.failures
    assert failure.name == "big.csv" and "record 1" in failure.error
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert manifest["status"] == "FAILED" and "big.csv" in manifest["files"][0]["error"]


def test_e9_a_refused_record_fails_its_file_others_complete_r19(tmp_path, row_sum_model):
    bad = write(tmp_path / "in" / "bad.csv", b"1,2\nbad,1\n3,4\n")
    good = write(tmp_path / "in" / "good.csv", b"1,2\n3,4\n")
    settings = dict(CSV_LINES, batch_strategy="SingleRecord", assemble_with="Line")
    result = run([bad, good], tmp_path / "out", row_sum_model, **settings)
    assert not result.succeeded
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "_manifest.json",
        "good.csv.out",
    ]
    [failure] = result.failures
    assert failure.name == "bad.csv" and "record 2" in failure.error and "400" in failure.error


def test_e10_container_execution_parameters_fill_what_the_job_leaves_unset_r10_c5(
    tmp_path, row_sum_model
):
    """The server answers /execution-parameters with MaxConcurrentTransforms = its workers,
    MULTI_RECORD and SAGEMAKER_MAX_PAYLOAD_IN_MB from its environment (C5)."""
    data = write(tmp_path / "in" / "d.csv", b"1,2\n")
    env = {"SAGEMAKER_MAX_PAYLOAD_IN_MB": "2"}
    settings = TransformSettings(environment=env, **CSV_LINES)
    from_container = run_job(
        LocalJob([data], tmp_path / "a", row_sum_model, settings, workers_per_instance=3)
    )
    assert from_container.effective == {
        "batch_strategy": "MultiRecord",
        "max_payload_mb": 2,
        "max_concurrent_transforms": 3,
    }
    settings = TransformSettings(
        environment=env, max_payload_mb=1, batch_strategy="SingleRecord", **CSV_LINES
    )
    from_job = run_job(
        LocalJob([data], tmp_path / "b", row_sum_model, settings, workers_per_instance=3)
    )
    assert from_job.effective == {
        "batch_strategy": "SingleRecord",
        "max_payload_mb": 1,
        "max_concurrent_transforms": 3,
    }


def test_files_spread_over_instances_each_file_whole_r3(tmp_path, row_sum_model):
    for i in range(6):
        write(tmp_path / "in" / f"f{i}.csv", b"slow,1\n" + b"1,2\n" * 10)
    settings = dict(CSV_LINES, assemble_with="Line", instance_count=2)
    result = run([tmp_path / "in"], tmp_path / "out", row_sum_model, **settings)
    assert result.succeeded
    assert all(len(f.instances) == 1 for f in result.files)  # R3: one file, one instance
    assert {i for f in result.files for i in f.instances} == {1, 2}  # numbered from 1


def test_manifest_records_counts_and_success_marker(tmp_path, row_sum_model):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n3,4\n5,6\n")
    run([data], tmp_path / "out", row_sum_model, assemble_with="Line", **CSV_LINES)
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    [entry] = manifest["files"]
    assert (entry["records_in"], entry["records_out"], entry["status"]) == (3, 3, "SUCCEEDED")
    assert manifest["totals"]["records_in"] == 3
    assert manifest["settings"]["split_type"] == "Line"
    assert (tmp_path / "out" / "_SUCCESS").exists()


def test_a_stale_success_marker_is_removed_when_a_rerun_fails(tmp_path, row_sum_model):
    write(tmp_path / "out" / "_SUCCESS", b"")
    bad = write(tmp_path / "in" / "bad.csv", b"bad\n")
    assert not run([bad], tmp_path / "out", row_sum_model, overwrite=True, **CSV_LINES).succeeded
    assert not (tmp_path / "out" / "_SUCCESS").exists()


def test_processing_engine_writes_the_same_bytes_as_transform_p4(tmp_path, row_sum_model):
    for i in range(3):
        write(tmp_path / "in" / f"f{i}.csv", b"".join(b"%d,%d\n" % (i, j) for j in range(50)))
    settings = dict(CSV_LINES, assemble_with="Line", join_source="Input", instance_count=2)
    a = run([tmp_path / "in"], tmp_path / "transform", row_sum_model, **settings)
    b = run(
        [tmp_path / "in"], tmp_path / "processing", row_sum_model, engine="processing", **settings
    )
    assert a.succeeded and b.succeeded
    for i in range(3):
        name = f"f{i}.csv.out"
        assert (tmp_path / "processing" / name).read_bytes() == (
            tmp_path / "transform" / name
        ).read_bytes()


def test_sharded_and_merged_output_equals_unsharded_output(tmp_path, row_sum_model):
    rows = b"".join(b"%d,%d,%d\n" % (i, i % 7, i % 3) for i in range(5000))
    data = write(tmp_path / "in" / "d.csv", rows)
    settings = dict(CSV_LINES, assemble_with="Line", max_payload_mb=1, instance_count=2)
    whole = run([data], tmp_path / "whole", row_sum_model, **settings)
    merged = run([data], tmp_path / "merged", row_sum_model, shards=4, merge=True, **settings)
    assert whole.succeeded and merged.succeeded
    assert merged.files[0].shards == 4
    assert (tmp_path / "merged" / "d.csv.out").read_bytes() == (
        tmp_path / "whole" / "d.csv.out"
    ).read_bytes()
    assert merged.files[0].records_out == 5000
    leftovers = [p.name for p in (tmp_path / "merged").iterdir()]
    assert sorted(leftovers) == ["_SUCCESS", "_manifest.json", "d.csv.out"]


def test_shards_without_merge_keep_one_output_per_shard_r12(tmp_path, row_sum_model):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n" * 1000)
    settings = dict(CSV_LINES, assemble_with="Line")
    assert run([data], tmp_path / "out", row_sum_model, shards=2, **settings).succeeded
    outputs = sorted(p.name for p in (tmp_path / "out").glob("*.out"))
    assert outputs == ["d.part-00000.csv.out", "d.part-00001.csv.out"]


def test_a_model_tar_gz_is_extracted_like_sagemaker_does_c2(tmp_path, row_sum_model):
    import tarfile

    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(row_sum_model / "code", arcname="code")
    data = write(tmp_path / "in" / "d.csv", b"1,2\n")
    assert run([data], tmp_path / "out", archive, **CSV_LINES).succeeded
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == b"3"


def test_merge_keeps_the_output_of_an_input_too_small_to_split(tmp_path, row_sum_model):
    big = write(tmp_path / "in" / "big.csv", b"1,2\n" * (4 * 1024 * 1024))  # 16 MiB: 2 shards
    small = write(tmp_path / "in" / "small.csv", b"3,4\n")
    settings = dict(CSV_LINES, assemble_with="Line", instance_count=2, max_payload_mb=1)
    result = run(
        [big, small], tmp_path / "out", row_sum_model, shards="auto", merge=True, **settings
    )
    assert result.succeeded
    assert [f.shards for f in result.files] == [2, None]
    assert (tmp_path / "out" / "small.csv.out").read_bytes() == b"7\n"
    assert (tmp_path / "out" / "big.csv.out").read_bytes() == b"3\n" * (4 * 1024 * 1024)
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert [f["outputs"] for f in manifest["files"]] == [["big.csv.out"], ["small.csv.out"]]


def test_inputs_that_cannot_be_cut_run_whole_and_empty_inputs_give_empty_outputs_r6(
    tmp_path, row_sum_model
):
    one_line = write(tmp_path / "in" / "one.csv", b"1,2\n")
    empty = write(tmp_path / "in" / "empty.csv", b"")
    settings = dict(CSV_LINES, assemble_with="Line")
    result = run(
        [one_line, empty], tmp_path / "out", row_sum_model, shards=4, merge=True, **settings
    )
    assert result.succeeded
    assert (tmp_path / "out" / "one.csv.out").read_bytes() == b"3\n"
    assert (tmp_path / "out" / "empty.csv.out").read_bytes() == b""
    assert [f.records_in for f in result.files] == [0, 1]


def test_an_input_that_cannot_be_split_fails_alone_r19(tmp_path, row_sum_model):
    bad = write(tmp_path / "in" / "bad.csv.gz", b"not gzip at all\n")
    good = write(tmp_path / "in" / "good.csv", b"1,2\n" * 100)
    settings = dict(CSV_LINES, assemble_with="Line")
    result = run([bad, good], tmp_path / "out", row_sum_model, shards=2, **settings)
    assert [f.status for f in result.files] == ["FAILED", "SUCCEEDED"]
    assert "bad.csv.gz" in result.files[0].error
    assert sorted(p.name for p in (tmp_path / "out").glob("*.out")) == [
        "good.part-00000.csv.out",
        "good.part-00001.csv.out",
    ]


def test_a_failed_sharded_input_leaves_no_shard_outputs_r19(tmp_path, row_sum_model):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n" * 1000 + b"bad\n")
    settings = dict(CSV_LINES, assemble_with="Line")
    result = run([data], tmp_path / "out", row_sum_model, shards=2, **settings)
    assert not result.succeeded and "d.part-00001.csv" in result.files[0].error
    assert list((tmp_path / "out").glob("*.out")) == []


def test_an_overwrite_removes_the_outputs_the_previous_run_recorded_for_its_inputs(
    tmp_path, row_sum_model
):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n" * 1000)
    (tmp_path / "out").mkdir()
    unrelated = write(tmp_path / "out" / "notes.txt", b"kept")
    settings = dict(CSV_LINES, assemble_with="Line")
    run([data], tmp_path / "out", row_sum_model, shards=4, overwrite=True, **settings)
    result = run([data], tmp_path / "out", row_sum_model, shards=2, overwrite=True, **settings)
    assert result.succeeded
    assert sorted(p.name for p in (tmp_path / "out").glob("*.out")) == [
        "d.part-00000.csv.out",
        "d.part-00001.csv.out",
    ]
    assert unrelated.read_bytes() == b"kept"


def test_a_plain_inputs_shards_are_read_in_place_by_either_engine(
    tmp_path, row_sum_model, monkeypatch
):
    copied: list[tuple[int, int]] = []
    copy_to = LocalSource.copy_to

    def counted(self, writer, start, end, on_part):
        copied.append((start, end))
        copy_to(self, writer, start, end, on_part)

    monkeypatch.setattr(LocalSource, "copy_to", counted)
    rows = b"".join(b"%d,%d\n" % (i, i % 5) for i in range(3000))
    data = write(tmp_path / "in" / "d.csv", rows)
    settings = dict(CSV_LINES, assemble_with="Line")
    expected = b"".join(b"%d\n" % (i + i % 5) for i in range(3000))
    for engine in ("transform", "processing"):
        out = tmp_path / engine
        result = run([data], out, row_sum_model, engine=engine, shards=3, merge=True, **settings)
        assert result.succeeded and result.files[0].shards == 3
        assert (out / "d.csv.out").read_bytes() == expected
        assert copied == [], engine
