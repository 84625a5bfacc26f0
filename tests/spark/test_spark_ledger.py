"""The streaming topic reader's ledger commit (no JVM needed): whole claims in one script call each, the
ledgers of the previous layout (``<id> <delivery count>``) too, and nothing a claim no longer holds; the
commit runs in a thread, and the next poll waits for it and raises what made it fail."""

from __future__ import annotations

import pytest
import redis

import ferroq
from _previous import old_claim
from ferroq.spark import _conn
from ferroq.spark._admin import commit_ledger
from ferroq.spark._options import parse

LEDGER = 'rfq:jobs:spark:ledger:spark:1'


def _script_calls(r: redis.Redis) -> int:
    """EVALSHA calls that ran (a first call that found the script not loaded yet is a failed one)."""
    stats = r.info('commandstats').get('cmdstat_evalsha', {})
    return int(stats.get('calls', 0)) - int(stats.get('failed_calls', 0))


def test_commit_ledger_commits_whole_claims_and_previous_layout_entries(redis_url: str, r: redis.Redis) -> None:
    raw = _conn.raw(parse({'url': redis_url, 'topic': 'jobs'}, 'stream_read').connection)
    with ferroq.Client(redis_url, chunk_size=3) as c:
        topic = c.topic('jobs')
        ids = topic.publish_batch([{'n': str(i)} for i in range(12)])
        old = old_claim(r, 'jobs', 2)  # the previous release's claims: fenced by their delivery count
        first, second = topic.claim(count=3), topic.claim(count=3)  # two claims
        stale = topic.claim(count=2)
        topic.release(stale)  # given back: its claim no longer holds them
        kept = topic.claim(count=5)  # someone else's claim: the 2 left and the 2 given back
    assert {m.id for m in stale} < {m.id for m in kept}
    entries = [f'{i} 1' for i in old] + [f'{m.id} {m.claim}' for m in first + second + stale]
    r.rpush(LEDGER, *entries)
    calls = _script_calls(r)
    assert commit_ledger(raw, 'jobs', LEDGER) == 2 + 3 + 3
    assert _script_calls(r) - calls == 4  # a call each: the old entries, first, second, stale
    gone = {*old, *(m.id for m in first + second)}
    assert all(not r.exists(f'rfq:jobs:message:{i}') for i in gone)
    assert set(ids) - gone == {m.id for m in kept}
    assert sorted(r.lrange('rfq:jobs:nextlog', 0, -1)) == sorted(m.id for m in kept)  # still held, bodies kept
    assert all(r.exists(f'rfq:jobs:message:{m.id}') for m in kept)
    assert {k.split(':')[0] for k in r.hkeys('rfq:jobs:claims')} == {kept[0].claim}  # and its ':d' record


def test_a_failed_background_commit_fails_the_next_poll(redis_url: str, r: redis.Redis) -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows
    from pyspark.sql.types import LongType, StructField, StructType

    from ferroq.exceptions import ServerError
    from ferroq.spark._topic_read import TopicReader

    with ferroq.Client(redis_url) as c:
        ids = c.topic('jobs').publish_batch([{'n': str(i)} for i in range(10)])
    plan = parse({'url': redis_url, 'topic': 'jobs', 'maxRecordsPerTrigger': '4'}, 'stream_read')
    reader = TopicReader(plan, StructType([StructField('n', LongType())]))
    first = reader.latestOffset(reader.initialOffset(), ReadMaxRows(4))
    second = reader.latestOffset(first, ReadMaxRows(4))
    assert (first, second) == ({'seq': 1}, {'seq': 2})
    reader.commit(first)  # in a thread; the next poll waits for it
    third = reader.latestOffset(second, ReadMaxRows(4))
    assert third == {'seq': 3} and r.llen('rfq:jobs:nextlog') == 6  # batch 1 committed, 2 and 3 held
    assert all(not r.exists(f'rfq:jobs:message:{i}') for i in ids[:4])
    held = r.lrange(LEDGER.replace(':1', ':2'), 0, -1)
    r.delete(LEDGER.replace(':1', ':2'))
    r.set(LEDGER.replace(':1', ':2'), 'not a ledger')  # the commit of batch 2 will fail on it
    reader.commit(second)
    with pytest.raises(ServerError, match='WRONGTYPE'):
        reader.latestOffset(third, ReadMaxRows(4))
    assert r.llen('rfq:jobs:nextlog') == 6 and len(held) == 4  # nothing of batch 2 was committed
    assert reader.latestOffset(third, ReadMaxRows(4)) == {'seq': 3}  # the failure is raised once
    reader.stop()


def test_the_batch_after_is_claimed_ahead_within_available_now(redis_url: str, r: redis.Redis) -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows
    from pyspark.sql.types import LongType, StructField, StructType

    from ferroq.spark._topic_read import TopicReader

    with ferroq.Client(redis_url) as c:
        c.topic('jobs').publish_batch([{'n': str(i)} for i in range(10)])
    plan = parse({'url': redis_url, 'topic': 'jobs', 'maxRecordsPerTrigger': '4'}, 'stream_read')
    reader = TopicReader(plan, StructType([StructField('n', LongType())]))
    reader.prepareForTriggerAvailableNow()  # 10 then
    with ferroq.Client(redis_url) as c:
        c.topic('jobs').publish_batch([{'n': 'late'}])  # after AvailableNow started: not for this run
    assert reader.latestOffset(reader.initialOffset(), ReadMaxRows(4)) == {'seq': 1}
    reader.stop()  # waits for the claim ahead
    ledger = LEDGER[:-1]
    assert [r.llen(f'{ledger}{k}') for k in (1, 2, 3)] == [4, 4, 0]
    again = TopicReader(plan, StructType([StructField('n', LongType())]))
    again.prepareForTriggerAvailableNow()
    assert again.latestOffset({'seq': 1}, ReadMaxRows(4)) == {'seq': 2}  # the ledger claimed ahead
    assert again.latestOffset({'seq': 2}, ReadMaxRows(4)) == {'seq': 3}
    assert again.latestOffset({'seq': 3}, ReadMaxRows(4)) == {'seq': 3}  # nothing left of this run
    again.stop()
    assert [r.llen(f'{ledger}{k}') for k in (2, 3, 4)] == [4, 3, 0] and r.llen('rfq:jobs:backlog') == 0
