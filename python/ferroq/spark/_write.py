"""Writes: ``df.write.format('ferroq')`` and ``df.writeStream.format('ferroq')``, one message per row.

Each task hands its partition's Arrow batches to the native client's ``publish_arrow`` (``send_arrow`` for
RSMQ): the rows are converted, encoded and sent by the Rust core with the GIL released, one atomic script
call per chunk of ``chunk_size`` rows.

**No duplicates from task retries.** A write job gets a random token when it is planned, and a task
publishes with the dedup key ``<job>:<partition>``: chunk k of the partition carries a marker derived from
that key and k, written in the same script as the chunk. A retried or speculative attempt of the task
finds the markers of the chunks already written and skips them, even when their messages were consumed
meanwhile. This assumes the partition yields the same rows in the same order again (true of files and
tables; not of ``rand()`` or an unordered shuffle): with other input, each chunk is still written once
(count exact), but a chunk's content is that of the attempt that wrote it first.

**Atomic writes** (``atomic``): the tasks stage their rows instead, as Arrow IPC streams in a LIST beside the
queue (``<queue prefix>:spark:stage:<job>:<partition>:<attempt>``, expiring after ``dedupTtl``), and nothing
is published before Spark commits the job. Then the driver publishes each successful attempt's stage, chunk
by chunk (the same dedup keys, so a commit repeated after a failure publishes nothing twice), and deletes
every stage of the job; an aborted job deletes them too, and those of attempts nobody committed expire.

**Streaming sink.** With ``sinkId``, a micro-batch is published under the dedup key
``sink:<sinkId>:<batchId>:<partition>``, and when Spark commits the batch the sink records its id
(``<queue prefix>:spark:sink:<sinkId>``). A batch replayed after a driver crash finds either that record
(and writes nothing) or the chunk markers of its first run: published once. Without ``sinkId`` the sink is
at-least-once: a replayed batch is published again.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from ferroq.exceptions import InvalidArgument
from ferroq.protocol import keys
from ferroq.spark import _conn
from ferroq.spark._options import Plan

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ['BatchWriter', 'StreamWriter', 'Written', 'check_columns']

log = logging.getLogger('ferroq.spark')

#: The local property Spark's micro-batch execution sets on every task of a batch.
BATCH_ID_PROPERTY = 'streaming.sql.batchId'


@dataclass
class Written(WriterCommitMessage):
    """What one task did: rows it read, messages it published (rows - published were already written), and
    in an atomic write the stage holding its rows (nothing published yet)."""

    partition: int
    rows: int
    published: int
    stage: str | None = None


def check_columns(plan: Plan, schema: StructType) -> None:
    """The columns the options name must exist with a usable type (checked before any task starts)."""
    from pyspark.sql.types import BinaryType, StringType

    names = {f.name: f.dataType for f in schema.fields}
    for option, column in (('valueColumn', plan.value_column), ('idColumn', plan.id_column)):
        if column is not None and column not in names:
            raise InvalidArgument(f'option {option}: the DataFrame has no column {column!r} (it has {list(names)})')
    if plan.value_column is not None:
        allowed = (StringType,) if plan.target.kind == 'rsmq' else (StringType, BinaryType)
        if not isinstance(names[plan.value_column], allowed):
            kind = names[plan.value_column].simpleString()
            must = 'string (RSMQ messages are text)' if plan.target.kind == 'rsmq' else 'string or binary'
            raise InvalidArgument(f'option valueColumn: column {plan.value_column!r} must be {must}, not {kind}')
    if not schema.fields:
        raise InvalidArgument('the DataFrame has no columns: a message needs at least one field')


def publish(plan: Plan, batches: Iterator[pa.RecordBatch], dedup_key: str | None) -> tuple[int, int]:
    """Publishes every row of ``batches`` to the plan's target; returns (rows, published)."""
    first = next(batches, None)
    if first is None:
        return 0, 0
    import pyarrow as pa

    stream = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches))
    client = _conn.native(plan.connection)
    target = plan.target
    common: dict[str, Any] = {'dedup_key': dedup_key, 'dedup_ttl': plan.dedup_ttl, 'value_column': plan.value_column}
    if target.kind == 'topic':
        result = client.topic(target.name).publish_arrow(stream, id_column=plan.id_column, **common)
    elif target.kind == 'rsmq':
        result = client.rsmq(target.name, ns=target.ns).send_arrow(stream, delay=plan.delay, **common)
    else:
        stream_handle = client.stream(target.name)
        result = stream_handle.publish_arrow(
            stream, maxlen=plan.maxlen, max_age=plan.max_age, approximate=plan.approximate, **common
        )
    return int(result[0]), int(result[1])


def _partition() -> int:
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _summary(messages: list[WriterCommitMessage | None]) -> str:
    done = [m for m in messages if isinstance(m, Written)]
    rows = sum(m.rows for m in done)
    published = sum(m.published for m in done)
    return f'{published} of {rows} rows published ({rows - published} already written by an earlier attempt)'


class BatchWriter(DataSourceArrowWriter):
    """``df.write``: each task publishes its partition directly, or stages it (``atomic``) for the driver's
    commit to publish (see the module doc for retries)."""

    def __init__(self, plan: Plan, job: str) -> None:
        self.plan = plan
        self.job = job
        target = plan.target
        self.prefix = keys.spark_prefix(target.kind, target.name, target.ns)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        partition = _partition()
        if self.plan.atomic:
            ctx = TaskContext.get()
            stage = keys.spark_stage(self.prefix, self.job, partition, ctx.attemptNumber() if ctx else 0)
            return Written(partition, _stage(self.plan, stage, iterator), 0, stage)
        rows, published = publish(self.plan, iterator, f'{self.job}:{partition}')
        return Written(partition, rows, published)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.plan.atomic:
            raw = _conn.raw(self.plan.connection)
            done = sorted((m for m in messages if isinstance(m, Written)), key=lambda m: m.partition)
            for m in done:
                if m.stage is not None:
                    m.published = publish(self.plan, _staged(raw, m.stage), f'{self.job}:{m.partition}')[1]
            self._drop_stages()
        log.info('ferroq write to %s committed: %s', self.plan.target, _summary(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.plan.atomic:
            self._drop_stages()
        log.warning('ferroq write to %s aborted: %s before the failure', self.plan.target, _summary(messages))

    def _drop_stages(self) -> None:
        """Deletes every stage of this job: committed ones, and those of failed or speculative attempts."""
        raw = _conn.raw(self.plan.connection)
        pattern = keys.spark_stage(self.prefix, self.job, 0, 0)[: -len(':0:0')] + ':*'
        stages = raw.run(lambda r: list(r.scan_iter(match=pattern, count=1000)))
        for i in range(0, len(stages), 1000):
            raw.call('unlink', *stages[i : i + 1000])


#: Rows per staged Arrow IPC stream (one LIST element).
STAGE_ROWS = 10_000


def _stage(plan: Plan, stage: str, batches: Iterator[pa.RecordBatch]) -> int:
    """Stores ``batches`` in the LIST ``stage`` as Arrow IPC streams (it expires after dedupTtl); returns the
    number of rows. A retried attempt writes a stage of its own: only the committed attempt's is published."""
    import pyarrow as pa

    raw = _conn.raw(plan.connection)
    raw.call('delete', stage)
    ttl_ms = int(plan.dedup_ttl * 1000)
    rows = 0
    for batch in batches:
        for start in range(0, batch.num_rows, STAGE_ROWS):
            part = batch.slice(start, STAGE_ROWS)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, part.schema) as out:
                out.write_batch(part)

            def push(r: Any, blob: bytes = sink.getvalue().to_pybytes()) -> None:
                pipe = r.pipeline(transaction=False)
                pipe.rpush(stage, blob)
                pipe.pexpire(stage, ttl_ms)
                pipe.execute()

            raw.run(push)
            rows += part.num_rows
    return rows


def _staged(raw: _conn.Raw, stage: str) -> Iterator[pa.RecordBatch]:
    """The batches of a stage, in the order they were staged, a few LIST elements per round trip."""
    import pyarrow as pa

    start = 0
    while True:
        blobs: list[bytes] = raw.call('lrange', stage, start, start + 7)
        for blob in blobs:
            yield from pa.ipc.open_stream(blob)
        if len(blobs) < 8:
            return
        start += 8


class StreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream``: exactly once per micro-batch with ``sinkId``, at-least-once without."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        target = plan.target
        prefix = keys.spark_prefix(target.kind, target.name, target.ns)
        self.sink_key = keys.spark_sink(prefix, plan.sink_id) if plan.sink_id else None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        partition = _partition()
        if self.sink_key is None:
            rows, published = publish(self.plan, iterator, None)
            return Written(partition, rows, published)
        ctx = TaskContext.get()
        batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
        if batch is None:
            raise InvalidArgument(
                f'the micro-batch id ({BATCH_ID_PROPERTY}) is not set: sinkId needs a streaming query'
            )
        done = _conn.raw(self.plan.connection).run(lambda r: r.get(self.sink_key))
        if done is not None and int(done) >= int(batch):
            rows = sum(b.num_rows for b in iterator)
            return Written(partition, rows, 0)
        rows, published = publish(self.plan, iterator, f'sink:{self.plan.sink_id}:{batch}:{partition}')
        return Written(partition, rows, published)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.sink_key is not None:
            _conn.raw(self.plan.connection).script('sink_commit-1', [self.sink_key], [batchId])
        log.info('ferroq sink batch %d to %s committed: %s', batchId, self.plan.target, _summary(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning('ferroq sink batch %d to %s aborted: %s', batchId, self.plan.target, _summary(messages))
