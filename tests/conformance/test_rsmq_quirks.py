"""Queues and messages as PyRSMQ and other RSMQ ports leave them: ferroq's documented choices.

The state is written here with raw commands, exactly as PyRSMQ 0.6.1 writes it (the interop tests run
PyRSMQ itself); these tests pin what every ferroq client makes of it.
"""

from __future__ import annotations

import time

import pytest

from ferroq._limits import MIN_RSMQ_COUNT_FOR_CALLER_BODIES
from ferroq.exceptions import InvalidArgument, MessageTooLarge


def pyrsmq_queue(r, name: str, vt: str = '30', delay: str = '0', maxsize: str = '65565') -> None:
    now = int(time.time())
    r.hset(f'rsmq:{name}:Q', mapping={'vt': vt, 'delay': delay, 'maxsize': maxsize, 'created': now, 'modified': now})
    r.sadd('rsmq:QUEUES', name)


def test_maxsize_65565_is_read_and_enforced_as_stored(client, r):
    pyrsmq_queue(r, 'py')
    q = client.rsmq('py')
    assert q.attributes().maxsize == 65565
    q.send('x' * 65565)
    with pytest.raises(MessageTooLarge, match='maxsize 65565'):
        q.send('x' * 65566)
    with pytest.raises(InvalidArgument):
        q.set_attributes(maxsize=65565)  # ferroq never writes PyRSMQ's typo
    assert r.hget('rsmq:py:Q', 'maxsize') == '65565'


def test_float_vt_and_delay_are_honoured(client, r):
    pyrsmq_queue(r, 'py', vt='0.5', delay='0.25')
    q = client.rsmq('py')
    attrs = q.attributes()
    assert (attrs.vt, attrs.delay) == (0.5, 0.25)
    msg_id = q.send('x')
    sent_score = r.zscore('rsmq:py', msg_id)
    assert sent_score - int(msg_id[:10], 36) // 1000 in (250, 251)
    assert q.receive() is None
    time.sleep(0.3)
    m = q.receive()
    assert r.zscore('rsmq:py', msg_id) - m.fr == 500
    time.sleep(0.6)
    assert q.receive().rc == 2


def test_float_created_is_read(client, r):
    pyrsmq_queue(r, 'py')
    r.hset('rsmq:py:Q', 'modified', '1700000000.75')
    assert client.rsmq('py').attributes().modified == 1700000000


def test_delete_of_a_never_received_message_is_true(client, r):
    pyrsmq_queue(r, 'py')
    q = client.rsmq('py')
    msg_id = q.send('never received')
    assert q.delete(msg_id) is True  # PyRSMQ 0.6.1 says False here although it deletes it


@pytest.mark.parametrize('count', [5, MIN_RSMQ_COUNT_FOR_CALLER_BODIES], ids=['script-bodies', 'caller-bodies'])
def test_phantom_members_are_dropped_not_returned(client, r, count):
    # A member without a body (a foreign or evicted write): the receive script removes it when it reads the
    # bodies; a receive that reads them itself (a large count) finds it missing, leaves it out and deletes it.
    q = client.rsmq('jobs')
    q.create()
    ghost = 'aaaaaaaaaa' + 'G' * 22
    r.zadd('rsmq:jobs', {ghost: 1})
    r.hset('rsmq:jobs:Q', f'{ghost}:rc', 4)
    real = q.send('real')
    got = q.receive_batch(count)
    assert [(m.id, m.message, m.rc) for m in got] == [(real, 'real', 1)]
    assert r.zscore('rsmq:jobs', ghost) is None
    assert not {f'{ghost}:rc', f'{ghost}:fr'} & set(r.hkeys('rsmq:jobs:Q'))
    assert r.zrange('rsmq:jobs', 0, -1) == [real]
    assert q.receive_batch(count) == []  # nothing left: the real one is hidden, the ghost gone


def test_foreign_ids_are_received(client, r):
    q = client.rsmq('jobs')
    q.create()
    foreign = 'X' * 32  # not base36 time: sent is NaN, as parseInt would give
    r.zadd('rsmq:jobs', {foreign: 1})
    r.hset('rsmq:jobs:Q', foreign, 'body')
    m = q.receive()
    assert (m.id, m.message, m.rc) == (foreign, 'body', 1)
    assert m.sent != m.sent or m.sent == int('X' * 10, 36) / 1000
    assert q.delete(foreign) is True
