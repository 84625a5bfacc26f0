"""Claims made by the previous layout (a per-message lease and record) after an upgrade to batch claims.

``python/ferroq/protocol/lua/previous/`` holds that release's claim script and prelude; the claims here are made
with them, as a client of that release would, and then handled by the current clients.
"""

from __future__ import annotations

import time

import pytest

import ferroq
from _previous import old_claim


def test_old_claims_are_committed_by_their_count(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(3)])
    assert old_claim(r, 'jobs', 3) == ids
    assert r.hget('rfq:jobs:deliveries', ids[0]).startswith('1 ')
    assert t.stats().leased == 3
    assert t.commit([ferroq.Message(ids[0], 'jobs', {}, 2)]) == []  # not its count
    assert t.commit([ferroq.Message(i, 'jobs', {}, 1) for i in ids]) == ids
    assert r.dbsize() == 0


def test_old_claims_are_harvested_and_counted(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(2)])
    old_claim(r, 'jobs', 2, lease_ms=1)
    deadline = time.monotonic() + 10
    requeued: list[str] = []
    while len(requeued) < 2 and time.monotonic() < deadline:
        requeued += t.harvest()
    assert sorted(requeued) == sorted(ids)
    assert {r.hget('rfq:jobs:deliveries', i) for i in ids} == {'1'}  # the ended claim, counted
    got = t.claim(count=2)
    assert [m.deliveries for m in got] == [2, 2]
    assert t.commit(got) == [m.id for m in got]
    assert r.dbsize() == 0


@pytest.fixture
def held_by_w1(client, r):
    """Topic 'jobs' and the ids of its two messages, claimed by worker w1 with the previous release's script."""
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(2)])
    old_claim(r, 'jobs', 2, owner='w1')
    return t, ids


def test_old_claims_are_resumed_by_their_owner(held_by_w1, r):
    t, ids = held_by_w1
    resumed = t.resume('w1')
    assert [m.id for m in resumed] == ids and [m.deliveries for m in resumed] == [2, 2]
    assert r.zcard('rfq:jobs:leases') == 0 and r.hlen('rfq:jobs:claims') == 2  # the claim and its ':d'
    assert t.commit([ferroq.Message(ids[0], 'jobs', {}, 1)]) == []  # the previous run's count is stale
    assert t.commit(resumed) == ids
    assert r.dbsize() == 0


def test_old_claims_are_released_and_inspected(held_by_w1, r):
    t, ids = held_by_w1
    entries = t.inspect('nextlog')
    assert [(e.id, e.deliveries, e.owner) for e in entries] == [(ids[0], 1, 'w1'), (ids[1], 1, 'w1')]
    assert t.release([ferroq.Message(ids[0], 'jobs', {}, 1)]) == [ids[0]]
    assert r.hget('rfq:jobs:deliveries', ids[0]) == '1' and r.zscore('rfq:jobs:leases', ids[0]) is None
    [again] = t.claim()
    assert (again.id, again.deliveries) == (ids[0], 2)
    assert t.commit([again, ferroq.Message(ids[1], 'jobs', {}, 1)]) == ids
    assert r.dbsize() == 0


def test_a_new_claim_ends_an_old_claim_requeued_by_a_blind_harvest(client, r):
    t = client.topic('jobs')
    [msg_id] = t.publish_batch([{'n': '0'}])
    old_claim(r, 'jobs', 1)
    assert r.rpoplpush('rfq:jobs:nextlog', 'rfq:jobs:backlog') == msg_id  # rfq's blind harvest
    [msg] = t.claim()
    assert msg.deliveries == 2
    assert r.hget('rfq:jobs:deliveries', msg_id) == '1' and r.zscore('rfq:jobs:leases', msg_id) is None
    assert t.commit([ferroq.Message(msg_id, 'jobs', {}, 1)]) == []  # the old holder is refused
    assert t.commit([msg]) == [msg_id]
    assert r.dbsize() == 0


@pytest.mark.parametrize('count', [1, 2])
def test_digits_fence_of_a_batch_claim(client, r, count):
    """A Message kept as id and delivery count (no claim token) still commits its batch claim."""
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(2)])
    got = t.claim(count=2)
    if count == 2:
        assert t.release(got[:1]) == ids[:1]
        got = [t.claim()[0], got[1]]
    kept = [ferroq.Message(m.id, 'jobs', {}, m.deliveries) for m in got]
    assert t.commit([ferroq.Message(kept[0].id, 'jobs', {}, kept[0].deliveries + 1)]) == []
    assert sorted(t.commit(kept)) == sorted(ids)
    assert r.dbsize() == 0
