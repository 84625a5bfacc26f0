"""A Redis ACL user limited to the rsmq keys (and the realtime channels) can use every RSMQ operation.

RSMQ passes times as fake KEYS, which key-pattern ACLs reject; ferroq's scripts take KEYS that are real
keys only.
"""

from __future__ import annotations

import threading

import pytest

from _checks import queue_keys
from ferroq.exceptions import PermissionDenied

USER, PASSWORD = 'rsmq-only', 'rsmq-Pa55'
#: Exactly what the clients and the scripts run, nothing more.
COMMANDS = (
    '+evalsha +script|load +smembers +hmget +subscribe +unsubscribe +ping +hello +auth +select '
    '+client|setname +info '
    '+time +get +set +hexists +hsetnx +hset +hget +hdel +hincrby +sadd +srem +unlink '
    '+zadd +zrem +zscore +zmscore +zcard +zcount +zrangebyscore +publish'
)


@pytest.fixture
def acl_url(r, redis_url):
    # resetchannels: Redis 6.2's `reset` grants every channel, and refuses a channel pattern on top of that.
    rule = ['reset', 'resetchannels', 'on', f'>{PASSWORD}', '~rsmq:*', '&rsmq:rt:*', *COMMANDS.split()]
    r.execute_command('ACL', 'SETUSER', USER, *rule)
    yield redis_url.replace('redis://', f'redis://{USER}:{PASSWORD}@')
    r.execute_command('ACL', 'DELUSER', USER)


def test_every_operation_with_a_key_limited_user(make_client, acl_url, r):
    c = make_client(acl_url)
    dead = c.rsmq('dead')
    dead.create()
    q = c.rsmq('jobs', realtime=True)
    q.create(vt=1, max_receives=5, dead_letter='dead')
    assert c.rsmq_queues() == ['dead', 'jobs']
    assert q.set_attributes(vt=2).vt == 2
    a = q.send('a')
    assert q.receive(vt=0).id == a
    b, c_id = q.send_batch(['b', 'c'])
    d = q.send('d', delay=0)
    assert [(m.id, m.rc) for m in q.receive_batch(2, vt=60)] == [(a, 2), (b, 1)]
    assert q.change_visibility(b, 0) is True
    # b became visible "now" and c was sent moments ago: within one millisecond their scores tie.
    first = q.pop().id
    assert first in {b, c_id}
    assert {m.id for m in q.pop_batch(5)} == {b, c_id, d} - {first}
    assert q.delete_batch([a, b, c_id]) == [a]
    assert q.delete(a) is False
    attrs = q.attributes()
    assert (attrs.totalsent, attrs.totalrecv, attrs.msgs) == (4, 6, 0)
    threading.Timer(0.2, lambda: c.rsmq('jobs', realtime=True).send('late')).start()
    assert q.receive(block=5).message == 'late'
    q.delete_queue()
    dead.delete_queue()
    assert queue_keys(r) == set()  # the send records expire by themselves


def test_other_keys_are_refused(make_client, acl_url, r):
    c = make_client(acl_url)
    with pytest.raises(PermissionDenied):
        c.rsmq('jobs', ns='other').create()
    assert r.keys('*') == []
