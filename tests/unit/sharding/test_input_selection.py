"""Which names below an input are inputs (R4: a key prefix or a ManifestFile selects the input
objects): the one rule that local directories, S3 prefixes and the S3 trigger share."""

import pytest

from batchinfer.sharding.selection import InputSelection, Selector, is_stray, under_prefix


@pytest.mark.parametrize(
    ("name", "stray"),
    [
        ("a.csv", False),
        ("day1/a.csv", False),
        ("part-00000.csv", False),
        ("a_b/c.d.csv", False),
        ("_SUCCESS", True),
        ("_committed_123", True),
        (".part-00000.csv.crc", True),
        ("_temporary/0/part-00000.csv", True),
        ("day1/.hidden/a.csv", True),
        ("day1/_SUCCESS", True),
    ],
)
def test_r4_hidden_and_underscore_files_and_folders_are_stray(name, stray):
    assert is_stray(name) is stray


def test_r4_what_the_user_named_is_never_stray():
    assert not is_stray("_x.csv", named=len("_x.csv"))
    assert not is_stray("_in/a.csv", named=1)  # the prefix named the start of "_in"
    assert is_stray("_in/_SUCCESS", named=1)  # but not what lies below it


@pytest.mark.parametrize(
    ("prefix", "key", "expected"),
    [
        ("in/", "in/day1/a.csv", ("day1/a.csv", 0)),
        ("in/d", "in/day1/a.csv", ("day1/a.csv", 1)),
        ("in/_x.csv", "in/_x.csv", ("_x.csv", 6)),
        ("", "a.csv", ("a.csv", 0)),
    ],
)
def test_r4_keys_are_named_relative_to_the_prefix_folder_as_outputs_are(prefix, key, expected):
    assert under_prefix(prefix, key) == expected


def test_r4_include_narrows_and_exclude_removes_with_globs_over_the_relative_name():
    selection = InputSelection(include=("*.csv",), exclude=("day2/*",))
    names = ["a.csv", "a.json", "day1/b.csv", "day2/c.csv"]
    assert [n for n in names if selection.matches(n)] == ["a.csv", "day1/b.csv"]
    assert str(selection) == "include '*.csv', exclude 'day2/*'"
    assert InputSelection().matches("anything")


def test_r4_the_selector_says_what_it_left_out_and_why():
    selector = Selector(InputSelection(include=("*.json",)), "file")
    names = ["a.csv", "b.csv", "c.csv", "d.csv", "_SUCCESS"]
    assert not any(selector.takes(name) for name in names)
    assert selector.left_out() == (
        ": 4 files (a.csv, b.csv, c.csv, ...) not selected by include '*.json'; "
        "1 file (_SUCCESS) hidden or _-prefixed, which are inputs only when named"
    )
    assert Selector(InputSelection(), "object").left_out() == ""
