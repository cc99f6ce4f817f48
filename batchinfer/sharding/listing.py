"""The objects a job over an S3 prefix takes, listed page by page (spec R4: a key prefix or a
ManifestFile selects the input objects): every object under the prefix, or those a request names,
as the job's selection selects them."""

from collections.abc import Iterator
from typing import Any

from batchinfer.errors import InputError
from batchinfer.sharding.selection import (
    EVERY_INPUT,
    InputSelection,
    Selector,
    under_prefix,
)
from batchinfer.uris import S3Location


def list_objects(s3: Any, location: S3Location) -> Iterator[dict[str, Any]]:
    """Every object whose key starts with ``location.key`` (a literal prefix, spec R4)."""
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=location.bucket, Prefix=location.key):
        yield from page.get("Contents", [])


def named_objects(
    s3: Any, location: S3Location, names: tuple[str, ...]
) -> Iterator[dict[str, Any]]:
    """The object ``location.key`` + name for each of ``names`` (as a ManifestFile names
    them, spec R4), as :func:`list_objects` lists it: one ListObjectsV2 with that key as the
    prefix, whose first key is the object itself when it exists. InputError naming the
    first name without an object."""
    for number, name in enumerate(names):
        key = location.key + name
        page = s3.list_objects_v2(Bucket=location.bucket, Prefix=key, MaxKeys=1)
        found = page.get("Contents", [])
        if not found or found[0]["Key"] != key:
            raise InputError(f"names[{number}]: no object s3://{location.bucket}/{key}")
        yield found[0]


def input_objects(
    s3: Any,
    source: S3Location,
    names: tuple[str, ...] | None = None,
    selection: InputSelection = EVERY_INPUT,
) -> Iterator[dict[str, Any]]:
    """The objects a run of ``source`` takes (folder markers left out), listed page by page,
    or only those ``names`` gives (each must exist); each as ``selection`` selects it
    (hidden and ``_``-prefixed keys are inputs only when named, :mod:`selection`). Once the
    listing ends, InputError when there were none or only empty ones, saying what was left
    out."""
    count = nonempty = 0
    selector = Selector(selection, "object")
    listed = list_objects(s3, source) if names is None else named_objects(s3, source, names)
    for obj in listed:
        if obj["Key"].endswith("/"):  # folder markers made by consoles
            continue
        name, named = under_prefix(source.key, obj["Key"])
        if not selector.takes(name, len(name) if names is not None else named):
            continue
        count += 1
        nonempty += obj["Size"] > 0
        yield obj
    if not count:
        raise InputError(f"input: no objects under {source.uri}{selector.left_out()}")
    if not nonempty:
        raise InputError(f"input: every object under {source.uri} is empty")
