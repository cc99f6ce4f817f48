"""`batchinfer process`: the image's Processing-job mode (spec P1-P8)."""

import json
import subprocess
import sys
import tarfile
from pathlib import Path

SETTINGS = {
    "content_type": "text/csv",
    "accept": "text/csv",
    "split_type": "Line",
    "assemble_with": "Line",
}


def process(tmp_path: Path, model: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "batchinfer", "process",
        f"--settings-json={json.dumps(SETTINGS)}",
        f"--input-dir={tmp_path / 'input'}",
        f"--model-dir={model}",
        f"--output-dir={tmp_path / 'output'}",
        f"--message-file={tmp_path / 'message'}",
        "--workers=2",
        *extra,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_every_file_below_the_input_is_transformed_with_its_sub_path_p2_r12(
    tmp_path, row_sum_model
):
    write(tmp_path / "input" / "a.csv", b"1,2\n3,4\n")
    write(tmp_path / "input" / "sub" / "b.csv", b"5,6\n")
    result = process(tmp_path, row_sum_model, f"--report={tmp_path / 'report.json'}")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "output" / "a.csv.out").read_bytes() == b"3\n7\n"
    assert (tmp_path / "output" / "sub" / "b.csv.out").read_bytes() == b"11\n"
    report = {r["name"]: r for r in json.loads((tmp_path / "report.json").read_text())}
    assert report["a.csv"]["stats"]["records_in"] == 2 and report["a.csv"]["error"] is None
    assert not (tmp_path / "message").exists()


def test_a_failed_file_exits_non_zero_writes_the_message_and_no_output_p8_r19(
    tmp_path, row_sum_model
):
    write(tmp_path / "input" / "good.csv", b"1,2\n")
    write(tmp_path / "input" / "bad.csv", b"1,2\nbad\n")
    result = process(tmp_path, row_sum_model)
    assert result.returncode == 1
    assert (tmp_path / "output" / "good.csv.out").read_bytes() == b"3\n"
    assert not (tmp_path / "output" / "bad.csv.out").exists()
    message = (tmp_path / "message").read_text()
    assert message.startswith("1 of 2 files failed") and "bad.csv" in message
    assert len(message.encode()) <= 1024


def test_a_model_input_holding_model_tar_gz_is_extracted_c2(tmp_path, row_sum_model):
    model_input = tmp_path / "model-input"
    model_input.mkdir()
    with tarfile.open(model_input / "model.tar.gz", "w:gz") as tar:
        tar.add(row_sum_model / "code", arcname="code")
    write(tmp_path / "input" / "a.csv", b"1,2\n")
    result = process(tmp_path, model_input)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "output" / "a.csv.out").read_bytes() == b"3\n"


def test_unknown_settings_key_is_named_before_any_work(tmp_path, row_sum_model):
    write(tmp_path / "input" / "a.csv", b"1,2\n")
    command = [
        sys.executable, "-m", "batchinfer", "process", '--settings-json={"splt_type": "Line"}',
        f"--input-dir={tmp_path / 'input'}", f"--model-dir={row_sum_model}",
        f"--output-dir={tmp_path / 'output'}", f"--message-file={tmp_path / 'message'}",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "splt_type" in result.stderr
    assert not (tmp_path / "output").exists()
    assert "splt_type" in (tmp_path / "message").read_text()  # P8


def test_an_unwritable_output_directory_fails_before_any_work(tmp_path, row_sum_model):
    write(tmp_path / "input" / "a.csv", b"1,2\n")
    (tmp_path / "output").write_text("a file where the output directory should be")
    result = process(tmp_path, row_sum_model)
    assert result.returncode == 1
    assert "output directory" in result.stderr and "not writable" in result.stderr
    assert "not writable" in (tmp_path / "message").read_text()
