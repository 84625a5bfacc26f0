"""ferroq's dead-letter extension of RSMQ: after max_receives, the next receive moves the message away."""

from __future__ import annotations

import pytest

from ferroq._limits import MIN_RSMQ_COUNT_FOR_CALLER_BODIES
from ferroq.exceptions import QueueNotFound

RSMQ_FIELDS = {'vt', 'delay', 'maxsize', 'created', 'modified'}


@pytest.fixture
def dead(client):
    queue = client.rsmq('dead')
    queue.create()
    return queue


def test_create_with_dead_letter_stores_side_fields(client, r, dead):
    q = client.rsmq('jobs')
    q.create(vt=60, max_receives=2, dead_letter='dead')
    fields = r.hgetall('rsmq:jobs:Q')
    assert set(fields) == RSMQ_FIELDS | {'ferroq:maxrecv', 'ferroq:dlq'}
    assert (fields['ferroq:maxrecv'], fields['ferroq:dlq']) == ('2', 'dead')
    attrs = q.attributes()
    assert (attrs.max_receives, attrs.dead_letter) == (2, 'dead')


def test_dead_letter_queue_must_exist(client, r):
    q = client.rsmq('jobs')
    with pytest.raises(QueueNotFound, match="dead-letter queue 'dead' of RSMQ queue 'jobs' not found"):
        q.create(max_receives=2, dead_letter='dead')
    assert r.keys('*') == []
    q.create()
    before = r.hgetall('rsmq:jobs:Q')
    with pytest.raises(QueueNotFound, match="dead-letter queue 'dead'"):
        q.set_attributes(vt=5, max_receives=2, dead_letter='dead')
    assert r.hgetall('rsmq:jobs:Q') == before


def test_message_moves_on_the_receive_after_max_receives(client, r, dead):
    q = client.rsmq('jobs')
    q.create(max_receives=2, dead_letter='dead')
    poison, fine = q.send_batch(['poison', 'fine'])
    assert [m.rc for m in q.receive_batch(2, vt=0)] == [1, 1]
    assert [m.rc for m in q.receive_batch(2, vt=0)] == [2, 2]
    q.change_visibility(fine, 60)
    # The third receive: poison has been received twice, so it moves instead of being returned.
    assert q.receive(vt=0) is None
    assert r.zscore('rsmq:jobs', poison) is None
    assert not {poison, f'{poison}:rc', f'{poison}:fr'} & set(r.hkeys('rsmq:jobs:Q'))
    assert r.hget('rsmq:dead:Q', poison) == 'poison'
    assert r.hget('rsmq:dead:Q', 'totalsent') == '1'
    m = dead.receive()
    assert (m.id, m.message, m.rc) == (poison, 'poison', 1)
    assert q.attributes().msgs == 1 and dead.attributes().msgs == 1


@pytest.mark.parametrize('count', [3, MIN_RSMQ_COUNT_FOR_CALLER_BODIES], ids=['script-bodies', 'caller-bodies'])
def test_moved_messages_do_not_count_towards_the_batch(client, r, dead, count):
    q = client.rsmq('jobs')
    q.create(max_receives=1, dead_letter='dead')
    ids = q.send_batch([f'p{i}' for i in range(5)])
    q.receive_batch(3, vt=0)  # p0..p2 received once
    got = q.receive_batch(count, vt=0)
    assert [(m.message, m.rc) for m in got] == [('p3', 1), ('p4', 1)]
    # Moved with their bodies (which the receive script reads for them, whoever reads the others').
    assert r.hmget('rsmq:dead:Q', ids[:3]) == ['p0', 'p1', 'p2']
    assert [(m.id, m.message) for m in dead.receive_batch(10)] == list(zip(ids[:3], ['p0', 'p1', 'p2']))


def test_pop_moves_too(client, dead):
    q = client.rsmq('jobs')
    q.create(max_receives=1, dead_letter='dead')
    q.send('x')
    q.receive(vt=0)
    assert q.pop() is None
    assert dead.pop().message == 'x'


def test_set_and_remove_dead_letter(client, r, dead):
    q = client.rsmq('jobs')
    q.create()
    attrs = q.set_attributes(max_receives=1, dead_letter='dead')
    assert (attrs.max_receives, attrs.dead_letter) == (1, 'dead')
    q.send('x')
    q.receive(vt=0)
    attrs = q.set_attributes(max_receives=0)
    assert (attrs.max_receives, attrs.dead_letter) == (None, None)
    assert not {'ferroq:maxrecv', 'ferroq:dlq'} & set(r.hkeys('rsmq:jobs:Q'))
    assert q.receive().rc == 2  # no longer moved


def test_a_queue_object_follows_a_changed_dead_letter_queue(client, r, dead):
    q = client.rsmq('jobs')
    q.create(max_receives=1, dead_letter='dead')
    q.send('a')
    q.receive(vt=0)
    assert q.receive(vt=0) is None  # moved to 'dead'; the object now knows that queue
    client.rsmq('morgue').create()
    client.rsmq('jobs').set_attributes(max_receives=1, dead_letter='morgue')
    q.send('b')
    q.receive(vt=0)
    assert q.receive(vt=0) is None
    assert r.hkeys('rsmq:morgue:Q').count('b') == 0 and 'b' in r.hvals('rsmq:morgue:Q')


def test_missing_dead_letter_queue_at_receive_writes_nothing(client, r, dead):
    q = client.rsmq('jobs')
    q.create(max_receives=1, dead_letter='dead')
    q.send('x')
    dead.delete_queue()
    before = (r.hgetall('rsmq:jobs:Q'), r.zrange('rsmq:jobs', 0, -1, withscores=True))
    with pytest.raises(QueueNotFound, match="dead-letter queue 'dead'"):
        q.receive()
    assert (r.hgetall('rsmq:jobs:Q'), r.zrange('rsmq:jobs', 0, -1, withscores=True)) == before


def test_max_receives_without_a_dead_letter_queue_is_ignored(client, r):
    q = client.rsmq('jobs')
    q.create()
    r.hset('rsmq:jobs:Q', 'ferroq:maxrecv', '1')  # a half-done foreign write: no ferroq:dlq
    q.send('x')
    assert q.receive(vt=0).rc == 1
    assert q.receive(vt=0).rc == 2
