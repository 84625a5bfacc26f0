"""Streaming reads of a Streams topic (``spark.readStream.format('ferroq').option('stream', ...)``).

Offsets are entry ids: ``{"id": X}`` means every entry up to X has been planned. A micro-batch is the
entries in (start, end], read by the executors with XRANGE, so a batch replayed after a failure reads the
same entries. When Spark commits a batch, the consumer group (``group``, ``spark`` by default) moves its
last-delivered id to the batch's end: XINFO GROUPS, its lag and ``ferroq stream`` show the query's real
progress. Only one live query may read as a given ``consumer`` of a stream (a lock renewed at every poll).

Entries trimmed or deleted before the query read them are data loss: the query fails, unless
``failOnDataLoss`` is false (then it goes on from what is left). Detecting it needs Redis 7.0's
``max-deleted-entry-id``; on older servers nothing is detected.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from ferroq.exceptions import DataLoss, FerroqError
from ferroq.protocol import keys
from ferroq.spark import _conn, _lock
from ferroq.spark._options import Plan
from ferroq.spark._read import StreamRange, _id_key, batches, position_id, read_stream_range, stream_ranges

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ['StreamsReader', 'stream_info']

#: Entries the planner steps over per script call when a batch has a row limit.
ADVANCE_STEP = 10_000
BEFORE_ALL = '0-0'


def stream_info(raw: _conn.Raw, key: str) -> dict[str, Any]:
    """XINFO STREAM as a dict of str to the reply's values; {} when the stream does not exist."""
    try:
        reply = raw.run(lambda r: r.execute_command('XINFO', 'STREAM', key, NEVER_DECODE=True))
    except FerroqError as exc:
        if 'no such key' in str(exc):
            return {}
        raise
    if isinstance(reply, dict):
        items = list(reply.items())
    else:
        items = list(zip(reply[::2], reply[1::2]))
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in items}


def _id(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _before(entry_id: str) -> str:
    """The id right before ``entry_id``: an offset from which ``entry_id`` is the next to read."""
    ms, seq = _id_key(entry_id)
    if seq > 0:
        return f'{ms}-{seq - 1}'
    if ms > 0:
        return f'{ms - 1}-{2**64 - 1}'
    return BEFORE_ALL


class StreamsReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, plan: Plan, schema: StructType) -> None:
        self.plan = plan
        self.schema = schema
        self.key = keys.stream_key(plan.target.name)
        self.lock_key = keys.spark_lock(keys.spark_prefix('stream', plan.target.name), plan.consumer)
        # This query instance (the streaming source runner keeps one reader object per query run).
        self.instance = uuid.uuid4().hex
        self._initial: str | None = None
        self._latest: str | None = None
        self._until: str | None = None

    # --- planning (the driver's source runner) ---

    def initialOffset(self) -> dict[str, str]:
        # Spark calls this twice on a new query; the first answer is kept so both agree.
        if self._initial is None:
            start = self.plan.starting_position
            info = stream_info(_conn.raw(self.plan.connection), self.key)
            if start == 'earliest':
                self._initial = _id(info.get('max-deleted-entry-id', BEFORE_ALL)) if info else BEFORE_ALL
            elif start == 'latest':
                self._initial = _id(info['last-generated-id']) if info else BEFORE_ALL
            else:
                self._initial = _before(position_id(start, end=False))
        return {'id': self._initial}

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.plan.max_records_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        info = stream_info(_conn.raw(self.plan.connection), self.key)
        self._until = _id(info['last-generated-id']) if info else BEFORE_ALL

    def latestOffset(self, start: dict[str, str] | None = None, limit: ReadLimit | None = None) -> dict[str, str]:
        raw = _conn.raw(self.plan.connection)
        begin = (start or {}).get('id') or self._latest or self.initialOffset()['id']
        self._hold_lock(raw, begin)
        self._check_loss(raw, begin)
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.plan.max_records_per_trigger
        if isinstance(limit, ReadAllAvailable):
            rows = None
        end = self._advance(raw, begin, rows)
        self._hold_lock(raw, begin, end)
        self._latest = end
        return {'id': end}

    def _advance(self, raw: _conn.Raw, begin: str, rows: int | None) -> str:
        """The id of the last entry of the batch after ``begin`` (``begin`` when there is none)."""
        bound = self._until or '+'
        end = begin
        left = rows
        while left is None or left > 0:
            step = ADVANCE_STEP if left is None else min(ADVANCE_STEP, left)
            last, n = raw.script('stream_advance-1', [self.key], [end, step, bound])
            if not n:
                break
            end = _id(last)
            if left is not None:
                left -= int(n)
            if int(n) < step:
                break
        return end

    def reportLatestOffset(self) -> dict[str, str] | None:
        info = stream_info(_conn.raw(self.plan.connection), self.key)
        return {'id': _id(info['last-generated-id'])} if info else None

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        lo, hi = start['id'], end['id']
        if _id_key(lo) >= _id_key(hi):
            return []
        return stream_ranges(lo, hi, self.plan.num_partitions, lo_exclusive=True)

    def commit(self, end: dict[str, str]) -> None:
        raw = _conn.raw(self.plan.connection)
        if end['id'] != BEFORE_ALL:
            raw.script('group_commit-1', [self.key], [self.plan.group, end['id']])

    def stop(self) -> None:
        raw = _conn.raw(self.plan.connection)
        _lock.free(raw, self.lock_key, self.instance)

    def _hold_lock(self, raw: _conn.Raw, start: str, end: str | None = None) -> None:
        what = f'{self.plan.target} as consumer {self.plan.consumer!r}'
        _lock.hold(raw, self.lock_key, self.instance, what, start, end)

    def _check_loss(self, raw: _conn.Raw, begin: str) -> None:
        if not self.plan.fail_on_data_loss:
            return
        info = stream_info(raw, self.key)
        deleted = info.get('max-deleted-entry-id')
        if deleted is not None and _id_key(_id(deleted)) > _id_key(begin):
            raise DataLoss(
                f'entries of {self.plan.target} after {begin} were trimmed or deleted before this query read '
                f'them (up to {_id(deleted)}): set failOnDataLoss to false to go on from what is left'
            )

    # --- reading (executors) ---

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StreamRange)
        raw = _conn.raw(self.plan.connection)
        yield from batches(read_stream_range(raw, self.plan.target.name, partition), self.schema, self.plan.target.name)
