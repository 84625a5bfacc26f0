"""commit (fenced), extend, release, harvest: what happens to a claim."""

from __future__ import annotations

import random
import time

import ferroq
from _checks import bodies

LEASE = 0.2
PAST_LEASE = 0.45


def test_commit_returns_what_was_committed(client, r):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(3)])
    got = t.claim(count=3)
    assert t.commit(got[::-1]) == [m.id for m in got[::-1]]  # input order
    assert t.commit(got) == []  # already gone
    assert r.dbsize() == 0


def test_commit_lists_a_message_once_even_if_given_twice(client, r):
    t = client.topic('jobs')
    t.publish_batch([{'n': '0'}, {'n': '1'}])
    claimed = t.claim(count=2)
    assert t.commit([claimed[0], claimed[0], claimed[1]]) == [claimed[0].id, claimed[1].id]
    assert r.dbsize() == 0


def test_commit_out_of_claim_order_leaves_the_rest_in_order(client, r):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(6)])
    got = t.claim(count=6)
    # the two oldest claims in claim order, then two out of order
    assert t.commit([got[0], got[1], got[4], got[2]]) == [got[0].id, got[1].id, got[4].id, got[2].id]
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [got[5].id, got[3].id]
    claim = got[0].claim  # the claim still holds the two others, in claim order, under its lease
    assert r.hget('rfq:jobs:claims', claim).split(' ')[2:] == [got[3].id, got[5].id]
    assert r.zrange('rfq:jobs:claim_leases', 0, -1) == [claim]
    assert r.smembers('rfq:jobs:inflight') == {got[3].id, got[5].id}
    assert t.commit([got[5], got[3]]) == [got[5].id, got[3].id]
    assert r.dbsize() == 0


def test_commit_of_whole_claims_in_claim_order(client, r):
    """The usual commit, a whole claim in claim order (the script's path with no work per id when the claim is
    the nextlog's tail block and has no redelivery), leaves exactly the other claims' state."""
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(7)])
    older, newer = t.claim(count=3), t.claim(count=3)
    assert t.commit(older) == [m.id for m in older]  # the tail block
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [m.id for m in newer[::-1]]
    assert r.hkeys('rfq:jobs:claims') == [newer[0].claim]
    assert r.zrange('rfq:jobs:claim_leases', 0, -1) == [newer[0].claim]
    assert r.smembers('rfq:jobs:inflight') == {m.id for m in newer}
    assert {k.rsplit(':', 1)[1] for k in r.scan_iter('rfq:jobs:message:*')} == {m.id for m in newer} | {ids[6]}
    last = t.claim(count=1)
    assert t.commit(newer) == [m.id for m in newer]  # whole, but not at the tail: the general path
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [last[0].id]
    # A redelivery (a ':d' record): released, claimed again and committed whole.
    t.release(last)
    again = t.claim(count=1)
    assert again[0].deliveries == 2 and r.hexists('rfq:jobs:claims', f'{again[0].claim}:d')
    assert t.commit(again) == [again[0].id]
    assert r.dbsize() == 0


def test_commit_of_a_claim_in_parts_in_claim_order(client, r):
    """A consumer committing a claim in parts as it handles them (the script keeps the rest of the claim's
    record as it is): each part leaves exactly the claim's other ids held, leased and fenced."""
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(9)])
    older = t.claim(count=1)
    t.release(t.claim(count=1))  # back at the front: the next claim's first id is a redelivery
    got = t.claim(count=8)
    claim = got[0].claim
    assert got[0].deliveries == 2 and r.hexists('rfq:jobs:claims', f'{claim}:d')
    assert t.commit(got[:3]) == [m.id for m in got[:3]]  # not at the tail: the older claim is
    assert r.hget('rfq:jobs:claims', claim).split(' ')[2:] == [m.id for m in got[3:]]
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [m.id for m in got[3:][::-1]] + [older[0].id]
    assert r.smembers('rfq:jobs:inflight') == {older[0].id} | {m.id for m in got[3:]}
    assert r.hlen('rfq:jobs:deliveries') == 0  # the redelivery's record went with its commit
    assert t.commit(got[:3]) == []  # committed already: refused, nothing else changes
    assert r.hget('rfq:jobs:claims', claim).split(' ')[2:] == [m.id for m in got[3:]]
    # the rest is still held under the claim's fence: renewed, released and committed as any held id
    assert t.extend(got[3:5], lease=60) == [m.id for m in got[3:5]]
    assert t.release(got[4:5]) == [got[4].id]
    assert r.hget('rfq:jobs:claims', claim).split(' ')[2:] == [got[3].id] + [m.id for m in got[5:]]
    assert t.commit([got[3], got[5]]) == [got[3].id, got[5].id]
    assert t.commit(got[6:]) == [m.id for m in got[6:]]  # the rest: the claim, its ':d' and its lease go
    assert r.hkeys('rfq:jobs:claims') == [older[0].claim]
    assert r.zrange('rfq:jobs:claim_leases', 0, -1) == [older[0].claim]
    assert t.commit(older) == [older[0].id]
    again = t.claim(count=1)  # the released one, on its second delivery
    assert again[0].id == got[4].id and again[0].deliveries == 2
    assert t.commit(again) == [got[4].id]
    assert r.dbsize() == 0


def _lrem_from_tail(items: list[str], ids: list[str]) -> list[str]:
    """What LREM list -1 <id> for each id leaves (items head first)."""
    items = list(items)
    for i in ids:
        if i in items:
            del items[len(items) - 1 - items[::-1].index(i)]
    return items


def test_commit_takes_ids_from_the_nextlog_as_lrem_from_the_tail(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(5)])
    t.claim(count=5)
    # Ids twice in the nextlog (a plain rfq client can do that), at the tail and at the head.
    r.rpush('rfq:jobs:nextlog', ids[1])
    r.lpush('rfq:jobs:nextlog', ids[0])
    steps = [
        ([], [ids[1], ids[0]]),  # the tail, in claim order
        ([], [ids[3], ids[2]]),  # not at the tail
        ([ids[4], ids[4]], [ids[1], ids[4]]),  # an id twice at the tail: only one goes
    ]
    for pushed, order in steps:
        if pushed:
            r.rpush('rfq:jobs:nextlog', *pushed)
        expected = _lrem_from_tail(r.lrange('rfq:jobs:nextlog', 0, -1), order)
        assert t.commit(order) == order  # bare ids: unfenced
        assert r.lrange('rfq:jobs:nextlog', 0, -1) == expected
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [ids[0], ids[4], ids[4]]


def test_commit_out_of_claim_order_leaves_what_lrem_from_the_tail_would(client, r):
    # Four consumers' batches in the nextlog, committed out of claim order and shuffled: 8 ids or more
    # out of order take the one-walk path of the commit script, fewer one LREM each.
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(43)])
    batches = [t.claim(count=n) for n in (10, 10, 10, 10, 3)]
    # ids twice in the nextlog (a plain rfq client can do that): one at the tail, one at the head
    r.rpush('rfq:jobs:nextlog', batches[1][3].id)
    r.lpush('rfq:jobs:nextlog', batches[1][5].id)
    rng = random.Random(7)
    for i in (1, 3, 4, 0, 2):
        order = list(batches[i])
        rng.shuffle(order)
        expected = _lrem_from_tail(r.lrange('rfq:jobs:nextlog', 0, -1), [m.id for m in order])
        assert t.commit(order) == [m.id for m in order]
        assert r.lrange('rfq:jobs:nextlog', 0, -1) == expected
    # the second copies stay, as LREM -1 per id would leave them; every side entry is gone
    assert sorted(r.lrange('rfq:jobs:nextlog', 0, -1)) == sorted([batches[1][3].id, batches[1][5].id])
    assert r.hlen('rfq:jobs:deliveries') == 0 and r.zcard('rfq:jobs:leases') == 0


def test_commit_empty_is_a_no_op(client):
    assert client.topic('jobs').commit([]) == []


def test_commit_bare_id_is_unfenced(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    [msg] = t.claim()
    assert t.commit([msg.id]) == [msg.id]
    assert r.dbsize() == 0


def test_commit_of_unclaimed_message_is_refused(client, r):
    t = client.topic('jobs')
    msg_id = t.publish({'n': '0'})
    assert t.commit([msg_id]) == []  # still waiting in the backlog: nothing holds it
    assert r.lrange('rfq:jobs:backlog', 0, -1) == [msg_id]


def test_fenced_commit_after_lease_takeover(client, r):
    t = client.topic('jobs')
    msg_id = t.publish({'n': '0'})
    [old] = t.claim(lease=LEASE)
    time.sleep(PAST_LEASE)
    assert t.harvest() == [msg_id]
    [new] = t.claim(lease=30)
    assert new.id == msg_id
    assert (old.deliveries, new.deliveries) == (1, 2)
    assert new.token == 2
    # The old holder's late commit is refused and the new claim is untouched.
    assert t.commit([old]) == []
    assert t.peek(msg_id) == {'n': '0'}
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [msg_id]
    assert r.hget('rfq:jobs:claims', new.claim + ':d') == msg_id  # its ids claimed before
    assert r.hget('rfq:jobs:claims', new.claim).split(' ')[2:] == [msg_id]
    assert r.zscore('rfq:jobs:claim_leases', new.claim) is not None
    assert r.hget('rfq:jobs:deliveries', msg_id) == '1'  # one claim ended without a commit
    assert t.extend([old]) == []
    assert t.release([old]) == []
    assert t.commit([new]) == [msg_id]
    assert r.dbsize() == 0


def test_fenced_commit_after_expiry_without_takeover(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    [msg] = t.claim(lease=LEASE)
    time.sleep(PAST_LEASE)
    # Expired but not harvested yet: nobody else holds it, the holder may still commit.
    assert t.commit([msg]) == [msg.id]
    assert r.dbsize() == 0


def test_extend_keeps_message_from_harvest(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    [msg] = t.claim(lease=0.3)
    assert t.extend([msg], lease=30) == [msg.id]
    time.sleep(PAST_LEASE)
    assert t.harvest() == []
    assert t.stats().expired == 0
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [msg.id]
    assert t.commit([msg]) == [msg.id]


def test_extend_sets_deadline_from_now(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    [msg] = t.claim(lease=30)
    assert t.extend([msg.id], lease=120) == [msg.id]  # a bare id extends without fencing
    sec, usec = r.time()
    now_ms = int(sec) * 1000 + int(usec) // 1000
    assert 110_000 < r.zscore('rfq:jobs:claim_leases', msg.claim) - now_ms <= 120_000
    assert t.extend([], lease=5) == []


def test_extend_unknown_id_returns_nothing(client):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    assert t.extend(['0' * 32]) == []


def test_release_puts_back_at_the_front(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': n} for n in 'abc'])
    got = t.claim(count=2)
    assert t.release(got) == ids[:2]
    assert r.llen('rfq:jobs:nextlog') == 0
    assert r.zcard('rfq:jobs:leases') == 0
    again = t.claim(count=3)
    assert bodies(again) == ['a', 'b', 'c']
    assert [m.deliveries for m in again] == [2, 2, 1]
    assert t.release([]) == []


def test_release_is_fenced(client):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    [old] = t.claim(lease=LEASE)
    time.sleep(PAST_LEASE)
    t.harvest()
    [new] = t.claim()
    assert t.release([old]) == []
    assert t.release([new]) == [new.id]


def test_harvest_requeues_only_expired_leases(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': 'short'}, {'n': 'long'}, {'n': 'waiting'}])
    [short] = t.claim(lease=LEASE)
    [long_] = t.claim(lease=30)
    assert t.harvest() == []
    time.sleep(PAST_LEASE)
    assert t.harvest() == [ids[0]]
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [long_.id]
    # Requeued at the consume end: redelivered before newer work, with its delivery count kept.
    assert r.lrange('rfq:jobs:backlog', 0, -1) == [ids[2], ids[0]]
    [again] = t.claim()
    assert again.id == short.id and again.deliveries == 2
    assert t.harvest() == []


def test_harvest_leases_plain_rfq_claims_at_first_sight(client, r):
    t = client.topic('jobs')
    msg_id = t.publish({'n': '0'})
    # A plain rfq consumer: BRPOPLPUSH (here LMOVE) with no lease and no delivery count.
    assert r.lmove('rfq:jobs:backlog', 'rfq:jobs:nextlog', 'RIGHT', 'LEFT') == msg_id
    assert t.harvest(lease=0.3) == []
    assert r.zscore('rfq:jobs:leases', msg_id) is not None
    assert t.harvest(lease=0.3) == []  # an unexpired lease: not yet
    time.sleep(PAST_LEASE)
    assert t.harvest(lease=0.3) == [msg_id]
    assert r.lrange('rfq:jobs:backlog', 0, -1) == [msg_id]
    assert r.llen('rfq:jobs:nextlog') == 0
    [msg] = t.claim()
    assert msg.id == msg_id
    assert t.commit([msg]) == [msg_id]
    assert r.dbsize() == 0


def test_harvest_drops_side_entries_of_ids_committed_elsewhere(client, r):
    t = client.topic('jobs')
    msg_id = t.publish({'n': '0'})
    r.lmove('rfq:jobs:backlog', 'rfq:jobs:nextlog', 'RIGHT', 'LEFT')
    t.harvest(lease=LEASE)
    # rfq's Task.done: LREM nextlog, LREM backlog, DEL message; it knows nothing of the side keys.
    r.lrem('rfq:jobs:nextlog', 1, msg_id)
    r.delete(f'rfq:jobs:message:{msg_id}')
    time.sleep(PAST_LEASE)
    assert t.harvest() == []
    assert r.dbsize() == 0


def test_fenced_commit_checks_a_first_sight_lease(client, r):
    """A count without a claim (released, then taken by a plain rfq consumer and leased by harvest at first sight):
    a commit fenced by the delivery count is accepted while the id is leased and its count is the token; the
    released claim's own commit is refused."""
    t = client.topic('jobs')
    msg_id = t.publish({'n': '0'})
    [msg] = t.claim(lease=30)
    assert t.release([msg]) == [msg_id]
    assert r.hget('rfq:jobs:deliveries', msg_id) == '1'
    assert r.lmove('rfq:jobs:backlog', 'rfq:jobs:nextlog', 'RIGHT', 'LEFT') == msg_id
    stale = ferroq.Message(msg_id, 'jobs', {'n': '0'}, 2)
    assert t.commit([stale]) == []  # not leased yet
    assert t.harvest(lease=30) == []
    assert t.commit([stale]) == []  # leased, but the count is 1
    assert t.commit([msg]) == []  # its claim was released
    assert t.commit([ferroq.Message(msg_id, 'jobs', {'n': '0'}, 1)]) == [msg_id]
    assert r.dbsize() == 0


def test_harvest_all_requeues_everything(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(3)])
    t.claim(count=2, lease=30)
    assert t.harvest(all=True) == ids[:2]  # the order moved: oldest claim first
    assert r.llen('rfq:jobs:nextlog') == 0
    assert r.exists('rfq:jobs:leases') == 0
    # rfq's order: each goes to the backlog's head, so it is consumed after what was already waiting.
    assert r.lrange('rfq:jobs:backlog', 0, -1) == [ids[1], ids[0], ids[2]]
    again = t.claim(count=3)
    assert bodies(again) == ['2', '0', '1']
    assert [m.deliveries for m in again] == [1, 2, 2]


def test_harvest_empty_topic(client, r):
    t = client.topic('jobs')
    assert t.harvest() == []
    assert t.harvest(all=True) == []
    assert r.dbsize() == 0
