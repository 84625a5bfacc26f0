"""claim: order, leases, blocking, several topics."""

from __future__ import annotations

import gc
import threading
import time

from _checks import assert_recent, bodies
from ferroq.types import Message


def _publish_later(fn, delay: float = 0.3) -> threading.Timer:
    timer = threading.Timer(delay, fn)
    timer.daemon = True
    timer.start()
    return timer


def test_claim_oldest_first(client):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(5)])
    first = t.claim(count=3)
    assert [m.id for m in first] == ids[:3]
    for m in first:
        assert isinstance(m, Message)
        assert m.topic == 'jobs'
        assert m.deliveries == 1
        assert m.token == 1
        assert_recent(m.published)
    assert [m.id for m in t.claim(count=10)] == ids[3:]
    assert t.claim(count=10) == []


def test_a_claim_leaves_the_garbage_collector_as_it_was(client, impl):
    # The native client pauses the collector while it makes a batch of 100 Messages or more (without running
    # __init__); a single claim's Message is made with it running.
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i), 'k': 'v'} for i in range(301)])
    got = t.claim(count=150)
    assert gc.isenabled()
    got += t.claim()
    assert gc.isenabled()
    gc.disable()
    try:
        got += t.claim(count=150)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert [m.id for m in got] == ids
    claims = [got[0].claim] * 150 + [got[150].claim] + [got[151].claim] * 150
    for i, m in enumerate(got):
        assert m == Message(ids[i], 'jobs', {'n': str(i), 'k': 'v'}, 1, m.claim)
        assert type(m) is Message and m.claim == claims[i]
        assert repr(m) == f"Message(id='{ids[i]}', topic='jobs', fields={{'n': '{i}', 'k': 'v'}}, deliveries=1)"
    # The native clients' Messages are not tracked by the collector (see Batch in src/bindings/convert); the
    # pure clients' are made by __init__, as any object.
    assert gc.get_referents(got[0]) != []
    assert [gc.is_tracked(m) for m in got] == [impl.startswith('pure')] * len(got)


def test_claim_default_count_is_one(client):
    t = client.topic('jobs')
    t.publish_batch([{'n': '0'}, {'n': '1'}])
    assert bodies(t.claim()) == ['0']


def test_claim_leaves_lease_and_delivery_count(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': '0'}, {'n': '1'}])
    before_ms = _redis_ms(r)
    got = t.claim(count=2, lease=30)
    after_ms = _redis_ms(r)
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == ids[::-1]  # newest claim at the head, as BRPOPLPUSH does
    assert r.llen('rfq:jobs:backlog') == 0
    # One record and one lease for the whole claim, no per-message record on a first claim.
    claim = got[0].claim
    assert claim and all(m.claim == claim for m in got)
    assert r.hkeys('rfq:jobs:claims') == [claim]
    claimed_at, owner, *held = r.hget('rfq:jobs:claims', claim).split(' ')
    assert before_ms <= int(claimed_at) <= after_ms and owner == '-' and held == ids
    assert before_ms + 30_000 <= r.zscore('rfq:jobs:claim_leases', claim) <= after_ms + 30_000
    assert r.smembers('rfq:jobs:inflight') == set(ids)
    assert not r.exists('rfq:jobs:deliveries', 'rfq:jobs:leases')


def test_large_claim_writes_only_its_records_and_leases(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(301)])
    [first] = t.claim(lease=30)
    assert t.release([first]) == [first.id]  # the released message's record counts its ended claim
    assert r.hgetall('rfq:jobs:deliveries') == {first.id: '1'}
    got = t.claim(count=300, lease=30)
    assert [m.id for m in got] == ids[:300] and [m.deliveries for m in got] == [2] + [1] * 299
    assert r.hgetall('rfq:jobs:deliveries') == {first.id: '1'}  # a claim writes no per-message record
    claim = got[0].claim
    assert r.hget('rfq:jobs:claims', claim).split(' ')[2:] == ids[:300]
    assert r.hget('rfq:jobs:claims', claim + ':d') == first.id  # the ids of the claim with a record
    assert r.zrange('rfq:jobs:claim_leases', 0, -1) == [claim] and r.scard('rfq:jobs:inflight') == 300
    assert t.commit(got) == ids[:300]
    assert t.commit(t.claim()) == [ids[300]]
    assert r.dbsize() == 0


def test_claim_without_block_returns_at_once(client):
    t = client.topic('jobs')
    for block in (None, 0):
        start = time.monotonic()
        assert t.claim(block=block) == []
        assert time.monotonic() - start < 0.5


def test_claim_block_times_out_empty(client, r):
    t = client.topic('jobs')
    start = time.monotonic()
    assert t.claim(block=0.5) == []
    assert 0.4 <= time.monotonic() - start < 3.0
    assert r.dbsize() == 0


def test_blocking_claim_woken_by_publish(client, r):
    t = client.topic('jobs')
    timer = _publish_later(lambda: t.publish({'n': 'late'}))
    start = time.monotonic()
    got = t.claim(block=5.0, lease=30)
    elapsed = time.monotonic() - start
    timer.join(5)
    assert bodies(got) == ['late']
    assert got[0].deliveries == 1
    assert 0.2 <= elapsed < 3.0
    # It was claimed by the claim script after the BLMOVE, not left unleased in the nextlog.
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [got[0].id]
    assert r.hget('rfq:jobs:claims', got[0].claim).split(' ')[2:] == [got[0].id]
    assert r.zscore('rfq:jobs:claim_leases', got[0].claim) is not None
    assert r.smembers('rfq:jobs:inflight') == {got[0].id}


def test_blocking_claim_takes_up_to_count(client):
    t = client.topic('jobs')
    timer = _publish_later(lambda: t.publish_batch([{'n': str(i)} for i in range(5)]))
    got = t.claim(count=3, block=5.0)
    timer.join(5)
    assert bodies(got) == ['0', '1', '2']
    assert bodies(t.claim(count=5)) == ['3', '4']


def test_blocking_claim_returns_waiting_message_at_once(client):
    t = client.topic('jobs')
    t.publish({'n': 'ready'})
    start = time.monotonic()
    assert bodies(t.claim(block=5.0)) == ['ready']
    assert time.monotonic() - start < 1.0


def test_multi_topic_claim_priority_order(client):
    a, b = client.topic('a'), client.topic('b')
    a.publish_batch([{'n': 'a0'}, {'n': 'a1'}])
    b.publish_batch([{'n': 'b0'}, {'n': 'b1'}])
    got = client.claim(['b', 'a'], count=3)
    assert bodies(got) == ['b0', 'b1', 'a0']
    assert [m.topic for m in got] == ['b', 'b', 'a']
    assert all(m.deliveries == 1 for m in got)
    got = client.claim(['a', 'b'], count=10)
    assert bodies(got) == ['a1']
    assert client.claim(['a', 'b'], count=10) == []


def test_multi_topic_claim_single_topic_and_tuple(client):
    client.topic('a').publish({'n': 'a0'})
    assert bodies(client.claim(('a',))) == ['a0']


def test_multi_topic_blocking_claim(client):
    y = client.topic('y')
    timer = _publish_later(lambda: y.publish({'n': 'y0'}))
    start = time.monotonic()
    got = client.claim(['x', 'y'], count=5, block=5.0)
    timer.join(5)
    assert bodies(got) == ['y0']
    assert got[0].topic == 'y'
    assert time.monotonic() - start < 3.0


def test_multi_topic_blocking_claim_times_out(client):
    start = time.monotonic()
    assert client.claim(['x', 'y'], block=0.4) == []
    assert 0.3 <= time.monotonic() - start < 3.0


def test_client_level_commit_extend_release(client, r):
    a, b = client.topic('a'), client.topic('b')
    a.publish({'n': 'a0'})
    b.publish_batch([{'n': 'b0'}, {'n': 'b1'}])
    got = client.claim(['a', 'b'], count=3, lease=30)
    assert sorted(client.extend(got, lease=60)) == sorted(m.id for m in got)
    assert client.release([got[2]]) == [got[2].id]
    assert client.commit(got) == [got[0].id, got[1].id]  # the released one is no longer held
    # The released message waits again and keeps its delivery count (its fencing token).
    assert set(r.keys('*')) == {'rfq:b:backlog', f'rfq:b:message:{got[2].id}', 'rfq:b:deliveries'}
    assert r.hgetall('rfq:b:deliveries') == {got[2].id: '1'}
    [again] = client.claim(['a', 'b'])
    assert again.id == got[2].id and again.deliveries == 2
    assert client.commit([again]) == [again.id]
    assert r.dbsize() == 0


def test_claim_drops_ids_without_a_message(client, r):
    t = client.topic('jobs')
    t.publish({'n': 'real'})
    r.rpush('rfq:jobs:backlog', 'f' * 32)  # an orphan id at the consume end, e.g. left by rfq's purge
    assert bodies(t.claim(count=5)) == ['real']
    assert 'f' * 32 not in r.lrange('rfq:jobs:nextlog', 0, -1)
    assert r.zscore('rfq:jobs:leases', 'f' * 32) is None


def _redis_ms(r) -> int:
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) // 1000


def test_concurrent_blocking_claims(client):
    t = client.topic('jobs')
    results: list[list[str]] = []

    def claim() -> None:
        results.append(bodies(t.claim(block=5.0)))

    threads = [threading.Thread(target=claim, daemon=True) for _ in range(2)]
    for th in threads:
        th.start()
    time.sleep(0.3)
    t.publish_batch([{'n': '0'}, {'n': '1'}])
    for th in threads:
        th.join(6)
    assert sorted(results) == [['0'], ['1']]
