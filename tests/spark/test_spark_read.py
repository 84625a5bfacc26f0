"""Batch reads (a peek) and streaming reads through format('ferroq') on a real local[2,2] SparkSession."""

from __future__ import annotations

import json
from typing import Any

import redis
from _queries import drain, peek

import ferroq
from ferroq import cli


def test_stream_batch_read(spark: Any, redis_url: str) -> None:
    with ferroq.Client(redis_url) as c:
        ids = c.stream('ev').publish_batch([{'n': str(i), 'tile': f't{i % 7}'} for i in range(3000)])
    df = peek(spark, redis_url, stream='ev').schema('n long, tile string, _id string, _topic string').load()
    rows = df.collect()
    assert sorted(r.n for r in rows) == list(range(3000))
    assert {r._id for r in rows} == set(ids)
    assert {r._topic for r in rows} == {'ev'}


def test_streaming_read_of_a_stream(spark: Any, redis_url: str, r: redis.Redis, checkpoint: str) -> None:
    with ferroq.Client(redis_url) as c:
        ids = c.stream('ev').publish_batch([{'n': str(i)} for i in range(5000)])
    seen: list[int] = []

    def sink(df: Any, batch_id: int) -> None:
        seen.extend(row.n for row in df.collect())

    progress = drain(spark, redis_url, {'stream': 'ev', 'maxRecordsPerTrigger': '2000'}, 'n long', sink, checkpoint)
    assert sorted(seen) == list(range(5000))
    # Spark commits a batch when it plans the next: the group is at the end of the second of three batches.
    [group] = r.xinfo_groups('ferroq:stream:ev')
    assert (group['name'], group['last-delivered-id'], group['lag']) == ('spark', ids[3999], 1000)
    latest = json.loads(progress['sources'][0]['latestOffset'])
    assert latest == {'id': ids[-1], 'read': 5000, 'lag': 0}


def test_streaming_read_of_a_topic(spark: Any, redis_url: str, r: redis.Redis, checkpoint: str) -> None:
    with ferroq.Client(redis_url) as c:
        ids = c.topic('jobs').publish_batch([{'n': str(i)} for i in range(5000)])
    seen: list[str] = []

    def sink(df: Any, batch_id: int) -> None:
        seen.extend(row._id for row in df.collect())

    def run() -> Any:
        options = {'topic': 'jobs', 'maxRecordsPerTrigger': '2000'}
        return drain(spark, redis_url, options, 'n long, _id string, _deliveries long', sink, checkpoint)

    last = run()
    assert json.loads(last['sources'][0]['latestOffset']) == {'seq': 3, 'lag': 0}
    assert sorted(seen) == sorted(ids)
    assert r.llen('rfq:jobs:backlog') == 0
    # Spark commits a batch when it plans the next: the last one (1000 messages) is still claimed.
    assert r.llen('rfq:jobs:nextlog') == 1000
    with ferroq.Client(redis_url) as c:
        more = c.topic('jobs').publish_batch([{'n': str(i)} for i in range(5000, 5500)])
    run()
    assert sorted(seen) == sorted(ids + more)
    assert r.llen('rfq:jobs:nextlog') == 500
    # Retiring the query: its last batch goes back to the backlog (the lock of the finished query is refused
    # without --force: it lasts two minutes after the last poll).
    assert cli.main(['--url', redis_url, 'spark-release', '-t', 'jobs', '--yes']) == 2
    assert cli.main(['--url', redis_url, 'spark-release', '-t', 'jobs']) == 2  # no --yes
    assert r.llen('rfq:jobs:nextlog') == 500
    assert cli.main(['--url', redis_url, 'spark-release', '-t', 'jobs', '--force', '--yes']) == 0
    assert (r.llen('rfq:jobs:nextlog'), r.llen('rfq:jobs:backlog')) == (0, 500)
    assert r.keys('rfq:jobs:spark:claims:*') == [] and r.keys('rfq:jobs:spark:ledger:*') == []
