"""Which files a local job reads, and the name each output keeps (spec R4: a key prefix or a
ManifestFile selects the input objects; R12: each input object gives one output named after it),
and the header row they share.

An input is a file, a directory (every file below it, recursively, with its sub-path kept as
the output name, but for hidden and ``_``-prefixed ones: :mod:`batchinfer.sharding.selection`)
or a SageMaker ManifestFile (``[{"prefix": ...}, "rel1", ...]``) whose prefix is a local
directory. S3 inputs are listed by :mod:`batchinfer.engine.s3_inputs` and read per shard by
:mod:`batchinfer.engine.s3_staging`.
"""

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchinfer.errors import InputError, ValidationError
from batchinfer.media_types import PARQUET, media_type
from batchinfer.sharding.header import read_header_line
from batchinfer.sharding.local_files import LocalSource
from batchinfer.sharding.selection import EVERY_INPUT, InputSelection, Selector
from batchinfer.sharding.splitter import splits_as_gzip
from batchinfer.transform.csv_dialect import (
    header_names,
    same_header,
    with_header,
)
from batchinfer.transform.parquet_footer import MAGIC
from batchinfer.transform.settings import TransformSettings

GZIP_MAGIC = b"\x1f\x8b"
# Content types under which gzip bytes are the data itself, meant for the model.
GZIP_CONTENT_TYPES = frozenset({"application/gzip", "application/x-gzip"})


@dataclass(frozen=True)
class InputFile:
    path: Path
    name: str  # the object key relative to the input prefix; the output is ``name + ".out"``
    # A shard of a plain local file is its byte range [start, end) of ``path``, not a copy;
    # ``end`` None: to the end of the file.
    start: int = 0
    end: int | None = None
    # The s3:// URI of the object that ``path`` stands for (the object, or the unit's bytes
    # of it), and that object's ETag; None for a local input.
    origin: str | None = None
    etag: str | None = None
    # Writes ``path`` (bytes of an S3 object) before it is read; None when it is there.
    fetch: Callable[[], None] | None = field(default=None, compare=False, repr=False)

    @property
    def where(self) -> str:
        """Where the input was read from, as messages and the manifest name it."""
        return self.origin or str(self.path)

    @property
    def size(self) -> int:
        end = self.path.stat().st_size if self.end is None else self.end
        return end - self.start


# The files an engine runs, or a function giving them that the engine calls once its model
# servers are starting, so that work such as pre-splitting overlaps their start-up.
Units = list[InputFile] | Callable[[], list[InputFile]]


def resolve_units(units: Units) -> list[InputFile]:
    """The files ``units`` stands for."""
    return units() if callable(units) else units


def save_ranges(files: Iterable[InputFile], path: Path) -> None:
    """Write the byte ranges of local files ``files`` to ``path`` (JSON), for
    :func:`load_ranges` in another process: shards read in place, not copied."""
    ranges = [
        {"path": str(f.path.resolve()), "name": f.name, "start": f.start, "end": f.end}
        for f in files
    ]
    path.write_text(json.dumps(ranges))


def load_ranges(path: Path) -> list[InputFile]:
    """The input files :func:`save_ranges` wrote to ``path``; a ValidationError naming the
    file (and the entry at fault) when it cannot be read as such."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValidationError(f"--input-ranges {path}: cannot be read as JSON: {exc}") from None
    if not isinstance(entries, list):
        raise ValidationError(f"--input-ranges {path}: not a JSON list of byte ranges")
    return [_byte_range(entry, path, n) for n, entry in enumerate(entries)]


def _byte_range(entry: Any, path: Path, n: int) -> InputFile:
    fields = entry if isinstance(entry, dict) else {}
    start, end = fields.get("start"), fields.get("end")
    if not (
        isinstance(fields.get("path"), str)
        and isinstance(fields.get("name"), str)
        and type(start) is int
        and start >= 0
        and "end" in fields  # null: to the end of the file; never left out
        and (end is None or (type(end) is int and end >= start))
    ):
        raise ValidationError(
            f"--input-ranges {path}: entry {n} is not "
            f'{{"path": str, "name": str, "start": int >= 0, "end": int >= start or null}}: '
            f"{json.dumps(entry)[:200]}"
        )
    return InputFile(Path(fields["path"]), fields["name"], start, end)


# What the checks of the inputs' first bytes read an input through: a LocalSource of its
# path, or the S3Source of its object (:mod:`batchinfer.sharding`'s sources).
OpenSource = Callable[[InputFile], Any]


def local_source(file: InputFile) -> LocalSource:
    """``file``'s path, opened for ranged reads."""
    return LocalSource(str(file.path))


def is_manifest(path: Path) -> bool:
    return path.suffix == ".manifest" or path.name.endswith(".manifest.json")


def manifest_entries(path: Path) -> tuple[str, list[str]]:
    """A ManifestFile's ``prefix`` and the relative paths it lists after it (R4)."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable ManifestFile: {exc}") from exc
    if not (isinstance(entries, list) and entries and isinstance(entries[0], dict)):
        raise InputError(f'{path}: a ManifestFile is a JSON array starting with {{"prefix": ...}}')
    prefix = entries[0].get("prefix")
    if not isinstance(prefix, str):
        raise InputError(f"{path}: entry 0 has no string 'prefix'")
    for number, rel in enumerate(entries[1:], start=1):
        if not isinstance(rel, str) or not rel:
            raise InputError(f"{path}: entry {number} is not a relative path: {rel!r}")
    return prefix, entries[1:]


def read_manifest(path: Path) -> list[InputFile]:
    """The files a ManifestFile whose prefix is a local directory lists: ``prefix`` + each
    relative path (R4)."""
    prefix, rels = manifest_entries(path)
    if prefix.startswith("s3://"):
        raise InputError(
            f"{path}: prefix {prefix} is in S3; give S3 inputs alone, without local ones"
        )
    files = []
    for number, rel in enumerate(rels, start=1):
        file = Path(prefix + rel) if prefix.endswith("/") else Path(prefix) / rel
        if not file.is_file():
            raise InputError(f"{path}: entry {number} names {file}, which is not a file")
        files.append(InputFile(file, rel))
    return files


def collect_inputs(
    paths: list[Path],
    selection: InputSelection = EVERY_INPUT,
    *,
    every_file: bool = False,
    leave_out: Path | None = None,
) -> list[InputFile]:
    """Expand files, directories and manifests into input files, sorted by name, as
    ``selection`` selects them: below a directory, hidden and ``_``-prefixed files and
    folders are not inputs, unless ``every_file`` (a processing job's input directory holds
    only what its job put there); a file named as such, or by a manifest, always is. Below
    a directory, nothing in the folder ``leave_out`` (the job's output) is an input."""
    selector = Selector(selection, "file")
    files: list[InputFile] = []
    for path in paths:
        if path.is_dir():
            inside = _inside(leave_out, path)
            for found in sorted(p for p in path.rglob("*") if p.is_file()):
                rel = found.relative_to(path).as_posix()
                if inside is not None and (rel + "/").startswith(inside):
                    continue
                if selector.takes(rel, len(rel) if every_file else 0):
                    files.append(InputFile(found, rel))
        elif path.is_file():
            listed = read_manifest(path) if is_manifest(path) else [InputFile(path, path.name)]
            files += [f for f in listed if selector.takes(f.name, len(f.name))]
        else:
            raise InputError(f"{path}: no such file or directory")
    if not files:
        raise InputError(f"no input files under {', '.join(map(str, paths))}{selector.left_out()}")
    check_distinct_names((file.name, str(file.path)) for file in files)
    return sorted(files, key=lambda f: f.name)


def check_distinct_names(named: Iterable[tuple[str, str]]) -> None:
    """Refuse two inputs, given as (name, where it is), that would write the same output
    (R12: each input object gives one output named after it)."""
    seen: dict[str, str] = {}
    for name, where in named:
        if name in seen:
            raise ValidationError(
                f"inputs {seen[name]} and {where} would both write {name}.out; "
                "give them distinct names"
            )
        seen[name] = where


def _inside(folder: Path | None, directory: Path) -> str | None:
    """``folder`` as a path relative to ``directory`` ending in ``/`` ("" for the directory
    itself), or None when it is not below it."""
    if folder is None:
        return None
    try:
        rel = folder.resolve().relative_to(directory.resolve()).as_posix()
    except ValueError:
        return None
    return "" if rel == "." else rel + "/"


def check_not_all_empty(files: list[InputFile], paths: Sequence[Path | str]) -> None:
    """Refuse inputs whose files are all empty, as the pipeline's Plan refuses a prefix whose
    objects all are (R4): such a job could only write empty outputs. An empty file among
    others is transformed into an empty output (R6: what a record is under each SplitType)."""
    if all(file.size == 0 for file in files):
        listed = ", ".join(file.name for file in files[:5]) + (", ..." if len(files) > 5 else "")
        raise InputError(f"every input file under {', '.join(map(str, paths))} is empty ({listed})")


def check_leading_bytes(
    files: list[InputFile], settings: TransformSettings, open_source: OpenSource = local_source
) -> None:
    """Refuse a file whose first bytes say it is not what the settings say it is: gzip
    (1f 8b) read with CompressionType None, whose compressed bytes would go to the model
    (never meant unless the content type is gzip itself); a Parquet file (PAR1) sent as
    another type, which would go to the model as text. Only each file's first 4 bytes are
    read, through ``open_source``. Files that cannot be read are left to fail on their own
    (R19: a file with any failed record gets no output)."""
    if settings.compression_type != "None" or media_type(settings.content_type) in (
        GZIP_CONTENT_TYPES
    ):
        return  # the bytes are (or are meant to be) compressed: their first say nothing more
    for file in files:
        try:
            source = open_source(file)
            try:
                head = source.read_range(0, min(len(MAGIC), source.size)) if source.size else b""
            finally:
                source.close()
        except (OSError, InputError):
            continue
        if head.startswith(GZIP_MAGIC):
            raise ValidationError(
                f"{file.where}: is gzip-compressed (starts with 1f 8b) but compression_type "
                "is None; set --compression-type Gzip to decompress it before the model"
            )
        check_not_parquet(head, file.where, settings)


def check_not_parquet(head: bytes, where: str, settings: TransformSettings) -> None:
    """Refuse a file whose first bytes ``head`` are Parquet's magic when the settings send
    it as another type."""
    if head.startswith(MAGIC) and not settings.parquet_in:
        raise ValidationError(
            f"{where}: is a Parquet file (starts with PAR1) but content_type is "
            f"{settings.content_type or 'not set (text/csv)'}; set --content-type "
            f"{PARQUET} (each file is then sent whole: --split-type None)"
        )


def header_settings(
    files: list[InputFile], settings: TransformSettings, open_source: OpenSource = local_source
) -> TransformSettings:
    """``settings`` telling the model server the names of the inputs' shared header (the
    first input's; InputError naming an input whose header differs), each read through
    ``open_source``. Unchanged when every input is empty: an empty input gives an empty
    output, and has no header."""
    first: tuple[str, list[str]] | None = None
    for file in (f for f in files if f.size):
        source = open_source(file)
        try:
            compressed = splits_as_gzip(str(file.path), settings.compression_type)
            line = read_header_line(source, compressed=compressed)
        finally:
            source.close()
        names = header_names(line, settings, source=file.where)
        if first is None:
            first = (file.where, names)
        else:
            same_header(first[1], names, first=first[0], source=file.where)
    return settings if first is None else with_header(settings, first[1])
