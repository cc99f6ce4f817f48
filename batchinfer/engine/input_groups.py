"""Each input of a local job and the units the engine runs for it: the input itself, or
the shards it is pre-split into (``--shards``), and what became of it once they ran."""

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from batchinfer.engine.inputs import (
    InputFile,
)
from batchinfer.engine.job_result import INTERRUPTED, FileResult, rate
from batchinfer.engine.job_spec import LocalJob
from batchinfer.engine.outcomes import FileOutcome
from batchinfer.engine.previous_run import (
    input_version,
)
from batchinfer.engine.s3_staging import S3Staging
from batchinfer.errors import BatchInferError, InputError
from batchinfer.sharding import plan_shards, shard_name, split
from batchinfer.sharding.auto import parquet_split, requested_shards
from batchinfer.sharding.local_files import LocalSource, kernel_copy
from batchinfer.sharding.parquet_split import file_footer
from batchinfer.sharding.splitter import splits_as_gzip
from batchinfer.transform.assemble import output_name
from batchinfer.transform.bad_records import errors_name, renumbered
from batchinfer.transform.file_transform import FileStats
from batchinfer.transform.parquet_files import data_span, joined_footer
from batchinfer.transform.parquet_footer import MAGIC, ParquetError


@dataclass
class InputGroup:
    """One input file and the units (itself, or its shards) the engine runs for it."""

    source: InputFile
    units: list[InputFile]
    merged: bool
    shards: int | None = None  # how many shards it was split into, None when not split
    error: str | None = None  # why it could not be split

    def result(
        self, outcomes: dict[str, FileOutcome], job: LocalJob, unit_dir: Path, merge_dir: Path
    ) -> FileResult:
        """What became of the input, its outputs named relative to ``unit_dir`` (or, merged,
        to ``merge_dir``); a unit without an outcome was interrupted."""
        parts = [outcomes[unit.name] for unit in self.units if unit.name in outcomes]
        interrupted = not self.error and len(parts) < len(self.units)
        errors = [self.error] if self.error else [p.error for p in parts if p.error]
        if interrupted:
            errors = ["interrupted (Ctrl-C) before it was done"]
        stats = [p.stats for p in parts if p.stats is not None]
        allowance = job.settings.bad_record_allowance
        set_aside = sum(s.records_quarantined for s in stats)
        if not errors and allowance is not None and set_aside > allowance:  # over its shards
            errors = [
                f"{self.source.name}: {set_aside} records set aside, more than "
                f"max_bad_records {allowance}"
            ]
        if errors:
            for unit in self.units:  # R19: nothing of a failed input stays, not even good shards
                (unit_dir / output_name(unit.name)).unlink(missing_ok=True)
                (unit_dir / errors_name(output_name(unit.name))).unlink(missing_ok=True)
        elif self.merged:
            join = join_parquet if job.settings.answers_parquet else _concatenate
            join([p.output for p in parts], merge_dir / output_name(self.source.name))
            _merge_errors(parts, merge_dir / errors_name(output_name(self.source.name)), self)
        seconds = max((s.seconds for s in stats), default=0.0)
        records_in = None if errors else _sum_or_none([s.records_in for s in stats])
        quarantined = None if errors else set_aside
        if errors:
            outputs = []
        elif self.merged:
            outputs = [output_name(self.source.name)]
            outputs += [errors_name(outputs[0])] if quarantined else []
        else:
            outputs = [
                name
                for p in parts
                for name in _unit_outputs(p.output.relative_to(unit_dir).as_posix(), p.stats)
            ]
        records_out = None if errors else _sum_or_none([s.records_out for s in stats])
        return FileResult(
            name=self.source.name,
            input=self.source.where,
            outputs=outputs,
            status=INTERRUPTED if interrupted else "FAILED" if errors else "SUCCEEDED",
            records_in=records_in,
            records_out=records_out,
            records_quarantined=None if allowance is None else quarantined,
            records_not_counted=(
                job.settings.records_not_counted if records_in is not None else None
            ),
            bytes_in=sum(s.bytes_in for s in stats),
            bytes_out=sum(s.bytes_out for s in stats),
            seconds=round(seconds, 3),
            rows_per_second=rate(records_in, seconds),
            shards=self.shards,
            instances=sorted({p.instance + 1 for p in parts}),
            error="; ".join(str(e) for e in errors) or None,
            input_version=input_version(self.source),
        )


def _unit_outputs(output: str, stats: FileStats | None) -> list[str]:
    """A unit's output and, when it set records aside, their errors file."""
    quarantined = stats is not None and stats.records_quarantined > 0
    return [output, errors_name(output)] if quarantined else [output]


def _merge_errors(parts: list[FileOutcome], target: Path, group: InputGroup) -> None:
    """The errors files of an input's units as one, their records numbered in the input."""
    before, merged = 0, []
    for part in parts:
        assert part.stats is not None
        if part.stats.records_quarantined:
            errors = part.output.with_name(errors_name(part.output.name)).read_bytes()
            merged.append(renumbered(errors, group.source.name, before))
        before += part.stats.records_in
    if merged:
        with _written(target) as out:
            out.write(b"".join(merged))


def _sum_or_none(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def split_inputs(
    files: list[InputFile],
    job: LocalJob,
    workdir: Path,
    on_stage: Callable[[str], None],
    staging: S3Staging | None = None,
) -> list[InputGroup]:
    """Pre-split every input that is worth splitting (``--shards``) with the sharding library
    (S3 objects of ``staging``). An input that cannot be split fails alone; the others still
    run (R19)."""
    if job.shards is None and not job.header:
        return [InputGroup(f, [f], merged=False) for f in files]
    on_stage("split")
    groups = []
    for file in files:
        asked = _split_asked(file, job)
        if file.size == 0 or (asked is None and not job.header):  # a split drops a header
            groups.append(InputGroup(file, [file], merged=job.merge))
            continue
        try:
            units = _shard_units(file, asked or {"shards": 1}, job, workdir, staging)
        except BatchInferError as exc:
            groups.append(InputGroup(file, [], merged=job.merge, error=str(exc)))
            continue
        if asked is None:  # only its header dropped: it keeps its name, as an unsplit input
            groups.append(InputGroup(file, [replace(units[0], name=file.name)], job.merge))
            continue
        groups.append(InputGroup(file, units, merged=job.merge, shards=len(units)))
    return groups


def _split_asked(file: InputFile, job: LocalJob) -> dict[str, int] | None:
    """What ``--shards`` asks of ``file``, as :func:`split`'s ``shards`` or ``shard_size``
    (None: it stays whole)."""
    if job.settings.parquet_in:
        return parquet_split(file.size, job.shards, job.settings.resolve().max_payload_bytes)
    count = requested_shards(file.size, job.shards, job.settings.instance_count)
    return None if count == 1 else {"shards": count}


def _shard_units(
    file: InputFile,
    asked: dict[str, int],
    job: LocalJob,
    workdir: Path,
    staging: S3Staging | None,
) -> list[InputFile]:
    """``file`` cut into the shards ``asked`` (fewer when records are longer). A
    plain file's shards are byte ranges of it, read in place (by either engine: a local
    processing instance is handed them beside its input directory); gzip input is
    re-chunked and Parquet input cut into standalone files of whole row groups, written by
    :func:`split` under ``workdir``. A plain S3 object's shards are fetched when taken
    (``staging``); a gzip or Parquet one is fetched whole first. The input itself when
    nothing could be cut."""
    parent = Path(file.name).parent
    gzip = splits_as_gzip(str(file.path), job.settings.compression_type)
    copied = gzip or job.settings.parquet_in
    if staging is not None and not copied:
        return staging.shard_units(file, asked["shards"], header=job.header)
    if copied:
        if file.fetch is not None:
            file.fetch()
        index = split(
            str(file.path),
            str(workdir / "shards" / file.name),
            header=job.header,
            compression_type=job.settings.compression_type,
            shards=asked.get("shards"),
            shard_size=asked.get("shard_size"),
        )
        units = [  # a shard's uri is the source itself when nothing could be cut
            InputFile(Path(shard.uri), (parent / shard.name).as_posix()) for shard in index.shards
        ]
        if file.fetch is not None and file.path.resolve() not in {unit.path for unit in units}:
            file.path.unlink()  # the object's copy, re-chunked into the shards
        return units
    source = LocalSource(str(file.path))
    try:
        plan = plan_shards(
            source.size,
            source.read_range,
            shards=asked["shards"],
            header=job.header,
            source=str(file.path),
        )
    finally:
        source.close()
    if plan.whole_object:
        return [file]
    stem = Path(file.name).name
    return [
        InputFile(file.path, (parent / shard_name(stem, n)).as_posix(), start, end)
        for n, (start, end) in enumerate(plan.ranges)
    ]


def _concatenate(parts: list[Path], target: Path) -> None:
    """Write ``parts`` in order into ``target`` atomically, copying in the kernel."""
    with _written(target) as out:
        for part in parts:
            with part.open("rb") as src:
                size = os.fstat(src.fileno()).st_size
                kernel_copy(src.fileno(), out.fileno(), 0, size, source=str(part))


def join_parquet(parts: list[Path], target: Path) -> None:
    """Write the Parquet files ``parts`` as one, atomically: their row groups in order,
    copied in the kernel, under a footer that lists them all
    (:func:`batchinfer.transform.parquet_files.joined_footer`)."""
    try:
        footers = [file_footer(str(part)) for part in parts]
        tail = joined_footer(footers, [str(part) for part in parts])
    except ParquetError as exc:
        raise InputError(f"cannot merge into {target.name}: {exc}") from None
    with _written(target) as out:
        out.write(MAGIC)
        out.flush()
        for part, footer in zip(parts, footers, strict=True):
            start, end = data_span(footer)
            with part.open("rb") as src:
                kernel_copy(src.fileno(), out.fileno(), start, end, source=str(part))
        out.write(tail)


@contextmanager
def _written(target: Path) -> Iterator[BinaryIO]:
    """A file that becomes ``target`` when the block ends without an error."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("wb") as out:
            yield out
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
