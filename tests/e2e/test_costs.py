"""What a run reads: the bytes the Lambda steps' S3 GetObject calls return, against the
bytes of input. A plain CSV run (no merge) reads each shard's input and output once, to
count their records (R6, R17), and little else: the split reads only around shard
boundaries and Verify and Finalize read lists, not data. Bytes, not timings: they are
the same on every machine (bench/pipeline/costs.py prints them for larger runs)."""

from .test_happy_path import csv_rows


def test_a_plain_csv_run_reads_less_than_twice_its_input(stack):
    inputs = {"a.csv": csv_rows(12000), "sub/b.csv": csv_rows(6000, offset=20000)}
    for name, data in inputs.items():
        stack.put(f"input/costs/{name}", data)
    request = {"input": f"s3://{stack.bucket}/input/costs/", "shards": 3}
    execution = stack.run(request, "costs")
    assert execution.status == "SUCCEEDED", execution.cause
    read = stack.bytes_read_by_lambdas()
    input_bytes = sum(len(data) for data in inputs.values())
    outputs = [key for key in stack.keys("output/costs/") if key.endswith(".out")]
    output_bytes = sum(len(stack.get(f"s3://{stack.bucket}/{key}")) for key in outputs)
    assert read["count_shard"] == input_bytes + output_bytes, "each shard and output once"
    assert read["split_object"] < input_bytes / 10, "the split reads near boundaries only"
    assert sum(read.values()) / input_bytes < 2
