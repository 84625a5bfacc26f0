"""Writes through format('ferroq') on a real local[2,2] SparkSession: every target, typed round trips, task
retries that publish nothing twice, and the streaming sink."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import redis

import ferroq

N = 100_000


def _write(df: Any, url: str, **options: str) -> None:
    writer = df.write.format('ferroq').option('url', url).mode('append')
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save()


def _rows(spark: Any, n: int) -> Any:
    from pyspark.sql import functions as F

    return spark.range(0, n, numPartitions=4).select(
        F.col('id'),
        F.concat(F.lit('tile-'), (F.col('id') % 64).cast('string')).alias('tile'),
        (F.col('id') / 8).alias('value'),
    )


@pytest.mark.parametrize('target', ['topic', 'rsmq', 'stream'])
def test_100k_rows_written_and_read_back(spark: Any, redis_url: str, target: str) -> None:
    if target == 'rsmq':
        with ferroq.Client(redis_url) as c:
            c.rsmq('big').create()
    _write(_rows(spark, N), redis_url, **{target: 'big'})
    back = (
        spark.read.format('ferroq')
        .option('url', redis_url)
        .option(target, 'big')
        .schema('id long, tile string, value double, _id string')
        .load()
    )
    rows = back.collect()
    assert len(rows) == N
    assert sorted(r.id for r in rows) == list(range(N))
    assert all(r.tile == f'tile-{r.id % 64}' and r.value == r.id / 8 for r in rows)
    assert len({r._id for r in rows}) == N


def test_string_forms_of_spark_types(spark: Any, redis_url: str, r: redis.Redis) -> None:
    df = spark.sql(
        """SELECT 1 AS i, CAST(2.5 AS DOUBLE) AS d, CAST('1.50' AS DECIMAL(10, 2)) AS dec, true AS b,
                  TIMESTAMP '2026-11-25 10:11:12.345678' AS ts, DATE '2026-11-25' AS day, X'CAFE' AS bin,
                  array(1, 2) AS arr, named_struct('a', 1, 'b', 'x') AS st, map('k', CAST(1.5 AS DOUBLE)) AS m,
                  CAST(NULL AS STRING) AS gone"""
    )
    _write(df, redis_url, topic='forms')
    [mid] = r.lrange('rfq:forms:backlog', 0, -1)
    assert r.hgetall(f'rfq:forms:message:{mid}') == {
        'i': '1',
        'd': '2.5',
        'dec': '1.50',
        'b': 'true',
        'ts': '2026-11-25T10:11:12.345678Z',
        'day': '2026-11-25',
        'bin': 'yv4=',
        'arr': '[1,2]',
        'st': '{"a":1,"b":"x"}',
        'm': '{"k":1.5}',
    }
    back = (
        spark.read.format('ferroq')
        .option('url', redis_url)
        .option('topic', 'forms')
        .schema(
            'i int, d double, dec decimal(10,2), b boolean, ts timestamp, day date, arr array<int>, '
            'st struct<a:int,b:string>, m map<string,double>, gone string'
        )
        .load()
        .collect()
    )
    assert back[0].asDict() == df.drop('bin').collect()[0].asDict()


def test_value_column_and_rsmq_bodies(spark: Any, redis_url: str, r: redis.Redis) -> None:
    with ferroq.Client(redis_url) as c:
        c.rsmq('bodies').create()
        c.rsmq('rows').create()
    df = spark.createDataFrame([('hello', 1), ('world', 2)], 'text string, n int')
    _write(df, redis_url, rsmq='bodies', valueColumn='text')
    _write(df, redis_url, rsmq='rows')
    _write(df, redis_url, stream='values', valueColumn='text')
    with ferroq.Client(redis_url) as c:
        assert sorted(m.message for m in c.rsmq('bodies').receive_batch(10)) == ['hello', 'world']
        bodies = sorted(json.loads(m.message)['text'] for m in c.rsmq('rows').receive_batch(10))
        assert bodies == ['hello', 'world']
        assert sorted(e.fields['text'] for e in c.stream('values').range('-', '+')) == ['hello', 'world']
        assert all(list(e.fields) == ['text'] for e in c.stream('values').range('-', '+'))


def test_id_column_publishes_an_id_once_across_jobs(spark: Any, redis_url: str, r: redis.Redis) -> None:
    df = spark.createDataFrame([(f'order-{i}', i) for i in range(500)], 'key string, n int')
    _write(df, redis_url, topic='orders', idColumn='key')
    _write(df, redis_url, topic='orders', idColumn='key')  # a second job with the same ids
    assert r.llen('rfq:orders:backlog') == 500
    assert r.hgetall('rfq:orders:message:order-7') == {'n': '7'}


def _failing_rows(
    spark: Any, n: int, fail_at: int, witness: str, redis_port: int, nondeterministic: bool, always: bool = False
) -> Any:
    """Rows whose partition 0 fails at row ``fail_at`` in its first attempt (every attempt if ``always``), after
    the writer has taken the chunks before it (``witness`` records how many messages the topic held then)."""
    import uuid

    from pyspark.sql import functions as F

    def check(i: int) -> str:
        import time

        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx.partitionId() == 0 and (always or ctx.attemptNumber() == 0) and i == fail_at:
            # Wait (up to 60 s) for the writer of this task to take the rows before this one, so the failure
            # comes after chunks were published (or staged), whatever the scheduling of the two workers.
            conn = redis.Redis(port=redis_port)
            taken = 0
            deadline = time.monotonic() + 60
            while not taken and time.monotonic() < deadline:
                taken = conn.llen('rfq:retried:backlog') + len(conn.keys('rfq:retried:spark:stage:*'))
                time.sleep(0.01)
            conn.set(witness, taken)
            raise RuntimeError('injected failure of the first attempt of partition 0')
        return uuid.uuid4().hex if nondeterministic else f'v{i}'

    udf = F.udf(check, 'string')
    if nondeterministic:
        udf = udf.asNondeterministic()
    return spark.range(0, n, numPartitions=2).select(F.col('id'), udf(F.col('id')).alias('v'))


@pytest.mark.parametrize('nondeterministic', [False, True])
def test_a_retried_task_publishes_nothing_twice(
    spark: Any, redis_url: str, r: redis.Redis, nondeterministic: bool
) -> None:
    port = int(redis_url.rsplit(':', 1)[1].split('/')[0])
    spark.conf.set('spark.sql.execution.arrow.maxRecordsPerBatch', '500')
    try:
        df = _failing_rows(spark, 20_000, 7_500, 'witness', port, nondeterministic)
        _write(df, redis_url, topic='retried')
    finally:
        spark.conf.unset('spark.sql.execution.arrow.maxRecordsPerBatch')
    assert int(r.get('witness') or 0) > 0  # the failed attempt had published chunks: the retry skipped them
    ids = [r.hget(f'rfq:retried:message:{m}', 'id') for m in r.lrange('rfq:retried:backlog', 0, -1)]
    assert sorted(int(i) for i in ids) == list(range(20_000))  # exactly once: nothing lost, nothing twice


def test_streaming_sink_with_a_sink_id_publishes_a_replayed_batch_once(
    spark: Any, redis_url: str, r: redis.Redis, tmp_path: Any
) -> None:
    with ferroq.Client(redis_url) as c:
        c.stream('src').publish_batch([{'n': str(i)} for i in range(6000)])
    for sink_id, out in (('copy-1', 'dst-once'), (None, 'dst-twice')):
        checkpoint = str(tmp_path / out)
        for attempt in range(2):
            query = (
                spark.readStream.format('ferroq')
                .option('url', redis_url)
                .option('stream', 'src')
                .option('consumer', out)
                .option('group', out)
                .option('maxRecordsPerTrigger', '2000')
                .schema('n long')
                .load()
            )
            sink = query.writeStream.format('ferroq').option('url', redis_url).option('topic', out)
            if sink_id:
                sink = sink.option('sinkId', sink_id)
            if attempt == 0:
                q = sink.option('checkpointLocation', checkpoint).trigger(availableNow=True).start()
                assert q.awaitTermination(120)
                assert r.llen(f'rfq:{out}:backlog') == 6000
                # Forget the commit of the last batch, as a driver crash right after the sink published it
                # would have: the next run replays that batch.
                commits = tmp_path / out / 'commits'
                last = max((p for p in commits.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
                last.unlink()
                for crc in commits.glob(f'.{last.name}.crc'):
                    crc.unlink()
            else:
                q = sink.option('checkpointLocation', checkpoint).trigger(availableNow=True).start()
                assert q.awaitTermination(120)
        published = Counter(r.hget(f'rfq:{out}:message:{m}', 'n') for m in r.lrange(f'rfq:{out}:backlog', 0, -1))
        assert sorted(int(n) for n in published) == list(range(6000))
        duplicates = sum(c - 1 for c in published.values())
        if sink_id:
            assert duplicates == 0
        else:
            assert duplicates == 2000  # at-least-once: the replayed batch is published again


def test_an_atomic_write_publishes_nothing_unless_the_job_commits(spark: Any, redis_url: str, r: redis.Redis) -> None:
    port = int(redis_url.rsplit(':', 1)[1].split('/')[0])
    spark.conf.set('spark.sql.execution.arrow.maxRecordsPerBatch', '500')
    try:
        doomed = _failing_rows(spark, 20_000, 7_500, 'witness', port, nondeterministic=False, always=True)
        with pytest.raises(Exception, match='injected failure'):
            _write(doomed, redis_url, topic='retried', atomic='true')
        assert int(r.get('witness') or 0) > 0  # the failed attempts had staged rows
        assert r.keys('rfq:retried:*') == []  # nothing published, every stage deleted by the abort
        retried = _failing_rows(spark, 20_000, 7_500, 'witness', port, nondeterministic=False)
        _write(retried, redis_url, topic='retried', atomic='true')
    finally:
        spark.conf.unset('spark.sql.execution.arrow.maxRecordsPerBatch')
    ids = [r.hget(f'rfq:retried:message:{m}', 'id') for m in r.lrange('rfq:retried:backlog', 0, -1)]
    assert sorted(int(i) for i in ids) == list(range(20_000))  # the committed attempts only, once each
    assert r.keys('rfq:retried:spark:stage:*') == []  # the failed attempt's stage too


def test_one_client_per_python_worker(spark: Any, redis_url: str) -> None:
    from ferroq.spark._options import parse

    conn = parse({'url': redis_url, 'topic': 'pooled'}, 'write').connection

    def probe(rows: Any) -> None:
        import os

        from ferroq.spark import _conn

        client = _conn.native(conn)  # what every reading and writing task of the data source calls
        n = sum(1 for _ in rows)  # a worker that leaves its input unread is not reused by Spark
        client.topic('pooled').publish({'pid': str(os.getpid()), 'client': str(id(client)), 'n': str(n)})

    for _ in range(3):
        spark.range(0, 80, numPartitions=8).foreachPartition(probe)
    with ferroq.Client(redis_url) as c:
        seen = {(m.fields['pid'], m.fields['client']) for m in c.topic('pooled').claim(count=100)}
    pids = {pid for pid, _ in seen}
    # 24 tasks: each Python worker made one client on first use and reused it for every later task.
    assert len(seen) == len(pids) < 24
