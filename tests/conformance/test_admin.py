"""peek, inspect, stats, purge, topics, ping, and a full drain that leaves nothing behind."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from _checks import assert_recent, bodies
from _redis import commandstats
from ferroq.types import InspectEntry, TopicStats

LEASE_SHORT = 0.15


def test_peek(client):
    t = client.topic('jobs')
    msg_id = t.publish({'a': '1', 'b': '2'})
    assert t.peek(msg_id) == {'a': '1', 'b': '2'}
    assert t.peek('0' * 32) is None
    t.claim()
    assert t.peek(msg_id) == {'a': '1', 'b': '2'}  # peeking does not care where the message is


def test_inspect_backlog(client):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(5)])
    page = t.inspect()
    assert [e.id for e in page] == ids  # consumption order: the next to be claimed first
    for i, e in enumerate(page):
        assert isinstance(e, InspectEntry)
        assert e.fields == {'n': str(i)}
        assert (e.deliveries, e.claimed_at, e.lease_deadline) == (0, None, None)
        assert_recent(e.published)
    assert [e.id for e in t.inspect('backlog', start=1, count=2)] == ids[1:3]
    assert [e.id for e in t.inspect('backlog', start=4, count=100)] == ids[4:]
    assert t.inspect('backlog', start=5) == []
    assert t.inspect('nextlog') == []


def test_inspect_nextlog(client):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(3)])
    t.claim(count=2, lease=60)
    page = t.inspect('nextlog')
    assert [e.id for e in page] == ids[:2]  # the oldest claim first
    for e in page:
        assert e.deliveries == 1
        assert_recent(e.claimed_at)
        assert e.lease_deadline is not None
        delta = e.lease_deadline - e.claimed_at
        assert timedelta(seconds=59) <= delta <= timedelta(seconds=61), delta
    [waiting] = t.inspect('backlog')
    assert waiting.id == ids[2] and waiting.deliveries == 0


def test_inspect_shows_missing_message_as_none(client, r):
    t = client.topic('jobs')
    r.lpush('rfq:jobs:backlog', 'a' * 32)
    [e] = t.inspect()
    assert e.id == 'a' * 32
    assert e.fields is None


def test_stats(client):
    t = client.topic('jobs')
    assert t.stats() == TopicStats('jobs', 0, 0, 0, 0, None)
    t.publish_batch([{'n': str(i)} for i in range(4)])
    time.sleep(0.25)
    t.claim(lease=0.1)
    t.claim(lease=30)
    time.sleep(0.25)
    s = t.stats()
    assert isinstance(s, TopicStats)
    assert (s.topic, s.backlog, s.nextlog, s.leased, s.expired) == ('jobs', 2, 2, 2, 1)
    assert s.oldest_age is not None and 0.4 <= s.oldest_age < 10


def test_stats_oldest_age_ignores_foreign_ids(client, r):
    t = client.topic('jobs')
    r.lpush('rfq:jobs:backlog', 'not-a-uuid')
    r.hset('rfq:jobs:message:not-a-uuid', 'n', '0')
    s = t.stats()
    assert (s.backlog, s.oldest_age) == (1, None)


def test_purge_backlog(client, r):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(5)])
    assert t.purge() == 5
    assert r.dbsize() == 0
    assert t.purge() == 0


def test_purge_nextlog(client, r):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(5)])
    got = t.claim(count=3)
    assert t.purge('nextlog') == 3
    assert t.commit(got) == []
    s = t.stats()
    assert (s.backlog, s.nextlog, s.leased, s.expired) == (2, 0, 0, 0)
    assert t.purge('backlog') == 2
    assert r.dbsize() == 0


def test_purge_more_than_one_step(client, r):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(2500)])  # the purge script removes 1000 per call
    assert t.purge() == 2500
    assert r.dbsize() == 0


def test_topics(client, r):
    assert client.topics() == []
    client.topic('b.c').publish({'n': '0'})
    client.topic('a').publish({'n': '0'})
    client.topic('in-flight').publish({'n': '0'})
    client.topic('in-flight').claim()  # only its nextlog exists now
    r.set('rfq:not-a-list:backlog', 'x')
    assert client.topics() == ['a', 'b.c', 'in-flight']
    assert 'keys' not in commandstats(r), 'topics() must SCAN, never KEYS'


def test_topics_many_keys(client, r):
    names = [f't{i:03d}' for i in range(150)]
    for n in names:
        r.lpush(f'rfq:{n}:backlog', 'x')
    r.mset({f'filler:{i}': 'x' for i in range(3000)})  # SCAN must iterate past unrelated keys
    assert client.topics() == names
    assert 'keys' not in commandstats(r)


def test_full_drain_leaves_no_keys(client, r):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(50)])
    t.publish({'n': 'front'}, front=True)
    first = t.claim(count=10, lease=LEASE_SHORT)
    time.sleep(0.35)
    assert sorted(t.harvest()) == sorted(m.id for m in first)
    seen = []
    for _ in range(20):
        got = t.claim(count=7)
        if not got:
            break
        seen += bodies(got)
        assert t.commit(got) == [m.id for m in got]
    assert sorted(seen) == sorted(['front'] + [str(i) for i in range(50)])
    assert t.stats() == TopicStats('jobs', 0, 0, 0, 0, None)
    assert r.dbsize() == 0
    assert client.topics() == []


def test_ping(client):
    assert client.ping() is True


def test_message_published_time(client):
    before = datetime.now(timezone.utc)
    client.topic('jobs').publish({'n': '0'})
    [msg] = client.topic('jobs').claim()
    assert before - timedelta(seconds=1) <= msg.published <= datetime.now(timezone.utc) + timedelta(seconds=1)
