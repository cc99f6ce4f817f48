"""DataProcessing: input filter, join (R17 CSV, R18 JSON) and output filter (R15, R16)."""

import pytest

from batchinfer.transform.dataprocessing import DataProcessing
from batchinfer.transform.record_errors import RecordError
from batchinfer.transform.records import Batch
from batchinfer.transform.settings import TransformSettings

CSV = dict(content_type="text/csv", accept="text/csv", split_type="Line", assemble_with="Line")
JSONL = dict(
    content_type="application/jsonlines",
    accept="application/jsonlines",
    split_type="Line",
    assemble_with="Line",
)


def processing(**kwargs) -> DataProcessing:
    return DataProcessing(TransformSettings(**kwargs), "in/f")


def test_r16_csv_input_filter_reserialises_rfc4180_and_keeps_the_terminator():
    dp = processing(**CSV, input_filter="$[1:]")
    assert dp.filter_record(b'id,"a,b",c\r\n', 1) == b'"a,b",c\r\n'
    assert dp.filter_record(b'id,"say ""hi""",x', 2) == b'"say ""hi""",x'
    assert processing(**CSV, input_filter="$[0]").filter_record(b"a,b\n", 1) == b"a\n"


def test_r16_json_input_filter_dumps_compactly():
    dp = processing(**JSONL, input_filter="$.f")
    assert dp.filter_record(b'{"id": "a", "f": [1, 2]}\n', 1) == b"[1,2]\n"
    assert processing(**JSONL, input_filter="$.s").filter_record(b'{"s":"\xc3\xa9"}', 1) == (
        b'"\xc3\xa9"'
    )


def test_r16_input_filter_errors_name_file_record_and_expression():
    with pytest.raises(RecordError, match=r"in/f: record 4: filter '\$\[5\]': index 5"):
        processing(**CSV, input_filter="$[5]").filter_record(b"a,b\n", 4)
    with pytest.raises(RecordError, match=r"in/f: record 2: record is not JSON"):
        processing(**JSONL, input_filter="$.f").filter_record(b"{oops\n", 2)
    with pytest.raises(RecordError, match=r"record 3: is not UTF-8"):
        processing(**CSV, input_filter="$[0]").filter_record(b"\xff,1\n", 3)


def test_r17_csv_join_appends_prediction_fields_to_the_original_row():
    dp = processing(**CSV, input_filter="$[1:]", join_source="Input")
    batch = Batch(b"1,2,3\n", 1, 1, (b"1,2,3\n",))
    assert dp.process_response(batch, b"1") == b"1,2,3,1\n"
    assert dp.process_response(batch, b"0.2,0.8\n") == b"1,2,3,0.2,0.8\n"


def test_r17_multi_record_response_split_one_line_per_record():
    dp = processing(**CSV, join_source="Input")
    batch = Batch(b"a,1\nb,2\r\n", 5, 2, (b"a,1\n", b"b,2\r\n"))
    assert dp.process_response(batch, b"x\r\ny") == b"a,1,x\nb,2,y\n"


def test_r17_prediction_count_mismatch_fails_the_file():
    dp = processing(**CSV, join_source="Input")
    batch = Batch(b"a\nb\nc\n", 7, 3, (b"a\n", b"b\n", b"c\n"))
    with pytest.raises(RecordError, match=r"records 7-9: the model returned 2 predictions for 3"):
        dp.process_response(batch, b"1\n2\n")


def test_r18_json_object_record_gets_sage_maker_output_overwriting_it():
    dp = processing(**JSONL, join_source="Input")
    batch = Batch(b"", 1, 1, (b'{"SageMakerOutput":0,"id":1}\n',))
    assert (
        dp.process_response(batch, b'{"score": 3}') == b'{"SageMakerOutput":{"score":3},"id":1}\n'
    )


@pytest.mark.parametrize("record", [b"[5,6]", b"7", b'"s"', b"null"])
def test_r18_non_object_records_are_wrapped(record):
    dp = processing(**JSONL, join_source="Input")
    out = dp.process_response(Batch(record, 1, 1, (record + b"\n",)), b"1")
    assert out == b'{"SageMakerInput":' + record + b',"SageMakerOutput":1}\n'


def test_r18_json_join_with_split_none_keeps_the_document_unterminated():
    dp = processing(content_type="application/json", accept="application/json", join_source="Input")
    out = dp.process_response(Batch(b"", 1, 1, (b'{"a": [1]}\n',)), b"[0.5]\n")
    assert out == b'{"a":[1],"SageMakerOutput":[0.5]}'


def test_r16_output_filter_without_join_applies_to_each_prediction():
    dp = processing(**JSONL, output_filter="$.score")
    assert dp.process_response(Batch(b"", 1, 2), b'{"score":1}\n{"score":2}') == b"1\n2\n"
    csv = processing(**CSV, output_filter="$[-1]")
    assert csv.process_response(Batch(b"", 1, 2), b"0.1,0.9\n0.7,0.3") == b"0.9\n0.3\n"


def test_r16_output_filter_errors_name_the_record():
    dp = processing(**JSONL, join_source="Input", output_filter="$.missing")
    batch = Batch(b"", 3, 2, (b'{"a":1}\n', b'{"b":1}\n'))
    with pytest.raises(RecordError, match=r"record 3: filter '\$\.missing': no key 'missing'"):
        dp.process_response(batch, b"1\n2\n")
    with pytest.raises(RecordError, match=r"record 4: prediction is not JSON"):
        processing(**JSONL, join_source="Input").process_response(batch, b"1\nnope\n")
