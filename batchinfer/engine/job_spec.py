"""A local job as asked for: its inputs, model, output, settings and shape, and the checks
that span more than one of them (each error names the option at fault)."""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from batchinfer.endpoints.scoring import endpoint_settings
from batchinfer.engine.endpoint_engine import endpoint_client
from batchinfer.engines import LocalEngine
from batchinfer.errors import ValidationError
from batchinfer.sharding.compatibility import check_sharding
from batchinfer.sharding.selection import EVERY_INPUT, InputSelection
from batchinfer.transform.csv_dialect import check_header_type
from batchinfer.transform.records import check_skip_blank_lines
from batchinfer.transform.settings import TransformSettings


@dataclass(frozen=True)
class LocalJob:
    """A local job. ``model`` is the model the transform and processing engines serve; the
    endpoint engine takes none: the server at ``endpoint_url`` serves its own. ``selection``
    picks the inputs (``--include``, ``--exclude``); ``skip_blank_lines`` drops empty lines
    before batching. An output folder that holds anything is refused unless ``overwrite``
    (each output this run writes replaces the one there) or ``resume`` (an earlier run of
    the same job continues: :mod:`batchinfer.engine.previous_run`)."""

    inputs: Sequence[Path | str]  # local paths, or s3:// URIs and ManifestFiles of S3 objects
    output_dir: Path | str  # a local directory or an s3:// prefix
    model: Path | str | None  # a local path or an s3:// URI
    settings: TransformSettings
    engine: LocalEngine = "transform"
    shards: int | Literal["auto"] | None = None
    merge: bool = False
    workers_per_instance: int | None = None
    endpoint_url: str | None = None
    # The inputs start with a header row: it is no record; its names reach the model.
    header: bool = False
    selection: InputSelection = EVERY_INPUT
    skip_blank_lines: bool = False
    overwrite: bool = False
    resume: bool = False


def validate_job(job: LocalJob) -> None:
    """Checks that depend on more than one setting of a local job (names the option)."""
    if isinstance(job.shards, int) and job.shards < 1:
        raise ValidationError(f"--shards must be at least 1 or 'auto', not {job.shards}")
    if job.merge and job.shards is None:
        raise ValidationError("--merge joins the outputs of shards: it needs --shards")
    _check_engine_needs(job)
    if job.header:
        check_header_type(job.settings)
    if job.skip_blank_lines:
        check_skip_blank_lines(job.settings.split_type)
    check_sharding(
        job.settings,
        split=None if job.shards is None else "--shards",
        merge="--merge" if job.merge else None,
        name=lambda key: "--" + key.replace("_", "-"),
    )


def _check_engine_needs(job: LocalJob) -> None:
    """The endpoint engine needs ``--endpoint-url`` and no ``--model``; the others the
    reverse."""
    if job.engine == "endpoint":
        if not job.endpoint_url:
            raise ValidationError(
                "--engine endpoint needs --endpoint-url http://HOST:PORT: the server whose "
                "/invocations scores the input"
            )
        if job.model is not None:
            raise ValidationError(
                "--model is not used with --engine endpoint: the server at --endpoint-url "
                "serves its own model; leave --model out"
            )
        endpoint_client(job.endpoint_url, job.settings)  # a malformed URL, before any work
        endpoint_settings(job.settings)  # C8: what a real-time endpoint accepts
        return
    if job.endpoint_url:
        raise ValidationError(
            f"--endpoint-url is only for --engine endpoint, not --engine {job.engine}"
        )
    if job.model is None:
        raise ValidationError(f"--engine {job.engine} needs --model (a directory or model.tar.gz)")
