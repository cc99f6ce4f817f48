"""Which transform settings allow pre-splitting inputs and merging shard outputs: one rule
for ``batchinfer run`` and the pipeline's Plan, each naming its own options."""

from collections.abc import Callable

from batchinfer.errors import ValidationError
from batchinfer.transform.settings import TransformSettings

_SPLIT_REASON = (
    "with SplitType None each file is one request, and splitting it would change what the "
    "model sees"
)
_MERGE_REASON = (
    "with None, responses are concatenated without separators and the records of adjacent "
    "shards would run together"
)


def check_sharding(
    settings: TransformSettings,
    *,
    split: str | None,
    merge: str | None,
    name: Callable[[str], str] = str,
) -> None:
    """Refuse splitting without SplitType Line (R6: what a record is under each SplitType) and
    merging without AssembleWith Line (R13: AssembleWith decides what goes between responses).
    Parquet is the exception both ways: its input splits into whole row groups, and its
    outputs merge into one file of all their row groups. ``split`` and ``merge`` name the
    option that asked for each (None when not asked); ``name`` spells a settings key as the
    caller's interface does."""
    if split is not None and settings.split_type != "Line" and not settings.parquet_in:
        raise ValidationError(
            f"{split}: needs {name('split_type')} Line (not {settings.split_type!r}); "
            f"{_SPLIT_REASON}"
        )
    if merge is not None and settings.assemble_with != "Line" and not settings.answers_parquet:
        raise ValidationError(
            f"{merge}: needs {name('assemble_with')} Line (not {settings.assemble_with!r}); "
            f"{_MERGE_REASON}"
        )
