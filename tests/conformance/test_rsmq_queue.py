"""RSMQ queues: create, attributes, set_attributes, delete_queue, rsmq_queues, with RSMQ's exact layout."""

from __future__ import annotations

import pytest

from _checks import queue_keys
from ferroq.exceptions import QueueExists, QueueNotFound
from ferroq.types import RsmqAttributes


def redis_now(r) -> int:
    return int(r.time()[0])


def test_create_writes_rsmq_layout(client, r):
    before = redis_now(r)
    q = client.rsmq('jobs')
    assert (q.name, q.ns, q.realtime) == ('jobs', 'rsmq', False)
    assert q.create() is None
    fields = r.hgetall('rsmq:jobs:Q')
    assert set(fields) == {'vt', 'delay', 'maxsize', 'created', 'modified'}
    assert (fields['vt'], fields['delay'], fields['maxsize']) == ('30', '0', '65536')
    assert fields['created'] == fields['modified']
    assert before <= int(fields['created']) <= redis_now(r)
    assert r.smembers('rsmq:QUEUES') == {'jobs'}
    assert r.exists('rsmq:jobs') == 0  # the ZSET appears with the first message, as in RSMQ
    assert set(r.keys('*')) == {'rsmq:jobs:Q', 'rsmq:QUEUES'}


def test_create_with_options_and_namespace(client, r):
    q = client.rsmq('Q_1-x', ns='app:v1')
    q.create(vt=0, delay=9_999_999, maxsize=-1)
    assert r.hmget('app:v1:Q_1-x:Q', 'vt', 'delay', 'maxsize') == ['0', '9999999', '-1']
    assert r.smembers('app:v1:QUEUES') == {'Q_1-x'}
    assert client.rsmq_queues(ns='app:v1') == ['Q_1-x']
    assert client.rsmq_queues() == []


def test_create_twice_raises_queue_exists_and_changes_nothing(client, r):
    q = client.rsmq('jobs')
    q.create(vt=5)
    before = r.hgetall('rsmq:jobs:Q')
    with pytest.raises(QueueExists, match="'jobs'"):
        client.rsmq('jobs').create(vt=7)
    assert r.hgetall('rsmq:jobs:Q') == before


def test_rsmq_queues_sorted(client):
    for name in ['b', 'a', 'c-1']:
        client.rsmq(name).create()
    assert client.rsmq_queues() == ['a', 'b', 'c-1']


def test_attributes_of_new_queue(client, r):
    q = client.rsmq('jobs')
    q.create(vt=12, delay=3, maxsize=2048)
    attrs = q.attributes()
    assert isinstance(attrs, RsmqAttributes)
    assert (attrs.vt, attrs.delay, attrs.maxsize) == (12, 3, 2048)
    assert (attrs.totalrecv, attrs.totalsent, attrs.msgs, attrs.hiddenmsgs) == (0, 0, 0, 0)
    assert attrs.created == attrs.modified == int(r.hget('rsmq:jobs:Q', 'created'))
    assert (attrs.max_receives, attrs.dead_letter) == (None, None)


def test_attributes_count_messages(client, r):
    q = client.rsmq('jobs')
    q.create(vt=60)
    ids = q.send_batch(['a', 'b', 'c'])
    q.send('later', delay=100)
    q.receive()
    # RSMQ counts as hidden every score from the start of the current second: age the visible ones.
    r.zadd('rsmq:jobs', {ids[1]: 1000, ids[2]: 1000})
    attrs = q.attributes()
    assert (attrs.totalsent, attrs.totalrecv, attrs.msgs, attrs.hiddenmsgs) == (4, 1, 4, 2)


def test_set_attributes(client, r):
    q = client.rsmq('jobs')
    q.create()
    r.hset('rsmq:jobs:Q', 'modified', '1')
    attrs = q.set_attributes(vt=1, maxsize=-1)
    assert (attrs.vt, attrs.delay, attrs.maxsize) == (1, 0, -1)
    assert r.hmget('rsmq:jobs:Q', 'vt', 'delay', 'maxsize') == ['1', '0', '-1']
    assert int(r.hget('rsmq:jobs:Q', 'modified')) >= redis_now(r) - 2
    assert attrs.modified == int(r.hget('rsmq:jobs:Q', 'modified'))
    assert q.set_attributes(delay=4).delay == 4
    assert r.hget('rsmq:jobs:Q', 'vt') == '1'


def test_missing_queue_raises_queue_not_found_and_writes_nothing(client, r):
    q = client.rsmq('nope')
    for call in (
        q.attributes,
        lambda: q.set_attributes(vt=1),
        lambda: q.send('x'),
        lambda: q.send_batch(['x', 'y']),
        q.receive,
        lambda: q.receive_batch(3),
        q.pop,
        lambda: q.pop_batch(2),
        lambda: q.change_visibility('a' * 32, 1),
        q.delete_queue,
    ):
        with pytest.raises(QueueNotFound, match="RSMQ queue 'nope' not found in namespace 'rsmq'"):
            call()
    assert r.keys('*') == []


def test_delete_queue_removes_everything(client, r):
    q = client.rsmq('jobs')
    q.create()
    q.send_batch(['a', 'b'])
    q.receive()
    client.rsmq('other').create()
    q.delete_queue()
    assert queue_keys(r) == {'rsmq:QUEUES', 'rsmq:other:Q'}  # the send records expire by themselves
    assert client.rsmq_queues() == ['other']
    with pytest.raises(QueueNotFound):
        q.delete_queue()
    q.create()  # a deleted queue can be created again
    assert q.attributes().totalsent == 0
