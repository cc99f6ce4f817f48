"""The R16 JSONPath subset: syntax, evaluation on JSON values and CSV rows, errors."""

import pytest

from batchinfer.errors import InputError, ValidationError
from batchinfer.transform.jsonpath import parse

ROW = ["id1", "1", "2", "3", "4", "5", "6"]
DOC = {"id": "a", "f": [1, 2, 3], "m": {"x": 1, "y": 2}, "SageMakerOutput": {"score": 3}}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("$", ROW),
        ("$[1:]", ROW[1:]),
        ("$[:2]", ROW[:2]),
        ("$[1:3]", ["1", "2"]),  # end exclusive (project choice, R16)
        ("$[:]", ROW),
        ("$[-2:]", ["5", "6"]),
        ("$[0,-1]", ["id1", "6"]),
        ("$[0, 5:]", ["id1", "5", "6"]),
        ("$[0]", "id1"),
        ("$[-1]", "6"),
        ("$[*]", ROW),
        ("$[3,1]", ["3", "1"]),
    ],
)
def test_r16_index_paths_on_csv_rows(expression, expected):
    assert parse(expression).apply(ROW) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("$.f", [1, 2, 3]),
        ("$.f[1:]", [2, 3]),
        ("$['id','SageMakerOutput']", {"id": "a", "SageMakerOutput": {"score": 3}}),
        ('$["id"]', "a"),
        ("$.m.*", [1, 2]),
        ("$.SageMakerOutput.score", 3),
        ("$['m']['y']", 2),
    ],
)
def test_r16_paths_on_json(expression, expected):
    assert parse(expression).apply(DOC) == expected


def test_r16_segments_after_a_multi_select_apply_to_each_element():
    rows = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert parse("$[*].a").apply(rows) == [1, 3]
    assert parse("$[0:2]['b']").apply(rows) == [2, 4]


def test_r16_quoted_names_with_commas_and_escapes():
    doc = {"a,b": 1, "it's": 2}
    assert parse("$['a,b', 'it\\'s']").apply(doc) == doc


@pytest.mark.parametrize(
    ("expression", "detail"),
    [
        ("$[0:2,5:]", "one range"),
        ("features", "start with \\$"),
        ("$..a", "unexpected"),
        ("$[0:2:1]", "neither"),
        ("$[]", "empty"),
        ("$[a]", "neither"),
        ("$[1,]", "empty"),
        ("$.a[", "unexpected"),
        ("$[?(@.a)]", "neither"),
    ],
)
def test_r16_unsupported_expressions_are_rejected_naming_the_expression(expression, detail):
    with pytest.raises(ValidationError, match=detail) as info:
        parse(expression, field="input_filter (InputFilter)")
    assert repr(expression) in str(info.value)
    assert str(info.value).startswith("input_filter (InputFilter)")


@pytest.mark.parametrize(
    ("expression", "value", "detail"),
    [
        ("$[7]", ROW, "index 7 is out of range for an array of 7"),
        ("$[-8]", ROW, "out of range"),
        ("$.nope", DOC, "no key 'nope'"),
        ("$['id','nope']", DOC, "no key 'nope'"),
        ("$.a", ROW, "cannot select key 'a' from an array"),
        ("$[0]", DOC, "cannot index an object"),
        ("$.id.*", DOC, "cannot apply \\*"),
    ],
)
def test_r16_selection_errors_name_the_expression(expression, value, detail):
    with pytest.raises(InputError, match=detail) as info:
        parse(expression).apply(value)
    assert repr(expression) in str(info.value)


def test_r16_slices_never_fail_out_of_range():
    assert parse("$[10:]").apply(ROW) == []
