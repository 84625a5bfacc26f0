"""Messages as DataFrame rows: the schema of a read, and Arrow batches built from what Redis returned.

A message is a flat map of string fields. A read's columns are its fields, each cast from the string form
the writer gave it (see the README's table: integers, floats, decimals, booleans, ISO-8601 times, JSON for
nested types), plus the metadata columns below. A column the user declares is read from the field of the
same name; a field nobody declared is left out; a missing field is null.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ferroq.exceptions import InvalidArgument, InvalidMessage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ['BATCH_ROWS', 'METADATA', 'Row', 'check_schema', 'decode_body', 'default_schema', 'to_batch']

#: Rows per Arrow batch a reader yields.
BATCH_ROWS = 10_000

#: The metadata columns and their Spark SQL types, in the order a default schema lists them.
METADATA: dict[str, str] = {
    '_id': 'string',
    '_published': 'timestamp',
    '_deliveries': 'bigint',
    '_topic': 'string',
}


def _spark_type(name: str) -> Any:
    from pyspark.sql import types

    return {'string': types.StringType, 'timestamp': types.TimestampType, 'bigint': types.LongType}[name]()


@dataclass
class Row:
    """One message as read: its id, fields (raw bytes), publish time and delivery count."""

    id: str
    fields: dict[str, bytes]
    published: datetime | None
    deliveries: int


def decode_body(body: bytes) -> dict[str, bytes]:
    """The fields of an RSMQ message body: a JSON object's members (a non-string member as its JSON text),
    or else the whole body as the field ``value``. The writers send rows as such objects."""
    if body[:1] == b'{':
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return {
                str(k): (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(',', ':'))).encode()
                for k, v in obj.items()
                if v is not None
            }
    return {'value': body}


def default_schema(samples: Iterable[Row]) -> StructType:
    """Every field seen in ``samples`` as a string column (first seen first), then the metadata columns."""
    from pyspark.sql.types import StringType, StructField, StructType

    names: dict[str, None] = {}
    for row in samples:
        for name in row.fields:
            if name not in METADATA:
                names.setdefault(name)
    columns = [StructField(n, StringType()) for n in names]
    return StructType(columns + [StructField(n, _spark_type(t)) for n, t in METADATA.items()])


def check_schema(schema: StructType) -> None:
    """A declared schema's metadata columns must have their own types; every type must map to Arrow."""
    for f in schema.fields:
        if f.name in METADATA and f.dataType != _spark_type(METADATA[f.name]):
            raise InvalidArgument(
                f'column {f.name} is metadata of type {METADATA[f.name]}, declared as {f.dataType.simpleString()}'
            )
    _arrow_schema(schema)


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        # Spark reads an Arrow timestamp with a zone as an instant: UTC, as the writers send them.
        return to_arrow_schema(schema, timezone='UTC')
    except (TypeError, ValueError, NotImplementedError) as exc:  # pyspark's errors for a type Arrow cannot hold
        raise InvalidArgument(f'the schema cannot be read through Arrow: {exc}') from None


def to_batch(rows: Sequence[Row], schema: StructType, source: str) -> pa.RecordBatch:
    """One Arrow batch of ``rows`` in the layout of ``schema``; ``source`` fills ``_topic``."""
    import pyarrow as pa

    arrow = _arrow_schema(schema)
    arrays = []
    for f in arrow:
        if f.name == '_id':
            arrays.append(pa.array([r.id for r in rows], f.type))
        elif f.name == '_published':
            arrays.append(pa.array([r.published for r in rows], f.type))
        elif f.name == '_deliveries':
            arrays.append(pa.array([r.deliveries for r in rows], f.type))
        elif f.name == '_topic':
            arrays.append(pa.array([source] * len(rows), f.type))
        else:
            arrays.append(_column([r.fields.get(f.name) for r in rows], f.type, f.name, rows))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow)


def _column(values: list[bytes | None], dtype: pa.DataType, name: str, rows: Sequence[Row]) -> pa.Array:
    """The field ``name`` of every row as a ``dtype`` column: binary as stored, text decoded, the rest cast
    from their string forms (nested types from JSON)."""
    import pyarrow as pa

    t = pa.types
    if t.is_binary(dtype) or t.is_large_binary(dtype):
        return pa.array(values, dtype)
    texts = [_text(v, name, rows, i) for i, v in enumerate(values)]
    if t.is_string(dtype) or t.is_large_string(dtype):
        return pa.array(texts, dtype)
    if t.is_list(dtype) or t.is_large_list(dtype) or t.is_struct(dtype) or t.is_map(dtype):
        objs = []
        for i, text in enumerate(texts):
            try:
                objs.append(None if text is None else json.loads(text))
            except ValueError:
                raise _bad(name, rows[i], dtype, 'not JSON') from None
        try:
            return pa.array(objs, dtype)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InvalidMessage(f'field {name!r} does not fit the declared type {dtype}: {exc}') from None
    if t.is_boolean(dtype):
        texts = [None if s is None else s.lower() for s in texts]
    try:
        return pa.array(texts, pa.string()).cast(dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        for row, text in zip(rows, texts):
            if text is not None and not _casts(text, dtype):
                raise _bad(name, row, dtype, repr(text[:80])) from None
        raise InvalidMessage(f'field {name!r} cannot be read as {dtype}: {exc}') from None


def _casts(text: str, dtype: Any) -> bool:
    import pyarrow as pa

    try:
        pa.array([text], pa.string()).cast(dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _text(value: bytes | None, name: str, rows: Sequence[Row], i: int) -> str | None:
    if value is None:
        return None
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise InvalidMessage(
            f'field {name!r} of message {rows[i].id} is not UTF-8 text: declare the column as binary'
        ) from None


def _bad(name: str, row: Row, dtype: Any, what: str) -> InvalidMessage:
    return InvalidMessage(f'field {name!r} of message {row.id} cannot be read as {dtype}: {what}')
