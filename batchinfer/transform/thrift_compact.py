"""Thrift's compact protocol, read and written with the standard library: enough to read a
Parquet footer and to write one back with some of its fields changed.

A struct reads as a :class:`Struct`, each field's value kept with its wire type so that it
is written back as it came; a list reads as a :class:`List` of its values. Maps are read
and written too, though a Parquet footer has none.
"""

import struct
from dataclasses import dataclass, field
from typing import Any

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)


@dataclass
class List:
    """A list (or set) of values of one wire type."""

    kind: int
    items: list[Any]


@dataclass
class Map:
    """A map from keys of one wire type to values of another."""

    key_kind: int
    value_kind: int
    items: list[tuple[Any, Any]]


@dataclass
class Struct:
    """A struct: each field's wire type and value by its field id. A bool field's wire type
    is :data:`TRUE` whatever its value."""

    fields: dict[int, tuple[int, Any]] = field(default_factory=dict)

    def get(self, field_id: int, default: Any = None) -> Any:
        """The field's value (a :class:`Struct`, a :class:`List`, or a plain value)."""
        found = self.fields.get(field_id)
        return default if found is None else found[1]

    def __getitem__(self, field_id: int) -> Any:
        return self.fields[field_id][1]

    def set(self, field_id: int, kind: int, value: Any) -> None:
        self.fields[field_id] = (kind, value)

    def drop(self, *field_ids: int) -> None:
        for field_id in field_ids:
            self.fields.pop(field_id, None)


def read_struct(data: bytes, last_field: int | None = None) -> Struct:
    """The struct encoded in ``data``; IndexError, TypeError or struct.error when the bytes
    are not one. With ``last_field``, its fields up to that id alone: reading stops at the
    first field past it, so the bytes after may be left out of ``data``. Writers usually put
    a struct's fields in the order of their ids, but need not: a field written after a
    later one is then missing from the result."""
    return _Reader(data).struct(last_field)


def write_struct(value: Struct) -> bytes:
    """``value`` encoded, its fields in the order of their ids."""
    out = bytearray()
    _write_struct(out, value)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def struct(self, last_field: int | None = None) -> Struct:
        result = Struct()
        last = 0
        while True:
            header = self._byte()
            kind = header & 0x0F
            if kind == STOP:
                return result
            delta = header >> 4
            last = last + delta if delta else _zigzag(self._varint())
            if last_field is not None and last > last_field:
                return result
            if kind in (TRUE, FALSE):  # a bool field carries its value in its type
                result.set(last, TRUE, kind == TRUE)
            else:
                result.set(last, kind, self._value(kind))

    def _value(self, kind: int) -> Any:
        if kind in (TRUE, FALSE):  # a bool in a list takes a byte
            return self._byte() == TRUE
        if kind == BYTE:
            return self._byte()
        if kind in (I16, I32, I64):
            return _zigzag(self._varint())
        if kind == DOUBLE:
            self._at += 8
            return struct.unpack_from("<d", self._data, self._at - 8)[0]
        if kind == BINARY:
            size = self._varint()
            self._at += size
            if self._at > len(self._data):
                raise IndexError("binary past the end")
            return self._data[self._at - size : self._at]
        if kind in (LIST, SET):
            header = self._byte()
            size = header >> 4 if header >> 4 != 15 else self._varint()
            return List(header & 0x0F, [self._value(header & 0x0F) for _ in range(size)])
        if kind == MAP:
            size = self._varint()
            types = self._byte() if size else 0
            key_kind, value_kind = types >> 4, types & 0x0F
            pairs = [(self._value(key_kind), self._value(value_kind)) for _ in range(size)]
            return Map(key_kind, value_kind, pairs)
        if kind == STRUCT:
            return self.struct()
        raise TypeError(f"unknown compact type {kind}")

    def _byte(self) -> int:
        value = self._data[self._at]
        self._at += 1
        return value

    def _varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7


def _write_struct(out: bytearray, value: Struct) -> None:
    last = 0
    for field_id in sorted(value.fields):
        kind, item = value.fields[field_id]
        wire = (TRUE if item else FALSE) if kind == TRUE else kind
        delta = field_id - last
        if 0 < delta <= 15:
            out.append(delta << 4 | wire)
        else:
            out.append(wire)
            _write_varint(out, _to_zigzag(field_id))
        if kind != TRUE:
            _write_value(out, kind, item)
        last = field_id
    out.append(STOP)


def _write_value(out: bytearray, kind: int, value: Any) -> None:
    if kind in (TRUE, FALSE):
        out.append(TRUE if value else FALSE)
    elif kind == BYTE:
        out.append(value & 0xFF)
    elif kind in (I16, I32, I64):
        _write_varint(out, _to_zigzag(value))
    elif kind == DOUBLE:
        out += struct.pack("<d", value)
    elif kind == BINARY:
        _write_varint(out, len(value))
        out += value
    elif kind in (LIST, SET):
        size = len(value.items)
        if size < 15:
            out.append(size << 4 | value.kind)
        else:
            out.append(0xF0 | value.kind)
            _write_varint(out, size)
        for item in value.items:
            _write_value(out, value.kind, item)
    elif kind == MAP:
        _write_varint(out, len(value.items))
        if value.items:
            out.append(value.key_kind << 4 | value.value_kind)
        for key, item in value.items:
            _write_value(out, value.key_kind, key)
            _write_value(out, value.value_kind, item)
    elif kind == STRUCT:
        _write_struct(out, value)
    else:
        raise TypeError(f"unknown compact type {kind}")


def _write_varint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _to_zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)
