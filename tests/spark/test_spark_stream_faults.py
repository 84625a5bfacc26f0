"""Streaming reads that fail mid-run and restart from their checkpoint: nothing lost, and with an idempotent
sink (one keyed by Spark's batch id) nothing duplicated. Both streaming targets, a real local[2,2] session."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
import redis
from _queries import read_stream

import ferroq

N = 6000
PER_BATCH = 1000


class Crash(Exception):
    pass


def _publish(url: str, kind: str, name: str) -> None:
    with ferroq.Client(url) as c:
        handle = c.topic(name) if kind == 'topic' else c.stream(name)
        handle.publish_batch([{'n': str(i)} for i in range(N)])


def _query(spark: Any, url: str, kind: str, name: str, checkpoint: str, sink: Any, available_now: bool) -> Any:
    options = {kind: name, 'maxRecordsPerTrigger': str(PER_BATCH)}
    return read_stream(spark, url, options, 'n long, _id string, _deliveries long', sink, checkpoint, available_now)


@pytest.mark.parametrize('kind', ['topic', 'stream'])
def test_a_failed_batch_is_replayed_whole(spark: Any, redis_url: str, checkpoint: str, kind: str) -> None:
    _publish(redis_url, kind, 'faulty')
    by_batch: dict[int, list[int]] = {}  # the idempotent sink: a replayed batch replaces its rows
    appended: list[int] = []  # a sink that only appends
    failed = []
    deliveries: set[int] = set()

    def sink(df: Any, batch_id: int) -> None:
        got = df.collect()
        rows = [row.n for row in got]
        deliveries.update(row._deliveries for row in got)
        appended.extend(rows)
        if batch_id == 2 and not failed:
            failed.append(batch_id)
            raise Crash('injected: the sink failed after taking part of batch 2')
        by_batch[batch_id] = rows

    first = _query(spark, redis_url, kind, 'faulty', checkpoint, sink, available_now=True)
    with pytest.raises(Exception, match='injected'):
        first.awaitTermination(120)
    assert len(by_batch) == 2
    second = _query(spark, redis_url, kind, 'faulty', checkpoint, sink, available_now=True)
    assert second.awaitTermination(120)
    delivered = Counter(n for rows in by_batch.values() for n in rows)
    assert sorted(delivered) == list(range(N))  # lost = 0
    assert max(delivered.values()) == 1  # duplicates = 0 with the idempotent sink
    dupes = sum(c - 1 for c in Counter(appended).values())
    assert dupes == PER_BATCH  # the appending sink saw the failed batch twice, and nothing else
    assert deliveries == {1}  # a replayed batch is the same delivery (the same claim; the same group read)


@pytest.mark.parametrize('kind', ['topic', 'stream'])
def test_a_stopped_query_resumes(spark: Any, redis_url: str, r: redis.Redis, checkpoint: str, kind: str) -> None:
    _publish(redis_url, kind, 'resumed')
    by_batch: dict[int, list[int]] = {}

    def slow_sink(df: Any, batch_id: int) -> None:
        by_batch[batch_id] = [row.n for row in df.collect()]
        time.sleep(0.5)  # 4 more batches take 2 s: the stop below comes long before the end

    first = _query(spark, redis_url, kind, 'resumed', checkpoint, slow_sink, available_now=False)
    deadline = time.monotonic() + 120
    while len(by_batch) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    first.stop()  # mid-run: some batches done, more waiting
    assert 2 <= len(by_batch) < N // PER_BATCH
    second = _query(spark, redis_url, kind, 'resumed', checkpoint, slow_sink, available_now=True)
    assert second.awaitTermination(120)
    delivered = Counter(n for rows in by_batch.values() for n in rows)
    assert sorted(delivered) == list(range(N))
    assert max(delivered.values()) == 1
