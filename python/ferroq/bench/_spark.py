"""``ferroq bench``'s Spark section: the ``ferroq`` data source against what users write by hand.

One ``local[2]`` SparkSession and one DataFrame of ``spark_rows`` rows (``id``, ``tile``, ``value``; 4
partitions, cached before any timing), published to an rfq topic four ways in the same run:

- ``format('ferroq')``: the Arrow writer (the Rust core converts and sends, one publish script per chunk);
- ``foreachPartition`` with a redis-py pipeline per partition (HSET per row, one LPUSH per 1000 ids);
- ``mapInArrow`` with the same redis-py pipeline (needs pandas; skipped with the reason otherwise);
- the server's ceiling for the writer's exact command stream (per chunk of 1000, with its dedup record, the
  watched transaction of a publish, through ``redis-cli --pipe``).

Then a streaming read of the published messages (``Trigger.AvailableNow``, micro-batches of 100,000, a
``foreachBatch`` that counts) from the topic and from a stream, end to end in msgs/s, after a warm-up
streaming read of a small topic (the session's first streaming query starts Spark's streaming machinery).
Each figure is the action alone, after a warm-up write of the whole DataFrame (a first write runs at a
third of the speed). Skipped with a clear line when pyspark, pyarrow or Java is missing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ferroq.bench._ceiling import _pipe, resp, tool_target
from ferroq.bench._common import REDIS_ERRORS, Admin, BenchError, Config, Progress
from ferroq.bench._wire import rfq_ids, rfq_keys
from ferroq.protocol import keys

__all__ = ['SPARK_STEPS', 'measure_spark', 'spark_missing']

#: Progress steps of the section.
SPARK_STEPS = 9
#: Rows of a streaming micro-batch.
STREAM_BATCH = 100_000
#: How long a publish record of the writer lives (its default dedupTtl), in ms.
RECORD_MS = 86_400_000


def spark_missing() -> str | None:
    """Why the Spark section cannot run here, or None."""
    for module, extra in (('pyspark', 'ferroq[spark]'), ('pyarrow', 'ferroq[spark]')):
        if importlib.util.find_spec(module) is None:
            return f'{module} is not installed (pip install "{extra}")'
    if shutil.which('java') is None:
        return 'no java on PATH (Spark needs Java 17 or 21; Debian: apt-get install openjdk-17-jre-headless)'
    return None


def _session() -> tuple[Any, bool]:
    """A local[2] session, and whether it was made here (a caller's own active session is used, not stopped)."""
    os.environ.setdefault('PYSPARK_PYTHON', sys.executable)
    os.environ.setdefault('SPARK_LOCAL_IP', '127.0.0.1')
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False

    spark = (
        SparkSession.builder.master('local[2]')
        .appName('ferroq-bench')
        .config('spark.driver.host', '127.0.0.1')
        .config('spark.driver.bindAddress', '127.0.0.1')
        .config('spark.ui.enabled', 'false')
        .config('spark.ui.showConsoleProgress', 'false')
        .config('spark.sql.shuffle.partitions', '2')
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel('ERROR')
    return spark, True


def _timed(action: Callable[[], Any], n: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    action()
    seconds = time.perf_counter() - t0
    return {'messages': n, 'seconds': round(seconds, 3), 'msgs_per_s': n / seconds}


def _by_hand(url: str, topic: str) -> Callable[[Iterator[tuple[int, str, float]]], None]:
    """What a user writes with redis-py: a pipeline per partition, HSET per row, one LPUSH per 1000 ids."""
    backlog, _, prefix = rfq_keys(topic)

    def publish(rows: Iterator[tuple[int, str, float]]) -> None:
        import uuid

        import redis

        r = redis.Redis.from_url(url)
        pipe = r.pipeline(transaction=False)
        ids: list[str] = []
        for row_id, tile, value in rows:
            mid = uuid.uuid1().hex
            pipe.hset(prefix + mid, mapping={'id': row_id, 'tile': tile, 'value': value})
            ids.append(mid)
            if len(ids) == 1000:
                pipe.lpush(backlog, *ids)
                pipe.execute()
                ids = []
        if ids:
            pipe.lpush(backlog, *ids)
            pipe.execute()
        r.close()

    return publish


def _ceiling(cfg: Config, admin: Admin, topic: str, n: int) -> dict[str, Any]:
    """The writer's command stream for the same rows (the string forms it sends) through redis-cli --pipe: per
    chunk of 1000 with its dedup record, the watched transaction of ``write_chunk`` (``WATCH`` + ``GET`` of the
    record, ``MULTI``, an ``HSET`` per row, one ``LPUSH``, ``SET`` of the record, ``EXEC``)."""
    cli = shutil.which('redis-cli')
    if cli is None:
        return {'reason': 'redis-cli not found on PATH (Debian: apt-get install redis-tools)'}
    backlog, _, prefix = rfq_keys(topic)
    ids = rfq_ids(n)
    out = []
    for s in range(0, n, 1000):
        chunk = ids[s : s + 1000]
        record = keys.rfq_published(topic, f'bench:{s // 1000}')
        out += [resp('WATCH', record), resp('GET', record), resp('MULTI')]
        for i, mid in enumerate(chunk, s):
            out.append(resp('HSET', prefix + mid, 'id', i, 'tile', f'tile-{i % 64}', 'value', repr(i / 8)))
        out += [resp('LPUSH', backlog, *chunk), resp('SET', record, len(chunk), 'PX', RECORD_MS), resp('EXEC')]
    try:
        return {**_pipe(cli, tool_target(cfg.url, 'redis-cli'), b''.join(out), admin, n, cfg.time_limit + 120)}
    except (BenchError, subprocess.TimeoutExpired) as exc:
        return {'reason': str(exc)}


def _stream_read(spark: Any, url: str, kind: str, name: str, n: int) -> dict[str, Any]:
    counted: list[int] = []
    checkpoint = tempfile.mkdtemp(prefix='ferroq-bench-')

    def count(batch: Any, batch_id: int) -> None:
        counted.append(batch.count())

    def run() -> None:
        query = (
            spark.readStream.format('ferroq')
            .option('url', url)
            .option(kind, name)
            .option('maxRecordsPerTrigger', STREAM_BATCH)
            .schema('id long, tile string, value double, _id string')
            .load()
            .writeStream.foreachBatch(count)
            .option('checkpointLocation', checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    try:
        out = _timed(run, n)
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
    out['read'] = sum(counted)
    return out


def measure_spark(cfg: Config, admin: Admin, progress: Progress) -> dict[str, Any]:
    """The section's figures (see the module doc); ``{'reason': ...}`` when it cannot run."""
    missing = spark_missing()
    if missing:
        progress.note(f'Spark section skipped: {missing}')
        return {'reason': missing}
    n = cfg.spark_rows
    base = f'fqb-{cfg.run_id}-spark'
    spark, own = _session()
    out: dict[str, Any] = {'rows': n, 'partitions': 4}
    try:
        from pyspark.sql import functions as F

        df = spark.range(0, n, numPartitions=4).select(
            F.col('id'),
            F.concat(F.lit('tile-'), (F.col('id') % 64).cast('string')).alias('tile'),
            (F.col('id') / 8).alias('value'),
        )
        df = df.cache()
        df.count()
        # Warm-up, not timed: the JVM's JIT, the Python workers and the data source's first plan. A first write of
        # the whole DataFrame runs at a third of the speed of the next ones.
        progress.begin('spark: warm-up write', n)
        warm = _timed(lambda: _write(df, cfg.url, 'topic', f'{base}-warm'), n)
        admin.sweep(f'rfq:{base}-warm:*')
        progress.end(f'{warm["msgs_per_s"]:,.0f} rows/s (not counted)')
        variants: list[tuple[str, str, Callable[[str], None]]] = [
            ('arrow_writer', 'format("ferroq") (Arrow, Rust core)', lambda t: _write(df, cfg.url, 'topic', t)),
            (
                'foreach_partition',
                'foreachPartition + redis-py pipeline',
                lambda t: df.foreachPartition(_by_hand(cfg.url, t)),
            ),
            ('map_in_arrow', 'mapInArrow + redis-py pipeline', lambda t: _map_in_arrow(df, cfg.url, t)),
        ]
        for key, label, action in variants:
            topic = f'{base}-{key}'
            progress.begin(f'spark: {label}', n)
            if key == 'map_in_arrow' and importlib.util.find_spec('pandas') is None:
                out[key] = {'reason': 'mapInArrow needs pandas (pip install "ferroq[bench]")'}
                progress.end('skipped: no pandas')
                continue
            out[key] = _timed(functools.partial(action, topic), n)
            published = int(admin.r.llen(rfq_keys(topic)[0]))
            if published != n:
                raise BenchError(f'{label} published {published} of {n} rows')
            progress.end(f'{out[key]["msgs_per_s"]:,.0f} rows/s')
            if key != 'arrow_writer':
                admin.sweep(f'rfq:{topic}:*')
        progress.begin('spark: ceiling of the writer', n)
        out['ceiling'] = _ceiling(cfg, admin, f'{base}-ceiling', n)
        admin.sweep(f'rfq:{base}-ceiling:*')
        progress.end(f'{out["ceiling"].get("msgs_per_s") or 0:,.0f} msgs/s (redis-cli --pipe)')
        # The first streaming query of a session starts Spark's streaming machinery and the source's Python
        # runner: warmed up on a small topic, not timed, so neither timed read pays for it.
        progress.begin('spark: warm-up streaming read', STREAM_BATCH)
        warm_read = f'{base}-warm-read'
        _write(df.limit(STREAM_BATCH), cfg.url, 'topic', warm_read)
        warm = _stream_read(spark, cfg.url, 'topic', warm_read, min(n, STREAM_BATCH))
        admin.sweep(f'rfq:{warm_read}:*')
        progress.end(f'{warm["msgs_per_s"]:,.0f} msgs/s (not counted)')
        progress.begin('spark: streaming read of a topic', n)
        out['read_topic'] = _stream_read(spark, cfg.url, 'topic', f'{base}-arrow_writer', n)
        progress.end(f'{out["read_topic"]["msgs_per_s"]:,.0f} msgs/s')
        progress.begin('spark: publish to a stream', n)
        out['arrow_writer_stream'] = _timed(lambda: _write(df, cfg.url, 'stream', f'{base}-s'), n)
        progress.end(f'{out["arrow_writer_stream"]["msgs_per_s"]:,.0f} rows/s')
        progress.begin('spark: streaming read of a stream', n)
        out['read_stream'] = _stream_read(spark, cfg.url, 'stream', f'{base}-s', n)
        progress.end(f'{out["read_stream"]["msgs_per_s"]:,.0f} msgs/s')
    except (BenchError, *REDIS_ERRORS) as exc:
        out['reason'] = str(exc)
    finally:
        if own:
            spark.stop()
        for pattern in (f'rfq:{base}*', f'ferroq:stream:{base}*'):
            admin.sweep(pattern)
    return out


def _write(df: Any, url: str, kind: str, name: str) -> None:
    df.write.format('ferroq').option('url', url).option(kind, name).mode('append').save()


def _map_in_arrow(df: Any, url: str, topic: str) -> None:
    publish = _by_hand(url, topic)

    def per_batch(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            cols = batch.to_pydict()
            publish(zip(cols['id'], cols['tile'], cols['value']))
            yield pa.record_batch({'n': [batch.num_rows]})

    with warnings.catch_warnings():
        # pyspark looks for pandas type hints on the function and warns when it finds Arrow ones.
        warnings.filterwarnings('ignore', 'Cannot infer the eval type from type hints')
        df.mapInArrow(per_batch, 'n long').agg({'n': 'sum'}).collect()
