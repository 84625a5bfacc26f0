"""Arrow reads, measured: (a) fetching 100k messages in pages of 1000 (the redis-py rows of the Spark readers
before fetch_arrow / range_arrow, and both clients' Arrow reads), (b) Spark streaming reads end to end
(``local[2,2]``, 200k messages of 3 fields, ``maxRecordsPerTrigger`` 100k, the second run counts), (c) what an
rfq claim costs with the bodies it returns and without them (a copy of claim-5n that leaves them out).

usage: .venv/bin/python benches/spark_read.py [fetch] [spark] [claim]   (PROGRESS=1: Spark's durations)
Starts its own redis-server on a free loopback port; needs pyspark, pyarrow and Java (``make setup``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

import ferroq
from ferroq.protocol import keys

N = 200_000
PAGE = 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def fill(url: str, topic: str, stream: str) -> None:
    c = ferroq.Client(url)
    msgs = [{'n': str(i), 'tile': f'T{i % 97:02d}UNE', 'v': repr(i / 7)} for i in range(N)]
    for lo in range(0, N, 10_000):
        if topic:
            c.topic(topic).publish_batch(msgs[lo : lo + 10_000])
        if stream:
            c.stream(stream).publish_batch(msgs[lo : lo + 10_000])
    c.close()


def bench_fetch(url: str) -> None:
    import redis
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    from ferroq.spark import _read
    from ferroq.spark._options import Connection
    from ferroq.spark._rows import Row, to_batch

    schema = StructType(
        [
            StructField('n', LongType()),
            StructField('tile', StringType()),
            StructField('v', DoubleType()),
            StructField('_id', StringType()),
        ]
    )
    raw = _read._conn.raw(Connection(url=url, shown_url=url))
    r = redis.Redis.from_url(url)
    ids = list(reversed(r.lrange(keys.rfq_backlog('t0'), -100_000, -1)))
    sids = [i.decode() for i in ids]
    native = ferroq.Client(url).topic('t0')
    pure = ferroq.pure.Client(url).topic('t0')
    fields = ['n', 'tile', 'v']

    def timed(label: str, fn, n: int) -> None:
        best = None
        for _ in range(3):
            t = time.perf_counter()
            got = fn()
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        print(f'{label:58s} {n / best:>10,.0f} msgs/s  ({got} rows)', flush=True)

    def old_rows() -> int:
        k = 0
        for lo in range(0, len(ids), PAGE):
            k += sum(1 for _ in _read._topic_bodies(raw, 't0', ids[lo : lo + PAGE]))
        return k

    def old_batches() -> int:
        k = 0
        for lo in range(0, len(ids), PAGE):
            rows: list[Row] = list(_read._topic_bodies(raw, 't0', ids[lo : lo + PAGE]))
            k += to_batch(rows, schema, 't0').num_rows
        return k

    def arrow(handle) -> int:
        return sum(handle.fetch_arrow(sids[lo : lo + PAGE], fields).num_rows for lo in range(0, len(sids), PAGE))

    timed('topic, redis-py rows (_topic_bodies), pages of 1000', old_rows, len(ids))
    timed('topic, redis-py rows + to_batch, pages of 1000', old_batches, len(ids))
    timed('topic, native fetch_arrow, pages of 1000', lambda: arrow(native), len(ids))
    timed('topic, pure fetch_arrow, pages of 1000', lambda: arrow(pure), len(ids))
    if hasattr(_read, 'topic_batch'):
        timed(
            'topic, native fetch_arrow + typed batch (spark reader)',
            lambda: sum(
                _read.topic_batch(native, sids[lo : lo + PAGE], schema, 't0').num_rows
                for lo in range(0, len(sids), PAGE)
            ),
            len(ids),
        )

    skey = keys.stream_key('s0')

    def old_entries() -> int:
        return sum(1 for _ in _read._entries(raw, skey, '-', '+', 100_000))

    def old_entry_batches() -> int:
        rows = list(_read._entries(raw, skey, '-', '+', 100_000))
        return sum(to_batch(rows[lo : lo + PAGE], schema, 's0').num_rows for lo in range(0, len(rows), PAGE))

    def ranged(handle) -> int:
        k, lo = 0, '-'
        while k < 100_000:
            b = handle.range_arrow(lo, '+', PAGE, fields)
            k += b.num_rows
            lo = '(' + b.column('_id')[-1].as_py()
        return k

    timed('stream, redis-py rows (_entries), pages of 1000', old_entries, 100_000)
    timed('stream, redis-py rows + to_batch, pages of 1000', old_entry_batches, 100_000)
    timed('stream, native range_arrow, pages of 1000', lambda: ranged(ferroq.Client(url).stream('s0')), 100_000)
    timed('stream, pure range_arrow, pages of 1000', lambda: ranged(ferroq.pure.Client(url).stream('s0')), 100_000)


def bench_spark(url: str, work: str) -> None:
    os.environ['PYSPARK_PYTHON'] = sys.executable
    os.environ['PYSPARK_DRIVER_PYTHON'] = sys.executable
    os.environ['SPARK_LOCAL_IP'] = '127.0.0.1'
    os.chdir(work)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master('local[2,2]')
        .appName('ferroq-read-bench')
        .config('spark.driver.host', '127.0.0.1')
        .config('spark.driver.bindAddress', '127.0.0.1')
        .config('spark.ui.enabled', 'false')
        .config('spark.ui.showConsoleProgress', 'false')
        .config('spark.sql.shuffle.partitions', '2')
        .config('spark.sql.session.timeZone', 'UTC')
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel('ERROR')

    def run(kind: str, name: str) -> float:
        seen = [0]

        def sink(df, _i):
            seen[0] += df.count()

        t = time.perf_counter()
        q = (
            spark.readStream.format('ferroq')
            .option('url', url)
            .option(kind, name)
            .option('maxRecordsPerTrigger', '100000')
            .schema('n long, tile string, v double, _id string')
            .load()
            .writeStream.foreachBatch(sink)
            .option('checkpointLocation', os.path.join(work, f'cp-{kind}-{name}'))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        dt = time.perf_counter() - t
        if os.environ.get('PROGRESS'):
            for p in q.recentProgress:
                print(kind, name, p.numInputRows, dict(p.durationMs), flush=True)
        assert seen[0] == N, seen
        return N / dt

    for kind in ('topic', 'stream'):
        warm = run(kind, 'w1')
        second = run(kind, 'w2')
        print(f'spark {kind:6s}: first run {warm:>9,.0f} msgs/s, second run {second:>9,.0f} msgs/s', flush=True)
    spark.stop()


def bench_claim(url: str) -> None:
    import redis

    from ferroq.protocol import script_source

    m = 100_000
    c = ferroq.Client(url)
    msgs = [{'n': str(i), 'tile': f'T{i % 97:02d}UNE', 'v': repr(i / 7)} for i in range(m)]
    for name in ('ca', 'cb', 'cc'):
        for lo in range(0, m, 10_000):
            c.topic(name).publish_batch(msgs[lo : lo + 10_000])
    full = script_source('rfq/claim-5n')
    ids_only = full.replace(
        "    local body = redis.call('HGETALL', prefix .. id)\n    local nbody = #body\n",
        "    local nbody = redis.call('EXISTS', prefix .. id)\n",
    )
    ids_only = ids_only.replace('ti, id, d, nbody / 2', 'ti, id, d, 0')
    ids_only = ids_only.replace(
        '      for j = 1, nbody do\n        out[nout + j] = body[j]\n      end\n      nout = nout + nbody\n', ''
    )
    assert "redis.call('HGETALL', prefix" not in ids_only and 'out[nout + j] = body[j]' not in ids_only
    r = redis.Redis.from_url(url)
    t, n = time.perf_counter(), 0
    while n < m:
        n += len(c.topic('ca').claim(count=10_000, lease=60.0, owner='spark.bench.1'))
    print(f'{"native Topic.claim (bodies, Message objects)":50s} {m / (time.perf_counter() - t):>10,.0f} msgs/s')
    for name, source, label in (('cb', full, 'claim-5n (bodies)'), ('cc', ids_only, 'ids-only copy')):
        script = r.register_script(source)
        topic_keys = [*keys.rfq_topic_keys(name), keys.rfq_delayed(name)]
        t, n = time.perf_counter(), 0
        while n < m:
            reply = script(keys=topic_keys, args=[10_000, 60_000, '', 'spark.bench.1', keys.rfq_message_prefix(name)])
            i = 1
            while i < len(reply):
                i += 4 + 2 * int(reply[i + 3])
                n += 1
        print(f'{label + " via redis-py":50s} {m / (time.perf_counter() - t):>10,.0f} msgs/s')


def main() -> None:
    what = sys.argv[1:] or ['fetch', 'spark', 'claim']
    port = free_port()
    work = tempfile.mkdtemp(prefix='ferroq-read-bench-')
    server = subprocess.Popen(
        ['redis-server', '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work],
        stdout=subprocess.DEVNULL,
    )
    try:
        url = f'redis://127.0.0.1:{port}/0'
        time.sleep(0.5)
        if 'fetch' in what:
            fill(url, 't0', 's0')
            bench_fetch(url)
        if 'spark' in what:
            for name in ('w1', 'w2'):
                fill(url, name, name)
            bench_spark(url, work)
        if 'claim' in what:
            bench_claim(url)
    finally:
        server.terminate()
        server.wait()


if __name__ == '__main__':
    main()
