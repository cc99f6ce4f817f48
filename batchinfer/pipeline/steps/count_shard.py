"""CountShard: one item of the CountShards Map, the check of one shard of a round. Its
output must exist and, where output records can be counted (R17: a CSV join adds the prediction to
its row, one line per record), hold as many Line records as its input (R6: what a record is under
each SplitType), or, Parquet in and out, as many rows (read from both footers). With
``bad_records`` quarantine, the records the model server set aside are taken out of the
output into its errors file and counted (:mod:`~batchinfer.pipeline.storage.set_aside`):
the input's records are those answered and those set aside. Each check reads one shard's
input and output (and its errors file), no more; Verify gathers the answers of the round."""

from typing import Any

from batchinfer.media_types import CSV
from batchinfer.pipeline.contract.state import ShardCheck, ShardCount
from batchinfer.pipeline.storage.s3io import count_lines, count_rows, object_size
from batchinfer.pipeline.storage.set_aside import take_out_set_aside
from batchinfer.transform.assemble import output_name
from batchinfer.transform.bad_records import errors_name
from batchinfer.uris import parse_s3_uri


def count_shard(check: ShardCheck, *, s3: Any) -> ShardCount:
    """Check the output of ``check.shard``; reads nothing when there is no output, and
    only its size when records are not counted."""
    shard = check.shard
    output = parse_s3_uri(check.job_output).child(output_name(shard.name)).uri
    if object_size(s3, output) is None:
        return ShardCount(shard, output, f"no output {output}", {})
    if not check.settings.counts_records:
        return ShardCount(shard, output, None, {})
    source = parse_s3_uri(check.shards_prefix).child(shard.name).uri
    settings = check.settings
    allowance = settings.bad_record_allowance
    set_aside: dict[str, int] = {}
    if settings.parquet_in:  # and out: the rows of both, from their footers
        records_in, records_out = count_rows(s3, source), count_rows(s3, output)
    else:
        records_in = count_lines(s3, source, gzip=shard.gzip)
        if allowance is None:
            records_out = count_lines(s3, output)
        else:
            records_out, set_aside["records_quarantined"] = take_out_set_aside(
                s3,
                parse_s3_uri(output),
                parse_s3_uri(errors_name(output)),
                name=shard.name,
                allowance=allowance,
                content_type=settings.accept or settings.content_type or CSV,
            )
    accounted = records_out + set_aside.get("records_quarantined", 0)
    if records_in != accounted:
        problem = f"output has {records_out} records, input {records_in}"
        if set_aside:
            problem += f" ({set_aside['records_quarantined']} set aside)"
        return ShardCount(shard, output, problem, {})
    counts = {"records_in": records_in, "records_out": records_out, **set_aside}
    return ShardCount(shard, output, None, counts)
