"""Reply shapes shared by the operations of every protocol."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, TypeVar

T = TypeVar('T')


def pairs(flat: list[T]) -> dict[T, T]:
    it = iter(flat)
    return dict(zip(it, it))


def record_count(record: bytes | None) -> int:
    """The delivery count at the head of a message's record (``<count>[ ...]``), 0 if it has none."""
    if not record:
        return 0
    head = record.split(b'\n', 1)[0].split(b' ', 1)[0]
    return int(head) if head.isdigit() else 0


def arrow_batch(ids: list[str], columns: dict[str, list[Any]], deliveries: list[int] | None = None) -> Any:
    """``_id`` (utf8), ``_deliveries`` (int64) if given, then the binary ``columns``: a pyarrow RecordBatch."""
    import pyarrow as pa

    arrays = [pa.array(ids, pa.utf8())]
    names = ['_id']
    if deliveries is not None:
        arrays.append(pa.array(deliveries, pa.int64()))
        names.append('_deliveries')
    arrays += [pa.array(values, pa.binary()) for values in columns.values()]
    return pa.RecordBatch.from_arrays(arrays, names=names + list(columns))


def ms_time(value: object) -> datetime | None:
    if value is None or value is False:
        return None
    return datetime.fromtimestamp(float(str(value)) / 1000, timezone.utc)
