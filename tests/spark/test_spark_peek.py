"""Batch reads: positions of a stream, the default schema, empty queues; nothing is consumed."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from _queries import peek

import ferroq


def test_stream_positions(spark: Any, redis_url: str) -> None:
    with ferroq.Client(redis_url) as c:
        ids = c.stream('pos').publish_batch([{'n': str(i)} for i in range(100)])
    between = peek(spark, redis_url, stream='pos', startingPosition=ids[10], endingPosition=ids[19])
    assert sorted(r.n for r in between.schema('n long').load().collect()) == list(range(10, 20))
    after = peek(spark, redis_url, stream='pos', startingPosition=ids[95], numPartitions='3')
    assert sorted(r.n for r in after.schema('n long').load().collect()) == list(range(95, 100))
    ms = int(ids[0].split('-')[0])
    too_late = peek(spark, redis_url, stream='pos', startingPosition=str(ms + 10**9))
    assert too_late.schema('n long').load().count() == 0


def test_the_default_schema_and_nothing_consumed(spark: Any, redis_url: str, r: redis.Redis) -> None:
    with ferroq.Client(redis_url) as c:
        c.topic('peeked').publish_batch([{'tile': 'a', 'cloud': '0.5'}, {'tile': 'b', 'extra': 'x'}])
    df = peek(spark, redis_url, topic='peeked').load()
    assert df.columns == ['tile', 'cloud', 'extra', '_id', '_published', '_deliveries', '_topic']
    rows = sorted(df.collect(), key=lambda row: row.tile)
    assert [(row.tile, row.cloud, row.extra, row._deliveries, row._topic) for row in rows] == [
        ('a', '0.5', None, 0, 'peeked'),
        ('b', None, 'x', 0, 'peeked'),
    ]
    assert all(row._published is not None for row in rows)
    assert r.llen('rfq:peeked:backlog') == 2  # a peek consumes nothing
    assert r.keys('rfq:peeked:spark:snapshot:*') != []  # the snapshot expires on its own (an hour)


def test_an_empty_queue_needs_a_declared_schema(spark: Any, redis_url: str) -> None:
    with pytest.raises(Exception, match='is empty, so its fields cannot be guessed'):
        peek(spark, redis_url, topic='nothing').load()
    assert peek(spark, redis_url, topic='nothing').schema('a string').load().count() == 0
    with pytest.raises(Exception, match="field 'n' of message [0-9a-f]{32} cannot be read as int64: 'not a number'"):
        with ferroq.Client(redis_url) as c:
            c.topic('typed').publish({'n': 'not a number'})
        peek(spark, redis_url, topic='typed').schema('n long').load().collect()
