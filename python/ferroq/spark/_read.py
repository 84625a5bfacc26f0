"""Batch reads (``spark.read.format('ferroq')``): a peek at what a queue holds, consuming nothing.

Planned on the driver, read in parallel by the executors:

- **topic**: the backlog's ids are copied server-side (COPY, one script) to a snapshot LIST that expires
  after an hour; each partition reads an index range of it (oldest first: the order consumers claim in)
  and the bodies and delivery counts of those ids. The driver never holds the ids.
- **RSMQ queue**: the same with a snapshot of the queue's ZSET (in order of visibility time).
- **stream**: entries between ``startingPosition`` and ``endingPosition`` (fixed when the read is planned),
  the time range split evenly into partitions, each read with XRANGE in pages. A stream counts deliveries
  only for the entries a consumer group has pending: with the ``group`` option, ``_deliveries`` is that
  group's count (XPENDING over the same page), else 0.

Every action re-plans, so ``count()`` then ``collect()`` may see different contents of a changing queue:
``.cache()`` the DataFrame for one consistent snapshot.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from ferroq.exceptions import QueueNotFound
from ferroq.protocol import keys
from ferroq.spark import _conn
from ferroq.spark._options import Connection, Plan
from ferroq.spark._rows import BATCH_ROWS, Row, decode_body, field_names, to_batch, typed_batch
from ferroq.types import published_at, rsmq_sent

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from ferroq.typing import TopicProtocol

    #: The delivery counts of a page of entries: a constant, or a function of the page's ids.
    Deliveries = int | Callable[[pa.Array], pa.Array] | None

__all__ = [
    'StreamRange',
    'reader',
    'sample',
    'stream_range_batches',
    'stream_ranges',
    'stream_span',
    'topic_batch',
    'topic_batches',
]

#: How long a batch read's snapshot is kept: its tasks must all start within it.
SNAPSHOT_TTL_MS = 3_600_000
#: Ids or entries fetched per round trip by a reading task.
PAGE = 1000
#: 1582-10-15 (the uuid1 epoch) in microseconds since 1970-01-01.
UUID_EPOCH_OFFSET_US = 12_219_292_800_000_000
#: The largest sequence number of a stream id.
MAX_SEQ = 2**64 - 1


@dataclass(frozen=True)
class Span(InputPartition):
    """Positions [lo, hi) of a snapshot, in consumption order."""

    snapshot: str
    lo: int
    hi: int


@dataclass(frozen=True)
class StreamRange(InputPartition):
    """Entries of a stream from ``lo`` to ``hi``, XRANGE bounds (``(`` marks an exclusive one)."""

    lo: str
    hi: str


def reader(plan: Plan, schema: StructType) -> DataSourceReader:
    return _Reader(plan, schema)


class _Reader(DataSourceReader):
    def __init__(self, plan: Plan, schema: StructType) -> None:
        self.plan = plan
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        plan, target = self.plan, self.plan.target
        raw = _conn.raw(plan.connection)
        if target.kind == 'stream':
            if plan.group is not None:
                check_group(raw, target.name, plan.group)
            span = stream_span(raw, target.name, plan.starting_position, plan.ending_position)
            if span is None:
                return [StreamRange('+', '-')]  # an empty range: XRANGE + - returns nothing
            return stream_ranges(span[0], span[1], plan.num_partitions)
        prefix = keys.spark_prefix(target.kind, target.name, target.ns)
        snapshot = keys.spark_snapshot(prefix, uuid.uuid4().hex)
        source = keys.rfq_backlog(target.name) if target.kind == 'topic' else keys.rsmq_queue(target.ns, target.name)
        n = int(raw.script('snapshot-2', [source, snapshot], [SNAPSHOT_TTL_MS]))
        parts = max(1, min(plan.num_partitions, n))
        return [Span(snapshot, n * i // parts, n * (i + 1) // parts) for i in range(parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        plan, target = self.plan, self.plan.target
        raw = _conn.raw(plan.connection)
        if isinstance(partition, StreamRange):
            deliveries = _pending_counts(raw, target.name, plan.group) if plan.group is not None else None
            yield from stream_range_batches(plan.connection, target.name, partition, self.schema, deliveries)
        elif not isinstance(partition, Span):
            raise TypeError(f'not a partition of this reader: {partition!r}')
        elif target.kind == 'topic':
            yield from topic_batches(plan.connection, target.name, _snapshot_ids(raw, partition), self.schema)
        else:
            yield from batches(_rsmq_rows(raw, target.ns, target.name, partition), self.schema, target.name)


def batches(rows: Iterator[Row], schema: StructType, source: str) -> Iterator[pa.RecordBatch]:
    """``rows`` as Arrow batches of at most BATCH_ROWS rows in the layout of ``schema``."""
    out: list[Row] = []
    for row in rows:
        out.append(row)
        if len(out) == BATCH_ROWS:
            yield to_batch(out, schema, source)
            out = []
    if out:
        yield to_batch(out, schema, source)


def sample(plan: Plan, n: int = 100) -> list[Row]:
    """The first ``n`` messages a reader would see, for the default schema (the clients' own peeks)."""
    target = plan.target
    if target.kind == 'stream':
        entries = _conn.native(plan.connection).stream(target.name).range('-', '+', count=n)
        return [Row(e.id, _encoded(e.fields), e.published, 0) for e in entries]
    if target.kind == 'topic':
        peeked = _conn.native(plan.connection).topic(target.name).inspect('backlog', 0, n)
        return [Row(e.id, _encoded(e.fields), published_at(e.id), e.deliveries) for e in peeked if e.fields]
    raw = _conn.raw(plan.connection)
    head: list[bytes] = raw.call('zrange', keys.rsmq_queue(target.ns, target.name), 0, n - 1)
    return list(_rsmq_bodies(raw, target.ns, target.name, head))


def _encoded(fields: dict[str, str]) -> dict[str, bytes]:
    return {k: v.encode() for k, v in fields.items()}


# --- topics ------------------------------------------------------------------------------------------


def _snapshot_ids(raw: _conn.Raw, span: Span) -> Iterator[list[str]]:
    """The ids of a snapshot's positions [lo, hi) in consumption order, in pages of BATCH_ROWS."""
    # Position p in consumption order is index -(p + 1) of the LIST: the oldest id is at its tail.
    for lo in range(span.lo, span.hi, BATCH_ROWS):
        hi = min(lo + BATCH_ROWS, span.hi)
        ids: list[bytes] = raw.call('lrange', span.snapshot, -hi, -lo - 1)
        yield [i.decode() for i in reversed(ids)]


def topic_batches(
    conn: Connection, topic: str, pages: Iterable[list[str]], schema: StructType, held: bool = False
) -> Iterator[pa.RecordBatch]:
    """The messages of each page of ids that still exist, a batch of ``schema`` per page (none if empty).
    ``held``: the reader's own claims hold them all (``Topic.fetch_arrow``'s option)."""
    handle = _conn.native(conn).topic(topic)
    for ids in pages:
        batch = topic_batch(handle, ids, schema, topic, held)
        if batch.num_rows:
            yield batch


def topic_batch(
    handle: TopicProtocol, ids: list[str], schema: StructType, topic: str, held: bool = False
) -> pa.RecordBatch:
    """The messages of ``ids`` that still exist (``Topic.fetch_arrow``) as a batch of ``schema``."""
    return typed_batch(handle.fetch_arrow(ids, field_names(schema), held=held), schema, topic, _rfq_published)


def _rfq_published(ids: pa.Array) -> pa.Array:
    """The publish times of rfq ids, what :func:`ferroq.types.published_at` gives each: the time of a uuid1
    in hex, null for another kind of id. Vectorised for ids of 32 hex digits; others go one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    hexed = pc.utf8_lower(ids)
    if not pc.all(pc.match_substring_regex(hexed, '^[0-9a-f]{32}$')).as_py():
        return pa.array([published_at(i) for i in ids.to_pylist()], pa.timestamp('us', tz='UTC'))
    digits = pa.array(list('0123456789abcdef'))

    def number(*spans: tuple[int, int]) -> pa.Array:
        value: Any = pa.scalar(0, pa.int64())
        for lo, hi in spans:
            for k in range(lo, hi):
                digit = pc.index_in(pc.utf8_slice_codeunits(hexed, k, k + 1), value_set=digits).cast(pa.int64())
                value = pc.add(pc.multiply(value, 16), digit)
        return value

    # uuid1: time_low (digits 0-7), time_mid (8-11), version (12), time_hi (13-15), variant (16).
    ticks = number((13, 16), (8, 12), (0, 8))  # 100 ns since 1582-10-15
    micros = pc.subtract(pc.divide(ticks, 10), UUID_EPOCH_OFFSET_US)
    rfc4122_v1 = pc.and_(
        pc.equal(pc.utf8_slice_codeunits(hexed, 12, 13), '1'),
        pc.is_in(pc.utf8_slice_codeunits(hexed, 16, 17), value_set=pa.array(list('89ab'))),
    )
    return pc.if_else(rfc4122_v1, micros.cast(pa.timestamp('us', tz='UTC')), None)


# --- RSMQ queues ---------------------------------------------------------------------------------------


def _rsmq_rows(raw: _conn.Raw, ns: str, qname: str, span: Span) -> Iterator[Row]:
    for lo in range(span.lo, span.hi, PAGE):
        hi = min(lo + PAGE, span.hi)
        ids: list[bytes] = raw.call('zrange', span.snapshot, lo, hi - 1)
        yield from _rsmq_bodies(raw, ns, qname, ids)


def _rsmq_bodies(raw: _conn.Raw, ns: str, qname: str, ids: list[bytes]) -> Iterator[Row]:
    if not ids:
        return
    wanted: list[bytes] = []
    for i in ids:
        wanted += [i, i + b':rc']
    values: list[bytes | None] = raw.run(lambda r: r.hmget(keys.rsmq_hash(ns, qname), wanted))
    for n, i in enumerate(ids):
        body, rc = values[2 * n], values[2 * n + 1]
        if body is not None:
            mid = i.decode()
            sent_ms = rsmq_sent(mid)  # NaN for an id that is not RSMQ's
            sent = None if math.isnan(sent_ms) else datetime.fromtimestamp(sent_ms / 1000, tz=timezone.utc)
            yield Row(mid, decode_body(body), sent, int(rc or 0))


# --- streams -----------------------------------------------------------------------------------------


def _first_last(raw: _conn.Raw, key: str) -> tuple[str, str] | None:
    def ends(r: Any) -> tuple[list[Any], list[Any]]:
        pipe = r.pipeline(transaction=False)
        pipe.xrange(key, '-', '+', count=1)
        pipe.xrevrange(key, '+', '-', count=1)
        first, last = pipe.execute()
        return first, last

    first, last = raw.run(ends)
    if not first or not last:
        return None
    return first[0][0].decode(), last[0][0].decode()


def position_id(position: str, end: bool) -> str:
    """An entry id for an explicit ``startingPosition``/``endingPosition``: an id as given (``<ms>`` alone
    is ``<ms>-0`` at the start, ``<ms>-<max>`` at the end), an ISO-8601 time as its millisecond."""
    if position[:1].isdigit() and 'T' not in position and ':' not in position:
        ms, sep, seq = position.partition('-')
        if not sep:
            return f'{ms}-{MAX_SEQ if end else 0}'
        return f'{int(ms)}-{int(seq)}'
    when = datetime.fromisoformat(position)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return f'{int(when.timestamp() * 1000)}-{MAX_SEQ if end else 0}'


def stream_span(raw: _conn.Raw, stream: str, start: str, end: str) -> tuple[str, str] | None:
    """The first and last ids to read (inclusive), or None when nothing lies between the positions."""
    ends = _first_last(raw, keys.stream_key(stream))
    if ends is None:
        return None
    lo = ends[0] if start == 'earliest' else max(position_id(start, end=False), ends[0], key=_id_key)
    hi = ends[1] if end == 'latest' else min(position_id(end, end=True), ends[1], key=_id_key)
    if _id_key(lo) > _id_key(hi):
        return None
    return lo, hi


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition('-')
    return int(ms), int(seq or 0)


def stream_ranges(lo: str, hi: str, parts: int, lo_exclusive: bool = False) -> list[StreamRange]:
    """[lo, hi] (or (lo, hi]) cut into at most ``parts`` ranges of equal time."""
    lo_ms, hi_ms = _id_key(lo)[0], _id_key(hi)[0]
    parts = max(1, min(parts, hi_ms - lo_ms + 1))
    bounds = [lo_ms + (hi_ms - lo_ms + 1) * i // parts for i in range(1, parts)]
    starts = [('(' if lo_exclusive else '') + lo] + [f'{b}-0' for b in bounds]
    stops = [f'({b}-0' for b in bounds] + [hi]
    return [StreamRange(a, b) for a, b in zip(starts, stops)]


def stream_range_batches(
    conn: Connection, stream: str, part: StreamRange, schema: StructType, deliveries: Deliveries = None
) -> Iterator[pa.RecordBatch]:
    """The entries of ``part`` as batches of ``schema``, BATCH_ROWS per XRANGE (``Stream.range_arrow``), with
    ``_deliveries`` from ``deliveries`` (0 when None)."""
    import pyarrow as pa

    handle = _conn.native(conn).stream(stream)
    names = field_names(schema)
    lo = part.lo
    while True:
        fetched = handle.range_arrow(lo, part.hi, BATCH_ROWS, names)
        if fetched.num_rows:
            if deliveries is not None:
                ids = fetched.column('_id')
                counts = (
                    deliveries(ids) if callable(deliveries) else pa.repeat(pa.scalar(deliveries, pa.int64()), len(ids))
                )
                fetched = fetched.append_column('_deliveries', counts)
            yield typed_batch(fetched, schema, stream, _stream_published)
        if fetched.num_rows < BATCH_ROWS:
            return
        lo = '(' + fetched.column('_id')[-1].as_py()


def check_group(raw: _conn.Raw, stream: str, group: str) -> None:
    """Raises QueueNotFound unless ``stream`` has the consumer group ``group``."""
    key = keys.stream_key(stream)
    groups = raw.call('xinfo_groups', key) if raw.call('exists', key) else []
    if not any(g['name'] == group.encode() for g in groups):
        raise QueueNotFound(f'stream {stream!r} has no consumer group {group!r} (option group)')


def _pending_counts(raw: _conn.Raw, stream: str, group: str) -> Callable[[pa.Array], pa.Array]:
    """``_deliveries`` of a page of entries: the group's delivery count of those it has pending, else 0."""
    import pyarrow as pa

    key = keys.stream_key(stream)

    def counts(ids: pa.Array) -> pa.Array:
        page = ids.to_pylist()
        pending = raw.call('xpending_range', key, group, page[0], page[-1], len(page))
        by_id = {p['message_id'].decode(): p['times_delivered'] for p in pending}
        return pa.array([by_id.get(i, 0) for i in page], pa.int64())

    return counts


def _stream_published(ids: pa.Array) -> pa.Array:
    """The times of stream ids (``<ms>-<seq>``), vectorised."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ms = pc.list_element(pc.split_pattern(ids, '-', max_splits=1), 0)
    return ms.cast(pa.int64()).cast(pa.timestamp('ms', tz='UTC'))
