"""What an output place already holds when a local job starts, and what of it a job may
keep: a job never writes over what it did not write itself unless told to (``--overwrite``),
and ``--resume`` keeps the outputs of an earlier run of the same job that are whole.

An earlier run is known by its ``_manifest.json``: the job writes it as inputs are done,
not only at the end, so even a run killed outright leaves one naming what it finished.
"""

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.output_place import OutputPlace
from batchinfer.errors import OutputNotEmpty, ValidationError
from batchinfer.transform.assemble import RESULT_MANIFEST
from batchinfer.transform.bad_records import ERRORS_SUFFIX

# A job's working folder in a local output directory: ``.batchinfer-<pid>-<random>``.
WORKDIR_PREFIX = ".batchinfer-"
_LISTED = 3  # names shown when refusing a place that is not empty


@dataclass(frozen=True)
class EarlierRun:
    """The ``_manifest.json`` an earlier run left, as read back."""

    manifest: dict[str, Any]

    @property
    def digests(self) -> dict[str, str]:
        digests = self.manifest.get("digests")
        return digests if isinstance(digests, dict) else {}

    def files(self) -> list[dict[str, Any]]:
        files = self.manifest.get("files")
        return [f for f in files if isinstance(f, dict)] if isinstance(files, list) else []

    def outputs(self) -> dict[str, list[str]]:
        """The outputs it recorded, by input name."""
        return {str(f.get("name")): list(f.get("outputs") or []) for f in self.files()}


def check_place(place: OutputPlace, *, overwrite: bool, resume: bool) -> EarlierRun | None:
    """Refuse a place that holds files this job did not write, unless ``overwrite`` or
    ``resume``; then the earlier run its ``_manifest.json`` records (None when the place is
    empty, or with ``overwrite`` when there is no readable manifest). Working folders of
    jobs that are gone are removed; one of a job that runs is refused."""
    if overwrite and resume:
        raise ValidationError("--overwrite and --resume exclude each other: choose one")
    _remove_dead_workdirs(place)
    held = place.names()
    if not held:
        return None
    if resume or overwrite:
        text = place.read_text(RESULT_MANIFEST)
        try:
            manifest = json.loads(text) if text is not None else None
        except ValueError:
            manifest = None
        if isinstance(manifest, dict):
            return EarlierRun(manifest)
        if overwrite:
            return None
        raise ValidationError(
            f"--resume: {place.location} has no readable {RESULT_MANIFEST} of an earlier "
            "run to continue; choose an empty --output, or --overwrite"
        )
    listed = ", ".join(held[:_LISTED]) + (", ..." if len(held) > _LISTED else "")
    raise OutputNotEmpty(
        f"--output {place.location} already holds {len(held)} "
        f"file{'s' if len(held) != 1 else ''} ({listed}); pass --resume to continue the run "
        "that wrote them, --overwrite to replace what this run writes, or choose an empty "
        "--output"
    )


def _remove_dead_workdirs(place: OutputPlace) -> None:
    """Remove the working folders that jobs now gone left in the place (one killed with
    SIGKILL could not remove its own); refuse a place a job that runs is writing into."""
    parent = place.work_parent
    if parent is None or not parent.is_dir():
        return
    for folder in parent.glob(f"{WORKDIR_PREFIX}*"):
        pid = folder.name.removeprefix(WORKDIR_PREFIX).split("-", 1)[0]
        if not (folder.is_dir() and pid.isdigit()):
            continue
        if _running(int(pid)):
            raise OutputNotEmpty(
                f"--output {place.location} is being written by another run (process {pid}); "
                "wait for it, or choose another --output"
            )
        shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: running
        pass
    return True


def job_digests(settings: Mapping[str, Any], model: Path | str | None) -> dict[str, str]:
    """What a resumed run must share with the run it continues: the settings (those of the
    job's shape included) and the model's bytes (or the endpoint that scores)."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return {
        "settings": hashlib.sha256(text.encode()).hexdigest(),
        "model": model_digest(model),
    }


def model_digest(model: Path | str | None) -> str:
    """SHA-256 over a model directory's file names and bytes (a file's bytes alone; an
    endpoint's URL)."""
    digest = hashlib.sha256()
    if isinstance(model, str) or model is None:
        digest.update(str(model).encode())
        return digest.hexdigest()
    files = [model] if model.is_file() else sorted(p for p in model.rglob("*") if p.is_file())
    for path in files:
        digest.update(path.relative_to(model).as_posix().encode() + b"\0")
        with path.open("rb") as stream:
            digest.update(hashlib.file_digest(stream, "sha256").digest())
    return digest.hexdigest()


def input_version(file: InputFile) -> str:
    """What tells a changed input from the one an earlier run read: its size and mtime, or
    for an S3 object (or bytes of it fetched for a unit), the object's ETag."""
    if file.etag is not None:
        return f"etag-{file.etag}"
    stat = file.path.stat()
    return f"{stat.st_size}-{stat.st_mtime_ns}"


def check_same_job(earlier: EarlierRun, digests: Mapping[str, str], place: OutputPlace) -> None:
    """ValidationError when the settings or the model differ from those of the earlier run
    that ``--resume`` continues."""
    changed = [part for part, value in digests.items() if earlier.digests.get(part) != value]
    if changed:
        raise ValidationError(
            f"--resume: the {' and the '.join(changed)} differ from those of the run that "
            f"wrote {place.location}; run with the same ones, or --overwrite"
        )


def kept_files(
    earlier: EarlierRun, files: Iterable[InputFile], place: OutputPlace
) -> dict[str, dict[str, Any]]:
    """The earlier run's manifest entries to keep, by input name: inputs it finished whose
    outputs are whole in ``place`` and that have not changed since (an S3 input's ETag is
    the listing's: nothing of it is read). The job must be the same (:func:`check_same_job`)."""
    by_name = {file.name: file for file in files}
    kept = {}
    for entry in earlier.files():
        file = by_name.get(entry.get("name", ""))
        if (
            file is not None
            and entry.get("status") == "SUCCEEDED"
            and entry.get("input_version") == input_version(file)
            and _whole(entry, place)
        ):
            kept[file.name] = entry
    return kept


def _whole(entry: Mapping[str, Any], place: OutputPlace) -> bool:
    """Whether every output of ``entry`` is in ``place``, with the bytes it recorded (its
    errors files of records set aside are not counted in them: present is enough)."""
    names = entry.get("outputs", [])
    sizes = [place.size(name) for name in names]
    written = sum(
        size or 0
        for name, size in zip(names, sizes, strict=True)
        if not name.endswith(ERRORS_SUFFIX)
    )
    return None not in sizes and written == entry.get("bytes_out")
