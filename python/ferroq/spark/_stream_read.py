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
from ferroq.spark._read import StreamRange, _id_key, position_id, stream_range_batches, stream_ranges

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


Offset = dict[str, Any]


def _newest(info: dict[str, Any]) -> Offset | None:
    """The offset after every entry a stream (its XINFO STREAM) has received so far; None if it does not exist."""
    if not info:
        return None
    return _offset(_id(info['last-generated-id']), int(info['entries-added']) if 'entries-added' in info else None)


def _offset(entry_id: str, read: int | None) -> Offset:
    """An offset: the id of the last entry planned and, when the server counts them (Redis >= 7.0), how many
    entries the stream had received up to it (its logical read counter: XINFO GROUPS' entries-read)."""
    return {'id': entry_id} if read is None else {'id': entry_id, 'read': read}


class StreamsReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, plan: Plan, schema: StructType) -> None:
        self.plan = plan
        self.schema = schema
        self.key = keys.stream_key(plan.target.name)
        self.group = plan.group or 'spark'
        self.lock_key = keys.spark_lock(keys.spark_prefix('stream', plan.target.name), plan.consumer)
        # This query instance (the streaming source runner keeps one reader object per query run).
        self.instance = uuid.uuid4().hex
        self._initial: Offset | None = None
        self._latest: Offset | None = None
        self._until: Offset | None = None

    # --- planning (the driver's source runner) ---

    def initialOffset(self) -> Offset:
        # Spark calls this twice on a new query; the first answer is kept so both agree.
        if self._initial is None:
            start = self.plan.starting_position
            raw = _conn.raw(self.plan.connection)
            info = stream_info(raw, self.key)
            added = int(info['entries-added']) if 'entries-added' in info else None
            if not info:
                self._initial = _offset(BEFORE_ALL, 0)
            elif start == 'latest':
                self._initial = _offset(_id(info['last-generated-id']), added)
            else:
                first = _id(info.get('max-deleted-entry-id', BEFORE_ALL))
                at = first if start == 'earliest' else max(first, _before(position_id(start, end=False)), key=_id_key)
                after = int(info['length']) if at == first else self._step(raw, at, None, '+')[1]
                self._initial = _offset(at, None if added is None else added - after)
        return self._initial

    def _step(self, raw: _conn.Raw, begin: str, rows: int | None, bound: str) -> tuple[str, int]:
        """The id of the last of at most ``rows`` entries (all with None) after ``begin`` and up to ``bound``,
        and how many there are; the script pages through them without sending them back."""
        end, count = begin, 0
        while rows is None or count < rows:
            step = ADVANCE_STEP if rows is None else min(ADVANCE_STEP, rows - count)
            last, n = raw.script('stream_advance-1', [self.key], [end, step, bound])
            if int(n):
                end, count = _id(last), count + int(n)
            if int(n) < step:
                break
        return end, count

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.plan.max_records_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self._until = _newest(stream_info(_conn.raw(self.plan.connection), self.key))

    def latestOffset(self, start: Offset | None = None, limit: ReadLimit | None = None) -> Offset:
        raw = _conn.raw(self.plan.connection)
        begin = start or self._latest or self.initialOffset()
        self._hold_lock(raw, begin['id'])
        info = stream_info(raw, self.key)  # once per poll: for the loss check and the newest entry
        self._check_loss(info, begin['id'])
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.plan.max_records_per_trigger
        if isinstance(limit, ReadAllAvailable):
            rows = None
        end = self._advance(raw, begin, rows, self._until or _newest(info))
        self._hold_lock(raw, begin['id'], end['id'])
        self._latest = end
        return end

    def _advance(self, raw: _conn.Raw, begin: Offset, rows: int | None, newest: Offset | None) -> Offset:
        """The end of the batch after ``begin``: up to ``rows`` entries, all of them (up to ``newest``) with no
        limit; ``begin`` when there is none."""
        if newest is None or _id_key(newest['id']) <= _id_key(begin['id']):
            return begin
        if rows is None:
            return newest
        if 'read' in begin and 'read' in newest and newest['read'] - begin['read'] <= rows:
            return newest  # everything left fits (entries added since, deleted ones included): no scan
        end, n = self._step(raw, begin['id'], rows, newest['id'])
        read = begin.get('read')
        return _offset(end, None if read is None else read + n)

    def reportLatestOffset(self) -> Offset | None:
        """The newest entry, and ``lag``: how many entries the stream received after the last planned batch."""
        newest = _newest(stream_info(_conn.raw(self.plan.connection), self.key))
        if newest is None:
            return None
        planned = (self._latest or {}).get('read')
        if 'read' in newest and planned is not None:
            newest['lag'] = max(0, newest['read'] - planned)
        return newest

    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        lo, hi = start['id'], end['id']
        if _id_key(lo) >= _id_key(hi):
            return []
        return stream_ranges(lo, hi, self.plan.num_partitions, lo_exclusive=True)

    def commit(self, end: Offset) -> None:
        raw = _conn.raw(self.plan.connection)
        if end['id'] != BEFORE_ALL:
            raw.script('group_commit-1', [self.key], [self.group, end['id'], end.get('read', '')])

    def stop(self) -> None:
        raw = _conn.raw(self.plan.connection)
        _lock.free(raw, self.lock_key, self.instance)

    def _hold_lock(self, raw: _conn.Raw, start: str, end: str | None = None) -> None:
        what = f'{self.plan.target} as consumer {self.plan.consumer!r}'
        _lock.hold(raw, self.lock_key, self.instance, what, start, end)

    def _check_loss(self, info: dict[str, Any], begin: str) -> None:
        if not self.plan.fail_on_data_loss:
            return
        deleted = info.get('max-deleted-entry-id')
        if deleted is not None and _id_key(_id(deleted)) > _id_key(begin):
            raise DataLoss(
                f'entries of {self.plan.target} after {begin} were trimmed or deleted before this query read '
                f'them (up to {_id(deleted)}): set failOnDataLoss to false to go on from what is left'
            )

    # --- reading (executors) ---

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StreamRange)
        # The query is one consumer of its group, and each entry is delivered to it once: a batch replayed
        # after a failure is the same delivery (as a topic's ledger is the same claim).
        yield from stream_range_batches(self.plan.connection, self.plan.target.name, partition, self.schema, 1)
