"""How far one file's scoring through an endpoint has got: a small JSON object, so that a
run that must stop (a Lambda near its time limit) can be continued by another without
sending any record twice."""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.transform.file_transform import Answer, FileStats
from batchinfer.transform.records import Batch


@dataclass(frozen=True)
class Position:
    """Everything before ``input_bytes`` of the (decompressed) input has been scored: its
    ``records_in`` records went out in ``requests`` requests and came back as the first
    ``output_bytes`` bytes of the output (``records_out`` records), and ``records_quarantined``
    set aside as the first ``errors_bytes`` bytes of the errors file. The next request starts
    with record ``records_in + 1`` at byte ``input_bytes``. ``done``: the whole input is
    scored."""

    input_bytes: int = 0
    records_in: int = 0
    requests: int = 0
    output_bytes: int = 0
    records_out: int = 0
    done: bool = False
    # Records set aside (``bad_records`` quarantine) and the bytes of the errors file so far.
    records_quarantined: int = 0
    errors_bytes: int = 0

    def after(self, batch: Batch, answer: Answer) -> "Position":
        """The position once ``batch`` has been answered with ``answer``."""
        return replace(
            self,
            input_bytes=self.input_bytes + batch.input_bytes,
            records_in=self.records_in + batch.record_count,
            requests=self.requests + 1,
            output_bytes=self.output_bytes + len(answer.output),
            records_out=self.records_out + (answer.records or 0),
            records_quarantined=self.records_quarantined + answer.quarantined,
            errors_bytes=self.errors_bytes + len(answer.errors),
        )

    def stats(self, *, seconds: float, records_counted: bool) -> FileStats:
        """The file's totals as a transform engine reports them; ``records_out`` is None
        unless output records are counted (``TransformSettings.counts_records``)."""
        return FileStats(
            records_in=self.records_in,
            records_out=self.records_out if records_counted else None,
            bytes_in=self.input_bytes,
            bytes_out=self.output_bytes,
            requests=self.requests,
            seconds=seconds,
            records_quarantined=self.records_quarantined,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Position":
        """A position that :meth:`to_json` wrote; ValidationError names a bad key."""
        if not isinstance(data, Mapping):
            raise ValidationError(f"position: {data!r} is not a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValidationError(
                f"position: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(known))}"
            )
        for key, value in data.items():
            if key == "done":
                if not isinstance(value, bool):
                    raise ValidationError(f"position: done: {value!r} is not true or false")
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(f"position: {key}: {value!r} is not a whole number >= 0")
        return cls(**data)


START = Position()
