"""publish / publish_batch: ids, rfq's key layout, FIFO and front order, chunking."""

from __future__ import annotations

import uuid

from _checks import assert_rfq_id, bodies, message_keys
from _redis import commandstats


def test_publish_stores_rfq_layout(client, r):
    t = client.topic('jobs')
    msg_id = t.publish({'tile': 'T32UNE', 'band': 'B04'})
    assert_rfq_id(msg_id)
    assert set(r.keys('*')) == {'rfq:jobs:backlog'} | message_keys('jobs', [msg_id])
    assert r.type('rfq:jobs:backlog') == 'list'
    assert r.type(f'rfq:jobs:message:{msg_id}') == 'hash'
    assert r.lrange('rfq:jobs:backlog', 0, -1) == [msg_id]
    assert r.hgetall(f'rfq:jobs:message:{msg_id}') == {'tile': 'T32UNE', 'band': 'B04'}


def test_publish_batch_ids_in_input_order_and_fifo(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(10)])
    assert len(ids) == len(set(ids)) == 10
    for i, msg_id in enumerate(ids):
        assert_rfq_id(msg_id)
        assert r.hgetall(f'rfq:jobs:message:{msg_id}') == {'n': str(i)}
    # rfq's layout: LPUSH in input order, so the oldest sits at the tail, where consumers take from.
    assert r.lrange('rfq:jobs:backlog', 0, -1) == ids[::-1]
    times = [uuid.UUID(hex=i).time for i in ids]
    assert times == sorted(times)
    claimed = t.claim(count=10)
    assert [m.id for m in claimed] == ids
    assert bodies(claimed) == [str(i) for i in range(10)]


def test_publish_batch_accepts_any_iterable(client):
    t = client.topic('jobs')
    ids = t.publish_batch({'n': str(i)} for i in range(3))
    assert len(ids) == 3
    assert bodies(t.claim(count=5)) == ['0', '1', '2']


def test_publish_batch_empty_is_a_no_op(client, r):
    assert client.topic('jobs').publish_batch([]) == []
    assert r.dbsize() == 0


def test_publish_front_is_consumed_next(client):
    t = client.topic('jobs')
    t.publish({'n': 'a'})
    t.publish({'n': 'b'})
    t.publish({'n': 'c'}, front=True)
    assert bodies(t.claim(count=3)) == ['c', 'a', 'b']


def test_publish_batch_front_across_chunks(make_client, redis_url, r):
    client = make_client(redis_url, chunk_size=3)
    t = client.topic('jobs')
    old = t.publish_batch([{'n': f'old{i}'} for i in range(4)])
    new = t.publish_batch([{'n': f'new{i}'} for i in range(8)], front=True)
    # ids come back in input order (rfq 1.4 returns them reversed for front=True).
    assert [r.hget(f'rfq:jobs:message:{i}', 'n') for i in new] == [f'new{i}' for i in range(8)]
    claimed = t.claim(count=20)
    assert bodies(claimed) == [f'new{i}' for i in range(8)] + [f'old{i}' for i in range(4)]
    assert [m.id for m in claimed] == new + old


def test_publish_batch_back_across_chunks(make_client, redis_url, r):
    client = make_client(redis_url, chunk_size=3)
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(10)])
    assert r.lrange('rfq:jobs:backlog', 0, -1) == ids[::-1]
    assert bodies(t.claim(count=10)) == [str(i) for i in range(10)]


def test_one_script_call_per_chunk(make_client, redis_url, r):
    client = make_client(redis_url, chunk_size=3)
    t = client.topic('jobs')
    t.publish({'n': 'warm-up'})  # loads the script, so no NOSCRIPT round trip is counted below
    r.config_resetstat()
    t.publish_batch([{'n': str(i)} for i in range(10)])
    stats = commandstats(r)
    assert stats.get('evalsha', 0) + stats.get('eval', 0) == 4, stats  # ceil(10 / 3) chunks
    assert 'multi' not in stats, stats  # (commands run inside scripts are counted too: hset, lpush)


def test_unicode_fields_round_trip(client, r):
    t = client.topic('jobs')
    fields = {'ключ': 'значение ✓', 'emoji': '🦀🐍', 'empty': ''}
    msg_id = t.publish(fields)
    assert r.hgetall(f'rfq:jobs:message:{msg_id}') == fields
    [msg] = t.claim()
    assert msg.fields == fields
    assert t.peek(msg_id) == fields


def test_publish_ids_are_unique_across_calls(client):
    t = client.topic('jobs')
    ids = [t.publish({'n': str(i)}) for i in range(20)] + t.publish_batch([{'n': 'x'}] * 50)
    assert len(set(ids)) == 70


def test_large_chunks_and_wide_messages(make_client, redis_url, r):
    # Past Lua's unpack() limit (~8000 values): the scripts must slice their argument lists.
    client = make_client(redis_url, chunk_size=10_000)
    t = client.topic('jobs')
    ids = t.publish_batch({'n': str(i)} for i in range(10_000))
    wide = {f'f{i}': str(i) for i in range(5_000)}
    wide_id = t.publish(wide)
    assert r.llen('rfq:jobs:backlog') == 10_001
    claimed = t.claim(count=10_000) + t.claim()  # 10 000: the most one claim returns
    assert [m.id for m in claimed] == [*ids, wide_id]
    assert claimed[-1].fields == wide
    assert sorted(t.commit(claimed)) == sorted([*ids, wide_id])
    assert r.dbsize() == 0
