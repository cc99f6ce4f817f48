"""moto's S3 made quicker for the whole suite, with nothing it answers changed but how long it
takes (internals of the moto release ``tests/support/moto_version.py`` names; another fails at
import, as ``tests/support/offline/moto_fixes.py`` does).

- ``ListObjectsV2`` without a delimiter: moto gathers, filters and sorts every object of the
  bucket for each page it answers, then walks the sorted list from its start to the page's
  first key, a ``FakeKey`` fetched and compared at a time: a listing of 100,000 objects in
  pages of 1,000 made a hundred such passes. Here each page sorts the bucket's key names
  (strings, sorted in C), finds its start by bisection and fetches only the keys it answers;
  a listing with a delimiter, a negative MaxKeys or a continuation token moto never gave
  goes to moto's own.
- Timestamps in answers: moto reads every timestamp it serialises back through botocore's
  ``parse_to_aware_datetime`` (dateutil's parser, about 63 µs a value; a fifth of a 100,000
  object listing). An ISO 8601 timestamp of the form moto writes is read with the standard
  library instead, to the same instant in UTC; any other value goes to botocore's reader.

``tests/integration/pipeline/test_quick_s3.py`` checks both against moto's own code on the same
buckets and values."""

import bisect
import re
from datetime import UTC, datetime
from typing import Any

import moto
import moto.core.serialize
from botocore.utils import parse_to_aware_datetime
from moto.s3.models import FakeDeleteMarker, FakeTableStorageBucket, S3Backend

from tests.support.moto_version import require_moto

require_moto("tests/support/quick_s3.py", "S3's listing and the serialiser's timestamps")

MOTOS_LIST_OBJECTS_V2 = S3Backend.list_objects_v2
# A date, a time to the second, at most six digits of its fraction, and an offset or none.
_ISO_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?", re.ASCII
)


def _list_objects_v2(
    self: S3Backend,
    bucket: Any,
    prefix: str | None,
    delimiter: str | None,
    continuation_token: str | None,
    start_after: str | None,
    max_keys: int,
) -> Any:
    """moto's ``list_objects_v2``'s answer for a listing without a delimiter, one page's
    keys fetched."""
    if (
        delimiter
        or max_keys < 0
        or isinstance(bucket, FakeTableStorageBucket)
        or (continuation_token and continuation_token not in self._pagination_tokens)
    ):
        return MOTOS_LIST_OBJECTS_V2(
            self, bucket, prefix, delimiter, continuation_token, start_after, max_keys
        )
    store = bucket.keys
    names = sorted(name for name in list(dict.keys(store)) if name.startswith(prefix or ""))
    after = self._pagination_tokens[continuation_token] if continuation_token else start_after
    keys: list[Any] = []
    for name in names[bisect.bisect_right(names, after) if after else 0 :]:
        versions = dict.get(store, name)
        if not versions or isinstance(versions[-1], FakeDeleteMarker):
            continue
        keys.append(versions[-1])
        if len(keys) > max_keys:  # one more than a page: moto's truncation decides the rest
            break
    return self._truncate_result(keys, max_keys)


def aware_datetime(value: Any) -> datetime:
    """``value`` as botocore's ``parse_to_aware_datetime`` reads it, an ISO 8601 timestamp
    without dateutil."""
    if isinstance(value, str) and _ISO_TIMESTAMP.fullmatch(value):
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    return parse_to_aware_datetime(value)


def quicken_moto_s3() -> None:
    """From now on, moto's S3 lists and its answers' timestamps take the quick paths above."""
    S3Backend.list_objects_v2 = _list_objects_v2  # type: ignore[method-assign]
    moto.core.serialize.parse_to_aware_datetime = aware_datetime  # type: ignore[attr-defined]
