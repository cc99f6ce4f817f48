"""The warnings of a plan: each names the file, record or option at fault and what to do.

Every warning has a stable ``code`` (for ``--json`` readers) and a message for people.
"""

from dataclasses import dataclass

from batchinfer.errors import ValidationError
from batchinfer.instances.price_table import AS_OF, UNPRICED_FAMILIES
from batchinfer.instances.prices import known_regions
from batchinfer.instances.supported import instance_family
from batchinfer.planning.survey import InputSurvey, Sharding
from batchinfer.sharding.compatibility import check_sharding
from batchinfer.transform.records import oversize_error
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import MIB


@dataclass(frozen=True)
class Advice:
    code: str
    message: str


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


def sharding(settings: TransformSettings, asked: Sharding, merge: bool) -> list[Advice]:
    """Splitting without SplitType Line and merging without AssembleWith Line, in the words
    ``batchinfer run`` refuses them with."""
    found = []
    split = "--shard-size" if asked.shard_size is not None else "--shards"
    if asked.requested:
        found += _refused("split-needs-line", settings, split=split, merge=None)
    if merge:
        found += _refused("merge-needs-line", settings, split=None, merge="--merge")
    return found


def _refused(code: str, settings: TransformSettings, **asked: str | None) -> list[Advice]:
    try:
        check_sharding(settings, name=_option, **asked)
    except ValidationError as exc:
        return [Advice(code, f"a run would be refused: {exc}")]
    return []


def inputs(surveys: list[InputSurvey], settings: TransformSettings, units: int) -> list[Advice]:
    """Compressed input read as plain, records over the payload limit, idle instances."""
    found = []
    for survey in surveys:
        if survey.gzip and settings.compression_type != "Gzip":
            found.append(
                Advice(
                    "gzip-without-compression-type",
                    f"{survey.name}: looks gzip-compressed but --compression-type is "
                    f"{settings.compression_type}: the model would be sent compressed bytes; "
                    "pass --compression-type Gzip",
                )
            )
    limit = settings.resolve().max_payload_bytes
    for survey in surveys:
        largest = survey.largest
        if limit is None or largest is None or largest.size <= limit:
            continue
        if survey.row_groups is not None:
            found.append(Advice("record-too-large", _parquet_too_large(survey, limit)))
            continue
        message = str(oversize_error(survey.name, largest.number, limit, largest.size))
        if settings.split_type == "None":
            message += (
                "; with --split-type None the whole object is one record: --split-type Line "
                "makes each line a record"
            )
        found.append(Advice("record-too-large", f"{message} (the job would fail this file)"))
    if settings.instance_count > units:
        found.append(
            Advice(
                "idle-instances",
                f"--instance-count {settings.instance_count} for {units} input(s) and shards: "
                f"each goes whole to one instance, so {settings.instance_count - units} "
                "instance(s) would idle (and be billed); pass --shards N (auto splits only "
                "inputs of 8 MiB or more) or a lower --instance-count",
            )
        )
    return found


def _parquet_too_large(survey: InputSurvey, limit: int) -> str:
    """Why a Parquet request is over the limit, and the way out: smaller row groups when
    one does not fit alone (a request holds whole row groups), else shards of them."""
    group = survey.largest_row_group or 0
    held = (
        f"{survey.records:,} rows in {survey.row_groups} row group(s), the largest {group:,} bytes"
    )
    bound = f"MaxPayloadInMB={limit // MIB} ({limit:,} bytes)"
    if (survey.largest_row_group_request or 0) > limit:  # as the engine refuses it
        way_out = (
            "a request holds whole row groups: write the file with smaller row groups "
            "(pyarrow's row_group_size) or raise --max-payload-mb (up to 100, or 0 for no limit)"
        )
    elif survey.shards > 1:
        way_out = "each shard is one request: make more shards (--shards auto packs them)"
    else:
        way_out = (
            "a Parquet file is sent whole: --shards auto splits it into shards of row groups "
            "within the limit, or raise --max-payload-mb (up to 100, or 0 for no limit)"
        )
    largest = survey.largest.size if survey.largest else survey.bytes
    return (
        f"{survey.name}: a Parquet request of {largest:,} bytes ({held}) is over {bound}; "
        f"{way_out} (the job would fail this file)"
    )


def no_spec(reason: str) -> Advice:
    return Advice("no-instance-spec", f"no duration or cost estimate: {reason}")


def no_price(instance_type: str, region: str) -> Advice:
    family = instance_family(instance_type)
    held = (
        f"the table has no list price for the {family} family"
        if family in UNPRICED_FAMILIES
        else f"the table, as of {AS_OF}, has {', '.join(known_regions())}"
    )
    return Advice(
        "no-price",
        f"no price for {instance_type} in {region} ({held}); pass --price "
        f"{instance_type}=USD_PER_HOUR",
    )


def s3_not_calibrated() -> Advice:
    return Advice(
        "not-calibrated",
        "--model: calibration reads local inputs only; copy a sample of the S3 input to a "
        "local directory and plan that with --model",
    )


def nothing_to_calibrate(reason: str) -> Advice:
    return Advice("not-calibrated", f"--model: nothing to calibrate with: {reason}")


def calibration_failed(reason: str) -> Advice:
    return Advice(
        "calibration-failed",
        f"--model: the model failed on the calibration sample (records drawn from the "
        f"inputs), as the job would: {reason}",
    )


def small_tune_sample(sample_bytes: int, payload_mb: int) -> Advice:
    return Advice(
        "small-tune-sample",
        f"--tune: the sample ({sample_bytes:,} bytes) fits in one request of {payload_mb} MB, "
        "so the batch settings barely change its speed; raise --sample-records",
    )


def indistinct_tune_points(sample: str, remedy: str) -> Advice:
    return Advice(
        "indistinct-tune-points",
        f"--tune: no point measured is clearly slower than the fastest (its fastest pass "
        f"below the fastest's slowest): the sample ({sample}) is too small, or this machine "
        f"too busy, to tell them apart; the one recommended needs least memory among those "
        f"whose median lies within the fastest's passes; {remedy}",
    )


def few_tune_objects(objects: int, tried: int, most: int) -> Advice:
    return Advice(
        "few-tune-objects",
        f"--tune: the inputs hold {objects} whole object{'s' if objects != 1 else ''} within "
        f"MaxPayloadInMB (SplitType None: one a request), so MaxConcurrentTransforms was "
        f"measured up to {tried}; with {most} or more objects it would be measured up to "
        f"{most} (two requests a CPU)",
    )


def gpu_not_measured(instance_type: str, gpus: int, model: str | None) -> Advice:
    return Advice(
        "gpu-not-measured",
        f"{instance_type} has {gpus} GPU{'s' if gpus > 1 else ''} ({model or 'unknown model'}): "
        "a speed measured on this machine's CPUs says nothing of them, so no duration or cost "
        "is estimated; measure rows/s on one such instance and pass --throughput",
    )


def throughput_without_records() -> Advice:
    return Advice(
        "throughput-without-records",
        "--throughput: the inputs' records are not counted (S3 inputs are sized, not read), "
        "so rows/s cannot become a duration; plan a local copy of the input",
    )
