"""What a local processing instance transforms: the files staged in its input directory (a
processing job's, P2) and the shards of local files handed to it as byte ranges, read in
place rather than copied (R12: each gives one output named after it)."""

import re
from pathlib import Path

import pytest

from batchinfer.engine.inputs import InputFile, load_ranges, save_ranges
from batchinfer.engine.processing_job import job_inputs
from batchinfer.errors import InputError, ValidationError


def test_ranges_written_by_the_engine_are_read_back_by_the_instance(tmp_path):
    source = tmp_path / "d.csv"
    source.write_bytes(b"1\n2\n3\n")
    shards = [InputFile(source, "d.part-00000.csv", 0, 4), InputFile(source, "d.part-00001.csv", 4)]
    save_ranges(shards, tmp_path / "ranges.json")
    assert load_ranges(tmp_path / "ranges.json") == [
        InputFile(source.resolve(), "d.part-00000.csv", 0, 4),
        InputFile(source.resolve(), "d.part-00001.csv", 4, None),
    ]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("{not json", "cannot be read as JSON"),
        ('{"path": "a"}', "not a JSON list"),
        ('[{"path": "a", "name": "a", "start": 0, "end": null}, 3]', "entry 1 is not"),
        ('[{"path": "a", "name": "a", "start": -1, "end": null}]', "entry 0 is not"),
        ('[{"path": "a", "name": "a", "start": 5, "end": 2}]', "entry 0 is not"),
        ('[{"path": "a", "name": "a", "start": 0}]', "entry 0 is not"),
    ],
)
def test_a_ranges_file_that_is_not_byte_ranges_is_refused_naming_it(tmp_path, text, named):
    listing = tmp_path / "ranges.json"
    listing.write_text(text)
    with pytest.raises(ValidationError, match=re.escape(f"--input-ranges {listing}: {named}")):
        load_ranges(listing)


def test_a_ranges_file_that_is_not_there_is_refused_naming_it(tmp_path):
    gone = tmp_path / "gone.json"
    with pytest.raises(ValidationError, match=re.escape(f"--input-ranges {gone}: cannot be read")):
        load_ranges(gone)


def test_staged_files_and_ranges_are_taken_together_by_name(tmp_path):
    staged = tmp_path / "input"
    (staged / "sub").mkdir(parents=True)
    (staged / "sub" / "b.csv").write_bytes(b"1\n")
    (staged / "z.csv").write_bytes(b"2\n")
    shard = InputFile(tmp_path / "a.csv", "sub/a.part-00001.csv", 10, 20)
    names = [file.name for file in job_inputs(staged, [shard])]
    assert names == ["sub/a.part-00001.csv", "sub/b.csv", "z.csv"]


def test_an_instance_given_only_ranges_needs_no_staged_file(tmp_path):
    (tmp_path / "input").mkdir()
    shard = InputFile(tmp_path / "a.csv", "a.part-00000.csv", 0, 5)
    assert job_inputs(tmp_path / "input", [shard]) == [shard]


def test_an_instance_given_nothing_says_so(tmp_path: Path):
    (tmp_path / "input").mkdir()
    with pytest.raises(InputError, match="no input files under"):
        job_inputs(tmp_path / "input", [])
