"""What an output folder holds when a local job starts (`batchinfer.engine.previous_run`)."""

import json
import os
import subprocess

import pytest

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.output_place import LocalPlace
from batchinfer.engine.previous_run import (
    WORKDIR_PREFIX,
    EarlierRun,
    check_place,
    check_same_job,
    input_version,
    kept_files,
)
from batchinfer.errors import OutputNotEmpty, ValidationError


def test_an_empty_or_missing_folder_is_taken_whatever_the_flags(tmp_path):
    assert check_place(LocalPlace(tmp_path / "new"), overwrite=False, resume=False) is None
    assert check_place(LocalPlace(tmp_path), overwrite=False, resume=True) is None


def test_a_working_folder_of_a_live_run_is_refused_and_one_of_a_dead_run_removed(tmp_path):
    live = tmp_path / f"{WORKDIR_PREFIX}{os.getpid()}-abc" / "outputs"
    live.mkdir(parents=True)
    (live / "a.csv.out").write_text("1")
    with pytest.raises(OutputNotEmpty, match=f"another run \\(process {os.getpid()}\\)"):
        check_place(LocalPlace(tmp_path), overwrite=True, resume=False)
    dead_pid = _ended_pid()
    live.parent.rename(tmp_path / f"{WORKDIR_PREFIX}{dead_pid}-abc")
    (tmp_path / f"{WORKDIR_PREFIX}{dead_pid}-empty" / "shards").mkdir(parents=True)  # no file
    assert check_place(LocalPlace(tmp_path), overwrite=False, resume=False) is None
    assert list(tmp_path.iterdir()) == []


def _ended_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_resume_needs_a_readable_manifest(tmp_path):
    (tmp_path / "x.out").write_text("1")
    with pytest.raises(ValidationError, match=r"no readable _manifest\.json"):
        check_place(LocalPlace(tmp_path), overwrite=False, resume=True)
    (tmp_path / "_manifest.json").write_text("{not json")
    with pytest.raises(ValidationError, match=r"no readable _manifest\.json"):
        check_place(LocalPlace(tmp_path), overwrite=False, resume=True)


def test_only_whole_unchanged_outputs_of_succeeded_inputs_are_kept(tmp_path):
    data, out = tmp_path / "in", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    inputs = []
    for name in ("a.csv", "b.csv", "c.csv", "d.csv"):
        (data / name).write_text("1,2\n")
        (out / f"{name}.out").write_text("3")
        inputs.append(InputFile(data / name, name))
    (out / "c.csv.out").write_text("")  # cut short: not whole

    def entry(file: InputFile, status: str = "SUCCEEDED") -> dict:
        return {
            "name": file.name,
            "status": status,
            "outputs": [f"{file.name}.out"],
            "bytes_out": 1,
            "input_version": input_version(file),
        }

    entries = [entry(inputs[0]), entry(inputs[1], "FAILED"), entry(inputs[2]), entry(inputs[3])]
    (data / "d.csv").write_text("1,2\n3,4\n")  # changed since
    digests = {"settings": "s", "model": "m"}
    earlier = EarlierRun({"digests": digests, "files": entries})
    assert set(kept_files(earlier, inputs, LocalPlace(out))) == {"a.csv"}
    check_same_job(earlier, digests, LocalPlace(out))
    with pytest.raises(ValidationError, match="the model differ"):
        check_same_job(earlier, {**digests, "model": "n"}, LocalPlace(out))
    assert json.dumps(earlier.manifest)  # what was read back is left as it was
