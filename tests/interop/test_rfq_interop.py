"""Interop with the real rfq 1.4.0 from PyPI, in its own venv (.venv-rfq, redis-py 3.5), in both directions.

rfq runs in a subprocess (tests/interop/rfq_driver.py, or rfq's own CLI) against the test server's DB 0.
A missing .venv-rfq fails these tests: `make setup` creates it.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from _checks import bodies

pytestmark = pytest.mark.interop


def test_rfq_publishes_ferroq_claims_and_commits(client, rfq, r):
    back = [{'n': f's{i}', 'tile': 'T32UNE'} for i in range(3)]
    batch = [{'n': f'b{i}'} for i in range(4)]
    front_batch = [{'n': 'fb0'}, {'n': 'fb1'}]
    results = rfq(
        *[{'op': 'publish', 'topic': 'jobs', 'message': m} for m in back],
        {'op': 'publish_batch', 'topic': 'jobs', 'messages': batch},
        {'op': 'publish', 'topic': 'jobs', 'message': {'n': 'F'}, 'front': True},
        {'op': 'publish_batch', 'topic': 'jobs', 'messages': front_batch, 'front': True},
    )
    rfq_ids = set(results[:3]) | set(results[3]) | {results[4]} | set(results[5])
    assert len(rfq_ids) == 10
    t = client.topic('jobs')
    got = t.claim(count=20, lease=30)
    assert bodies(got) == ['fb0', 'fb1', 'F', 's0', 's1', 's2', 'b0', 'b1', 'b2', 'b3']
    assert {m.id for m in got} == rfq_ids
    assert got[3].fields == {'n': 's0', 'tile': 'T32UNE'}
    for m in got:
        assert m.deliveries == 1
        assert abs((datetime.now(m.published.tzinfo) - m.published).total_seconds()) < 60
    assert t.commit(got) == [m.id for m in got]
    assert r.dbsize() == 0


def test_ferroq_publishes_rfq_consumes_and_commits(client, rfq, r):
    t = client.topic('jobs')
    messages = [{'n': str(i), 'ключ': 'значение ✓'} for i in range(5)]
    ids = t.publish_batch(messages)
    front = t.publish({'n': 'front'}, front=True)
    [tasks] = rfq({'op': 'consume', 'topic': 'jobs', 'count': 10, 'done': True})
    assert [task['id'] for task in tasks] == [front, *ids]
    assert [task['fields'] for task in tasks] == [{'n': 'front'}, *messages]
    for task in tasks:  # rfq reads the publish time from ferroq's ids (naive UTC)
        published = datetime.fromisoformat(task['published']).replace(tzinfo=timezone.utc)
        assert abs(datetime.now(timezone.utc) - published) < timedelta(seconds=60)
    # Only the single publish's record is left, for the client's next request to delete.
    assert r.keys('*') == [f'rfq:jobs:published:{front}']
    client.ping()
    assert r.dbsize() == 0


def test_rfq_lists_ferroq_topics_and_queues(client, rfq, rfq_cli, r):
    a, b = client.topic('alpha'), client.topic('beta.x')
    a_ids = a.publish_batch([{'n': str(i)} for i in range(3)])
    b.publish_batch([{'n': '0'}, {'n': '1'}])
    [held] = a.claim(lease=60)  # alpha now also has leases and deliveries keys: rfq must not see them as topics
    assert sorted(rfq_cli('list-topics')) == ['alpha', 'beta.x']
    assert rfq_cli('list-queue', '-t', 'alpha') == a_ids[1:][::-1]  # LRANGE 0 -1: the newest first
    assert rfq_cli('list-queue', '-t', 'alpha', '-q', 'nextlog') == [held.id]
    topics, info, peek = rfq(
        {'op': 'topics'}, {'op': 'info', 'topic': 'alpha'}, {'op': 'peek', 'topic': 'alpha', 'id': a_ids[2]}
    )
    assert topics == ['alpha', 'beta.x'] == client.topics()
    assert info == [2, 1]
    assert peek == {'n': '2'}
    [commit_result] = rfq({'op': 'done', 'topic': 'alpha', 'ids': [held.id]})
    assert commit_result == [held.id]


def test_rfq_consumer_claim_gets_a_lease_at_first_sight(client, rfq, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': '0'}, {'n': '1'}])
    [[taken]] = rfq({'op': 'consume', 'topic': 'jobs', 'count': 1, 'done': False})  # rfq holds message 0
    assert taken['id'] == ids[0]
    assert t.harvest(lease=0.3) == []  # not requeued: it gets a lease now
    assert r.zscore('rfq:jobs:leases', ids[0]) is not None
    assert bodies(t.claim(count=5)) == ['1']  # rfq's message is not handed out twice meanwhile
    time.sleep(0.45)
    assert t.harvest() == [ids[0]]  # the rfq consumer let its lease expire: requeued
    [again] = t.claim(lease=30)
    assert again.id == ids[0] and again.fields == {'n': '0'}
    assert t.commit([again]) == [ids[0]]
    rfq({'op': 'done', 'topic': 'jobs', 'ids': [ids[0]]})  # the rfq consumer's late commit is harmless
    [one] = t.inspect('nextlog')
    assert one.id == ids[1]
    assert t.commit([ids[1]]) == [ids[1]]
    assert r.dbsize() == 0


def test_rfq_commit_then_ferroq_harvest_cleans_side_keys(client, rfq, r):
    t = client.topic('jobs')
    msg_id = t.publish({'n': '0'})
    [[taken]] = rfq({'op': 'consume', 'topic': 'jobs', 'done': False})
    assert t.harvest(lease=0.2) == []  # leased at first sight
    rfq({'op': 'done', 'topic': 'jobs', 'ids': [taken['id']]})  # rfq's commit: it knows nothing of the lease
    assert set(r.keys('*')) == {'rfq:jobs:leases'}
    time.sleep(0.35)
    assert t.harvest() == []  # the expired lease of a message that is gone: dropped, not requeued
    assert r.dbsize() == 0
    assert t.peek(msg_id) is None


def test_rfq_commit_of_ferroq_claim_then_ferroq_commit_cleans_side_keys(client, rfq, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    [msg] = t.claim(lease=30)
    rfq({'op': 'done', 'topic': 'jobs', 'ids': [msg.id]})
    assert set(r.keys('*')) == {'rfq:jobs:claims', 'rfq:jobs:claim_leases', 'rfq:jobs:inflight'}
    assert t.commit([msg]) == [msg.id]
    assert r.dbsize() == 0


def test_rfq_blind_harvest_vs_ferroq_fencing(client, rfq, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': '0'}, {'n': '1'}])
    held = t.claim(count=2, lease=30)
    assert t.harvest() == []  # ferroq's harvest: leases not expired, nothing moves
    [moved] = rfq({'op': 'harvest', 'topic': 'jobs'})  # rfq's harvest: everything in flight goes back
    assert moved == sorted(ids)
    again = t.claim(count=2, lease=30)
    assert sorted(m.id for m in again) == sorted(ids)
    assert [m.deliveries for m in again] == [2, 2]
    assert t.commit(held) == []  # the first holders' late commits are fenced off
    assert t.commit(again) == [m.id for m in again]
    assert r.dbsize() == 0


def test_rfq_purge_of_ferroq_topic(client, rfq, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(3)])
    [purged] = rfq({'op': 'purge', 'topic': 'jobs', 'queue': 'backlog'})
    assert purged == ids
    assert t.stats().backlog == 0
    assert r.dbsize() == 0
