"""Batch strategies, assembly and payload sizes: the SDK's local mode and `batchinfer run`,
same model, same files, same settings, outputs compared byte for byte (R6, R7, R8, R13)."""

import pytest

from tests.conformance.oracle.departures import (
    ASSEMBLE_LINE,
    EXECUTION_PARAMETERS,
    MULTI_RECORD_SIZE,
    NEWLINES,
)
from tests.conformance.oracle.outputs import line_count, output_tree, write_tree
from tests.conformance.oracle.sdk_local import byte_sized_batches, sdk_transform

pytestmark = pytest.mark.oracle

CSV = dict(content_type="text/csv", accept="text/csv")
JSON_LINES = dict(content_type="application/jsonlines", accept="application/jsonlines")
# Two files: one with an unterminated last line (R6), one plain.
CSV_FILES = {"a.csv": b"1,2\n3,4\n5,6\n7,8", "b.csv": b"10,20,30\n1,1\n"}


@pytest.mark.parametrize("assemble_with", ["None", "Line"])
@pytest.mark.parametrize("batch_strategy", ["SingleRecord", "MultiRecord"])
def test_batch_strategy_and_assembly_match_the_sdk_r6_r7_r13(
    tmp_path, row_sum_model, batchinfer_run, batch_strategy, assemble_with
):
    data = write_tree(tmp_path / "in", CSV_FILES)
    settings = dict(
        CSV, split_type="Line", batch_strategy=batch_strategy, assemble_with=assemble_with
    )
    sdk = sdk_transform(row_sum_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **settings)

    assert ours.exit_code == 0, ours.said
    assert sdk.description["TransformJobStatus"] == "Completed"
    assert output_tree(tmp_path / "ours") == output_tree(tmp_path / "sdk")
    assert set(output_tree(tmp_path / "sdk")) == {"a.csv.out", "b.csv.out"}
    records_sent = sum(line_count(exchange.request) for exchange in sdk.exchanges)
    assert records_sent == sum(ours.records_in().values()) == 6
    if batch_strategy == "SingleRecord":
        assert len(sdk.exchanges) == 6
    else:
        assert len(sdk.exchanges) == 2  # one request per file


def test_a_blank_line_is_a_record_as_in_the_sdk_r6(tmp_path, row_sum_model, batchinfer_run):
    """A blank line is sent as a record of its own on both sides; model M answers it with an
    empty body, which AssembleWith Line turns into an empty line."""
    data = write_tree(tmp_path / "in", {"gap.csv": b"1,2\n\n3,4\n"})
    settings = dict(CSV, split_type="Line", batch_strategy="SingleRecord", assemble_with="Line")
    sdk = sdk_transform(row_sum_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **settings)

    assert ours.exit_code == 0, ours.said
    assert [e.request for e in sdk.exchanges] == [b"1,2\n", b"\n", b"3,4\n"]
    assert ours.records_in() == {"gap.csv": 3}
    assert (
        output_tree(tmp_path / "ours")
        == output_tree(tmp_path / "sdk")
        == {"gap.csv.out": b"3\n\n7\n"}
    )


def test_json_lines_multi_record_matches_the_sdk_r7_r13(tmp_path, row_sum_model, batchinfer_run):
    data = write_tree(tmp_path / "in", {"r.jsonl": b'{"f":[1,2]}\n[3,4]\n5\n{"f":[0.5,1]}\n'})
    settings = dict(JSON_LINES, split_type="Line", batch_strategy="MultiRecord")
    settings["assemble_with"] = "Line"
    sdk_transform(row_sum_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **settings)

    assert ours.exit_code == 0, ours.said
    expected = b'{"score": 3}\n{"score": 7}\n{"score": 5}\n{"score": 1.5}\n'
    assert (
        output_tree(tmp_path / "ours") == output_tree(tmp_path / "sdk") == {"r.jsonl.out": expected}
    )


@pytest.mark.parametrize("assemble_with", ["None", "Line"])
def test_split_none_sends_each_file_whole_like_the_sdk_r6_r13(
    tmp_path, row_sum_model, batchinfer_run, assemble_with
):
    data = write_tree(tmp_path / "in", CSV_FILES)
    # The SDK cannot take the strategy from the container (EXECUTION_PARAMETERS): set it.
    settings = dict(
        CSV, split_type="None", batch_strategy="MultiRecord", assemble_with=assemble_with
    )
    sdk = sdk_transform(row_sum_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **settings)

    assert ours.exit_code == 0, ours.said
    assert output_tree(tmp_path / "ours") == output_tree(tmp_path / "sdk")
    assert sorted(e.request for e in sdk.exchanges) == sorted(CSV_FILES.values())


def test_departure_r10_the_sdk_refuses_the_containers_multi_record_spelling(
    tmp_path, row_sum_model, batchinfer_run
):
    """EXECUTION_PARAMETERS: with no BatchStrategy in the job, both take it from
    /execution-parameters (C5), where batchinfer's server answers MULTI_RECORD, a spelling R10
    allows; batchinfer runs MultiRecord, the SDK stops with a ValueError."""
    data = write_tree(tmp_path / "in", CSV_FILES)
    settings = dict(CSV, split_type="Line", assemble_with="Line")
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **settings)
    with pytest.raises(ValueError, match="Invalid Batch Strategy"):
        sdk_transform(row_sum_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)

    assert ours.exit_code == 0, ours.said
    assert ours.manifest["effective"]["batch_strategy"] == "MultiRecord"
    assert output_tree(tmp_path / "ours") == {
        "a.csv.out": b"3\n7\n11\n15\n",
        "b.csv.out": b"60\n2\n",
    }
    assert not (tmp_path / "sdk").exists(), str(EXECUTION_PARAMETERS)


def lines_of_exactly_one_mib(count: int) -> bytes:
    """``count`` 64-byte lines; 16,384 of them are exactly 1 MiB."""
    return b"".join(b"%d," % i + b"x" * (63 - len(b"%d," % i)) + b"\n" for i in range(count))


def test_max_payload_cuts_multi_record_requests_like_the_sdk_once_sized_in_bytes_r7_r8(
    tmp_path, brackets_model, batchinfer_run
):
    """MaxPayloadInMB 1 over 2.4 MiB of 64-byte lines: three requests, the first two exactly
    1 MiB. Model B brackets each request, so the output shows every cut."""
    body = lines_of_exactly_one_mib(40_000)
    data = write_tree(tmp_path / "in", {"big.csv": body})
    settings = dict(
        CSV, split_type="Line", batch_strategy="MultiRecord", max_payload_mb=1, assemble_with="None"
    )
    ours = batchinfer_run(brackets_model, data, tmp_path / "ours", **settings)
    with byte_sized_batches():
        sdk = sdk_transform(
            brackets_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings
        )

    assert ours.exit_code == 0, ours.said
    assert output_tree(tmp_path / "ours") == output_tree(tmp_path / "sdk")
    assert [len(e.request) for e in sdk.exchanges] == [1 << 20, 1 << 20, len(body) - (2 << 20)]
    assert output_tree(tmp_path / "ours")["big.csv.out"].count(b"[") == 3


def test_departure_r7_the_sdk_cuts_a_batch_of_exactly_max_payload_one_record_early(
    tmp_path, brackets_model
):
    """MULTI_RECORD_SIZE: without the correction the SDK's first request holds 16,383 lines,
    one short of the 1 MiB the platform allows."""
    data = write_tree(tmp_path / "in", {"big.csv": lines_of_exactly_one_mib(20_000)})
    settings = dict(
        CSV, split_type="Line", batch_strategy="MultiRecord", max_payload_mb=1, assemble_with="None"
    )
    sdk = sdk_transform(brackets_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    counts = [line_count(e.request) for e in sdk.exchanges]
    assert counts == [16_383, 20_000 - 16_383], str(MULTI_RECORD_SIZE)


def test_departure_r6_the_sdk_ends_records_at_carriage_returns(
    tmp_path, echo_model, batchinfer_run
):
    """NEWLINES: a record ends at \\n only (R6); the SDK's text-mode reading also ends one at
    \\r and sends \\n in place of \\r\\n and \\r. Model E echoes each request."""
    body = b"1,2\r\n3,4\r5,6\n7,8"
    data = write_tree(tmp_path / "in", {"crlf.csv": body})
    settings = dict(CSV, split_type="Line", batch_strategy="SingleRecord", assemble_with="None")
    sdk = sdk_transform(echo_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    ours = batchinfer_run(echo_model, data, tmp_path / "ours", **settings)

    assert ours.exit_code == 0, ours.said
    assert output_tree(tmp_path / "ours") == {"crlf.csv.out": body}
    assert ours.records_in() == {"crlf.csv": 3}
    sent = [e.request for e in sdk.exchanges]
    assert sent == [b"1,2\n", b"3,4\n", b"5,6\n", b"7,8"], str(NEWLINES)
    assert output_tree(tmp_path / "sdk") == {"crlf.csv.out": b"1,2\n3,4\n5,6\n7,8"}


def test_departure_r13_assemble_with_line_after_a_response_that_ends_in_a_newline(
    tmp_path, echo_model, batchinfer_run
):
    """ASSEMBLE_LINE: batchinfer adds \\n only after a response lacking one (R13); the SDK
    adds it after every response. The SDK's own responses, assembled by the rule, must give
    batchinfer's bytes."""
    body = b"1,2\n3,4\n5,6"
    data = write_tree(tmp_path / "in", {"d.csv": body})
    settings = dict(CSV, split_type="Line", batch_strategy="SingleRecord", assemble_with="Line")
    sdk = sdk_transform(echo_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    ours = batchinfer_run(echo_model, data, tmp_path / "ours", **settings)

    assert ours.exit_code == 0, ours.said
    responses = [e.response for e in sdk.exchanges]
    sdk_assembly = b"".join(r + b"\n" for r in responses)
    assert output_tree(tmp_path / "sdk") == {"d.csv.out": sdk_assembly}, str(ASSEMBLE_LINE)
    by_the_rule = b"".join(r if r.endswith(b"\n") else r + b"\n" for r in responses)
    assert (
        output_tree(tmp_path / "ours") == {"d.csv.out": by_the_rule} == {"d.csv.out": body + b"\n"}
    )


def test_batchinfer_fails_a_file_whose_answer_lacks_a_line_the_sdk_writes_it_r17(
    tmp_path, row_sum_model, batchinfer_run
):
    """batchinfer's choice, not a departure (platform.md, section 6): with Line/Line and a CSV
    answer each request's answer must hold one line per record. Model M answers a blank line
    with nothing, so the MultiRecord answer to 4 records has 3 lines: batchinfer fails the
    file, the SDK writes the 3 lines."""
    data = write_tree(tmp_path / "in", {"gap.csv": b"1,2\n\n3,4\n5,6\n"})
    settings = dict(CSV, split_type="Line", batch_strategy="MultiRecord", assemble_with="Line")
    sdk = sdk_transform(row_sum_model, f"file://{data}", f"file://{tmp_path / 'sdk'}", **settings)
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **settings)

    assert [e.request for e in sdk.exchanges] == [b"1,2\n\n3,4\n5,6\n"]
    assert output_tree(tmp_path / "sdk") == {"gap.csv.out": b"3\n7\n11\n"}
    assert ours.exit_code == 1
    assert "gap.csv" in ours.said and "3 output records for 4 input records" in ours.said
    assert output_tree(tmp_path / "ours") == {}
