"""The benchmark's Spark section runs and measures every variant (a few thousand rows: behaviour, not speed)."""

from __future__ import annotations

import importlib.util
from typing import Any

import redis

from ferroq.bench._common import Admin, Config, Progress
from ferroq.bench._render import _spark_rows
from ferroq.bench._spark import measure_spark


def test_the_spark_section_measures_every_variant(spark: Any, redis_url: str, r: redis.Redis) -> None:
    cfg = Config(url=redis_url, spark_rows=4000, run_id='t1')
    admin = Admin(redis_url)
    try:
        out = measure_spark(cfg, admin, Progress(1, quiet=True))
    finally:
        admin.close()
    assert 'reason' not in out, out.get('reason')
    keys = ['arrow_writer', 'foreach_partition', 'ceiling', 'arrow_writer_stream', 'read_topic', 'read_stream']
    for key in keys:
        assert out[key]['msgs_per_s'] > 0, key
    assert out['read_topic']['read'] == out['read_stream']['read'] == 4000
    if importlib.util.find_spec('pandas') is None:
        assert 'pandas' in out['map_in_arrow']['reason']
    else:
        assert out['map_in_arrow']['msgs_per_s'] > 0
    assert spark.range(3).count() == 3  # the caller's session is left running
    assert r.dbsize() == 0
    table = '\n'.join(' | '.join(row) for row in _spark_rows({'spark': out}))
    assert 'foreachPartition + redis-py pipeline' in table and 'streaming read of a stream' in table
