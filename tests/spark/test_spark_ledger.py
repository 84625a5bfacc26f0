"""The streaming topic reader's ledger (no JVM needed): an entry per claim; its commit takes whole claims in one
script call each, claims of the layout before batch claims (``<delivery count>`` fences) too, and nothing a
claim no longer holds; ledgers of the previous layout (an entry per message) are carried over; the commit runs
in a thread, and the next poll waits for it and raises what made it fail."""

from __future__ import annotations

import pytest
import redis

import ferroq
from _previous import old_claim
from ferroq.spark import _conn
from ferroq.spark._admin import carry_over, commit_ledger
from ferroq.spark._options import parse

LEDGER = 'rfq:jobs:spark:claims:spark:1'
#: The same batch's ledger in the previous layout (an entry per message).
PREVIOUS = 'rfq:jobs:spark:ledger:spark:1'


def _listed(r: redis.Redis, ledger: str) -> list[str]:
    """The ids a ledger lists, in order."""
    return [i for entry in r.lrange(ledger, 0, -1) for i in entry.split(' ')[1:]]


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
    r.rpush(PREVIOUS, *entries)  # the previous layout: an entry per message
    assert carry_over(raw, PREVIOUS, LEDGER) == len(entries)
    assert not r.exists(PREVIOUS) and r.llen(LEDGER) == 4  # a claim each: the old one, first, second, stale
    assert _listed(r, LEDGER) == [e.split(' ')[0] for e in entries]
    calls = _script_calls(r)
    assert commit_ledger(raw, 'jobs', LEDGER) == 2 + 3 + 3
    # A commit-6n call per claim: the old one (by count), first and second (whole), stale (it lost its ids:
    # nothing to commit).
    assert _script_calls(r) - calls == 4
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
    held = _listed(r, LEDGER.replace(':1', ':2'))
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
    assert [len(_listed(r, f'{ledger}{k}')) for k in (1, 2, 3)] == [4, 4, 0]
    again = TopicReader(plan, StructType([StructField('n', LongType())]))
    again.prepareForTriggerAvailableNow()
    assert again.latestOffset({'seq': 1}, ReadMaxRows(4)) == {'seq': 2}  # the ledger claimed ahead
    assert again.latestOffset({'seq': 2}, ReadMaxRows(4)) == {'seq': 3}
    assert again.latestOffset({'seq': 3}, ReadMaxRows(4)) == {'seq': 3}  # nothing left of this run
    again.stop()
    assert [len(_listed(r, f'{ledger}{k}')) for k in (2, 3, 4)] == [4, 3, 0] and r.llen('rfq:jobs:backlog') == 0


def test_an_entry_that_is_not_a_claim_is_refused_and_nothing_is_written(redis_url: str, r: redis.Redis) -> None:
    from ferroq.exceptions import InvalidArgument

    raw = _conn.raw(parse({'url': redis_url, 'topic': 'jobs'}, 'stream_read').connection)
    r.rpush(PREVIOUS, 'a1 tok', 'a2')  # a2: no fence, which would commit unfenced
    with pytest.raises(InvalidArgument, match='not <id> <claim>'):
        carry_over(raw, PREVIOUS, LEDGER)
    assert r.llen(PREVIOUS) == 2 and not r.exists(LEDGER)
    r.rpush(LEDGER, 'lonely')  # a fence and no id
    with pytest.raises(InvalidArgument, match='an entry that is not a claim'):
        commit_ledger(raw, 'jobs', LEDGER)


def test_a_planner_carries_over_a_ledger_of_the_previous_layout(redis_url: str, r: redis.Redis) -> None:
    """A query restarted across an upgrade replays its open batch from the previous layout's ledger."""
    from pyspark.sql.streaming.datasource import ReadMaxRows
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from ferroq.spark._topic_read import TopicReader

    with ferroq.Client(redis_url) as c:
        topic = c.topic('jobs')
        topic.publish_batch([{'n': str(i)} for i in range(6)])
        claimed = topic.claim(count=3, owner='spark.spark.1')  # what the previous release's planner did
    r.rpush(PREVIOUS, *(f'{m.id} {m.claim}' for m in claimed))
    plan = parse({'url': redis_url, 'topic': 'jobs', 'maxRecordsPerTrigger': '3'}, 'stream_read')
    schema = StructType([StructField('n', LongType()), StructField('_id', StringType())])
    reader = TopicReader(plan, schema)
    assert reader.latestOffset({'seq': 0}, ReadMaxRows(3)) == {'seq': 1}
    assert not r.exists(PREVIOUS) and _listed(r, LEDGER) == [m.id for m in claimed]
    [part] = reader.partitions({'seq': 0}, {'seq': 1})
    rows = [b for b in reader.read(part)]
    assert [i for b in rows for i in b.column('_id').to_pylist()] == [m.id for m in claimed]
    reader.commit({'seq': 1})
    reader.stop()  # waits for the commit
    assert all(not r.exists(f'rfq:jobs:message:{m.id}') for m in claimed) and not r.exists(LEDGER)


def test_a_claim_with_a_redelivery_is_committed_records_and_all(redis_url: str, r: redis.Redis) -> None:
    raw = _conn.raw(parse({'url': redis_url, 'topic': 'jobs'}, 'stream_read').connection)
    with ferroq.Client(redis_url) as c:
        topic = c.topic('jobs')
        topic.publish_batch([{'n': str(i)} for i in range(4)])
        topic.release(topic.claim(count=1))  # a delivery that ended: the next claim of it is a redelivery
        held = topic.claim(count=3)
    assert r.hexists('rfq:jobs:claims', f'{held[0].claim}:d') and r.hlen('rfq:jobs:deliveries') == 1
    r.rpush(LEDGER, f'{held[0].claim} ' + ' '.join(m.id for m in held))
    calls = _script_calls(r)
    assert commit_ledger(raw, 'jobs', LEDGER) == 3
    assert _script_calls(r) - calls == 1  # commit-6n's general path (the ':d' record)
    assert all(not r.exists(f'rfq:jobs:message:{m.id}') for m in held)
    assert r.hlen('rfq:jobs:deliveries') == 0 and r.hlen('rfq:jobs:claims') == 0 and r.scard('rfq:jobs:inflight') == 0
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == []


@pytest.mark.parametrize('case', ['without the first', 'without the last', 'a middle one replaced', 'one more'])
def test_commit_6n_takes_a_claim_whole_only_when_given_exactly_its_ids(
    redis_url: str, r: redis.Redis, case: str
) -> None:
    """The ledger's commits pass a claim's ids as they were claimed; commit-6n's path for a whole claim must not
    take other keys for them: ids the claim holds are committed, any other is refused and kept."""
    from ferroq.pure import _rfq

    raw = _conn.raw(parse({'url': redis_url, 'topic': 'jobs'}, 'stream_read').connection)
    with ferroq.Client(redis_url) as c:
        topic = c.topic('jobs')
        other = topic.publish_batch([{'n': str(i)} for i in range(4)])[3]
        held = topic.claim(count=3)
    t = _rfq.topic_keys('jobs')
    ids = [m.id for m in held]
    given = {
        'without the first': ids[1:],
        'without the last': ids[:-1],
        'a middle one replaced': [ids[0], other, ids[2]],
        'one more': [*ids, other],
    }[case]
    keys = [t.nextlog, t.leases, t.deliveries, *t.claim_keys, *(t.prefix + i for i in given)]
    reply = raw.script('commit-6n', keys, [len(t.prefix), held[0].claim, len(given)], protocol='rfq')
    taken = [i for i in given if i in ids]
    assert [x.decode() if isinstance(x, bytes) else x for x in reply] == [
        len(taken),
        *(i for i in given if i not in ids),
    ]
    assert not any(r.exists(t.prefix + i) for i in taken) and r.exists(t.prefix + other)
    left = [i for i in ids if i not in taken]
    record = r.hget('rfq:jobs:claims', held[0].claim)  # gone with the claim's last id
    assert (record.split(' ')[2:] if record else []) == left
    assert r.smembers('rfq:jobs:inflight') == set(left)
    assert sorted(r.lrange('rfq:jobs:nextlog', 0, -1)) == sorted(left)


def test_release_gives_back_one_consumers_ledgers_only(redis_url: str, r: redis.Redis) -> None:
    """A consumer name may hold ':': releasing consumer ``a`` leaves the ledgers of ``a:b`` alone."""
    from ferroq.spark import release

    with ferroq.Client(redis_url) as c:
        topic = c.topic('jobs')
        topic.publish_batch([{'n': str(i)} for i in range(4)])
        mine, theirs, old = topic.claim(count=1), topic.claim(count=2), topic.claim(count=1)
    r.rpush('rfq:jobs:spark:claims:a:1', f'{mine[0].claim} {mine[0].id}')
    r.rpush('rfq:jobs:spark:claims:a:b:1', f'{theirs[0].claim} ' + ' '.join(m.id for m in theirs))
    r.rpush('rfq:jobs:spark:ledger:a:2', f'{old[0].id} {old[0].claim}')  # the previous layout: carried over
    assert release(redis_url, 'jobs', 'a', force=True) == 2
    assert sorted(r.lrange('rfq:jobs:backlog', 0, -1)) == sorted([mine[0].id, old[0].id])
    assert r.keys('rfq:jobs:spark:*') == ['rfq:jobs:spark:claims:a:b:1']
    assert sorted(r.lrange('rfq:jobs:nextlog', 0, -1)) == sorted(m.id for m in theirs)
