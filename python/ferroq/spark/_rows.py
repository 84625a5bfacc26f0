"""Messages as DataFrame rows: the schema of a read, and Arrow batches built from what Redis returned.

A message is a flat map of string fields. A read's columns are its fields, each cast from the string form
the writer gave it (see the README's table: integers, floats, decimals, booleans, ISO-8601 times, JSON for
nested types), plus the metadata columns below. A column the user declares is read from the field of the
same name; a field nobody declared is left out; a missing field is null.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ferroq.exceptions import InvalidArgument, InvalidMessage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = [
    'BATCH_ROWS',
    'METADATA',
    'Row',
    'check_schema',
    'decode_body',
    'default_schema',
    'field_names',
    'to_batch',
    'typed_batch',
]

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
        # Timestamps as UTC instants: pyspark refuses to map TimestampType without a time zone.
        return to_arrow_schema(schema, timezone='UTC')
    except (TypeError, ValueError, NotImplementedError) as exc:  # pyspark's errors for a type Arrow cannot hold
        raise InvalidArgument(f'the schema cannot be read through Arrow: {exc}') from None


def field_names(schema: StructType) -> list[str]:
    """The message fields a read of ``schema`` needs: its columns that are not metadata, in order."""
    return list(dict.fromkeys(f.name for f in schema.fields if f.name not in METADATA))


def to_batch(rows: Sequence[Row], schema: StructType, source: str) -> pa.RecordBatch:
    """One Arrow batch of ``rows`` in the layout of ``schema``; ``source`` fills ``_topic``."""
    import pyarrow as pa

    names = field_names(schema)
    fetched = pa.RecordBatch.from_arrays(
        [pa.array([r.id for r in rows], pa.utf8()), pa.array([r.deliveries for r in rows], pa.int64())]
        + [pa.array([r.fields.get(n) for r in rows], pa.binary()) for n in names],
        names=['_id', '_deliveries', *names],
    )
    return typed_batch(
        fetched, schema, source, lambda _ids: pa.array([r.published for r in rows], pa.timestamp('us', tz='UTC'))
    )


def typed_batch(
    fetched: pa.RecordBatch, schema: StructType, source: str, published: Callable[[pa.Array], pa.Array]
) -> pa.RecordBatch:
    """The batch of ``schema`` from what a read fetched: ``_id``, ``_deliveries`` (0 when absent) and binary
    field columns (what ``fetch_arrow`` / ``range_arrow`` return). ``published`` makes ``_published`` from
    the ids; ``source`` fills ``_topic``."""
    import pyarrow as pa

    arrow = _arrow_schema(schema)
    ids = fetched.column('_id')
    arrays = []
    for f in arrow:
        if f.name == '_id':
            arrays.append(ids.cast(f.type))
        elif f.name == '_published':
            arrays.append(published(ids).cast(f.type))
        elif f.name == '_deliveries':
            has = fetched.schema.get_field_index('_deliveries') >= 0
            arrays.append(
                fetched.column('_deliveries').cast(f.type) if has else pa.repeat(pa.scalar(0, f.type), len(ids))
            )
        elif f.name == '_topic':
            arrays.append(pa.repeat(pa.scalar(source, f.type), len(ids)))
        else:
            arrays.append(_column(fetched.column(f.name), f.type, f.name, ids))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow)


def _column(values: pa.Array, dtype: pa.DataType, name: str, ids: pa.Array) -> pa.Array:
    """The field ``name`` (a binary column, null where missing) as a ``dtype`` column: binary as stored, text
    decoded, the rest cast from their string forms (nested types from JSON)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = pa.types
    if t.is_binary(dtype) or t.is_large_binary(dtype):
        return values.cast(dtype)
    texts = _texts(values, name, ids)
    if t.is_string(dtype) or t.is_large_string(dtype):
        return texts.cast(dtype)
    if t.is_list(dtype) or t.is_large_list(dtype) or t.is_struct(dtype) or t.is_map(dtype):
        objs = []
        for i, text in enumerate(texts.to_pylist()):
            try:
                objs.append(None if text is None else json.loads(text))
            except ValueError:
                raise _bad(name, ids[i].as_py(), dtype, 'not JSON') from None
        try:
            return pa.array(objs, dtype)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InvalidMessage(f'field {name!r} does not fit the declared type {dtype}: {exc}') from None
    if t.is_boolean(dtype):
        texts = pc.utf8_lower(texts)
    try:
        return texts.cast(dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        for i, text in enumerate(texts.to_pylist()):
            if text is not None and not _casts(text, dtype):
                raise _bad(name, ids[i].as_py(), dtype, repr(text[:80])) from None
        raise InvalidMessage(f'field {name!r} cannot be read as {dtype}: {exc}') from None


def _texts(values: pa.Array, name: str, ids: pa.Array) -> pa.Array:
    """A binary column as utf8; InvalidMessage naming the first message whose field is not UTF-8."""
    import pyarrow as pa

    try:
        return values.cast(pa.utf8())
    except pa.ArrowInvalid:
        for i, value in enumerate(values.to_pylist()):
            if value is not None and not _is_utf8(value):
                raise InvalidMessage(
                    f'field {name!r} of message {ids[i].as_py()} is not UTF-8 text: declare the column as binary'
                ) from None
        raise


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True


def _casts(text: str, dtype: Any) -> bool:
    import pyarrow as pa

    try:
        pa.array([text], pa.string()).cast(dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _bad(name: str, msg_id: str, dtype: Any, what: str) -> InvalidMessage:
    return InvalidMessage(f'field {name!r} of message {msg_id} cannot be read as {dtype}: {what}')
