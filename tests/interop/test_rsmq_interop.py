"""Interop with the real PyRSMQ 0.6.1 from PyPI, both ways, on the same Redis keys.

PyRSMQ pins no redis-py version, so it is installed into the main .venv (Makefile: ``PYRSMQ_VERSION``).
Every ferroq client kind runs each scenario against a PyRSMQ client on the same server.
"""

from __future__ import annotations

import time
from urllib.parse import urlparse

import pytest
from rsmq import RedisSMQ
from rsmq.cmd.exceptions import NoMessageInQueue


@pytest.fixture
def py(redis_url):
    """A PyRSMQ client on the test server (decode_responses, like its default)."""
    url = urlparse(redis_url)
    queue = RedisSMQ(host=url.hostname, port=url.port)
    yield queue
    queue.client.close()


def py_receive(py, qname, **kwargs):
    try:
        return py.receiveMessage(qname=qname, **kwargs).execute()
    except NoMessageInQueue:
        return None


def test_pyrsmq_sees_ferroq_queues(client, py, r):
    q = client.rsmq('made-by-ferroq')
    q.create(vt=45, delay=2, maxsize=4096)
    assert py.listQueues().execute() == {'made-by-ferroq'}
    _, b, c = q.send_batch(['a', 'b', 'c'], delay=0)
    q.receive(vt=60)
    r.zadd('rsmq:made-by-ferroq', {b: 1000, c: 1000})  # RSMQ and PyRSMQ disagree on "now" in hiddenmsgs
    theirs = py.getQueueAttributes(qname='made-by-ferroq').execute()
    ours = q.attributes()
    for name in ('vt', 'delay', 'maxsize', 'totalrecv', 'totalsent', 'created', 'modified', 'msgs', 'hiddenmsgs'):
        assert float(theirs[name]) == float(getattr(ours, name)), name
    assert (ours.vt, ours.maxsize, ours.totalsent, ours.hiddenmsgs) == (45, 4096, 3, 1)


def test_ferroq_sees_pyrsmq_queues(client, py):
    py.createQueue(qname='made-by-py', vt=20, delay=0).execute()
    assert client.rsmq_queues() == ['made-by-py']
    q = client.rsmq('made-by-py')
    py.sendMessage(qname='made-by-py', message='one').execute()
    theirs = py.getQueueAttributes(qname='made-by-py').execute()
    ours = q.attributes()
    assert ours.maxsize == 65565  # PyRSMQ's default (a typo of 65536), read as stored
    for name in ('vt', 'delay', 'maxsize', 'totalrecv', 'totalsent', 'created', 'modified', 'msgs'):
        assert float(theirs[name]) == float(getattr(ours, name)), name


def test_ferroq_sends_pyrsmq_receives_hides_redelivers_and_ferroq_deletes(client, py):
    py.createQueue(qname='jobs').execute()
    q = client.rsmq('jobs')
    msg_id = q.send('from ferroq')
    first = py_receive(py, 'jobs', vt=0.3)
    assert (first['id'], first['message'], first['rc']) == (msg_id, 'from ferroq', 1)
    assert q.receive() is None  # hidden by PyRSMQ's receive
    time.sleep(0.4)
    again = q.receive(vt=30)
    assert (again.id, again.rc, again.fr) == (msg_id, 2, first['ts'])  # PyRSMQ's ts is RSMQ's fr
    assert py_receive(py, 'jobs') is None
    assert q.delete(msg_id) is True
    assert py.getQueueAttributes(qname='jobs').execute()['msgs'] == 0


def test_pyrsmq_sends_ferroq_receives_hides_redelivers_and_pyrsmq_deletes(client, py):
    q = client.rsmq('jobs')
    q.create()
    msg_id = py.sendMessage(qname='jobs', message='from py').execute()
    m = q.receive(vt=0.3)
    assert (m.id, m.message, m.rc) == (msg_id, 'from py', 1)
    assert abs(m.sent - int(msg_id[:10], 36) / 1000) < 1e-3
    assert py_receive(py, 'jobs') is None  # hidden by ferroq's receive
    time.sleep(0.4)
    again = py_receive(py, 'jobs', vt=30)
    assert (again['id'], again['rc'], again['ts']) == (msg_id, 2, m.fr)
    assert py.deleteMessage(qname='jobs', id=msg_id).execute() is True
    assert q.receive() is None
    assert q.attributes().msgs == 0


def test_fifo_across_both_producers(client, py):
    q = client.rsmq('jobs')
    q.create()
    ids = []
    for i in range(10):
        ids.append(q.send(f'f{i}'))
        ids.append(py.sendMessage(qname='jobs', message=f'p{i}').execute())
    got = [m.id for m in q.receive_batch(20)]
    assert got == ids


def test_pop_and_change_visibility_both_ways(client, py):
    q = client.rsmq('jobs')
    q.create()
    ours = q.send('ours')
    theirs = py.sendMessage(qname='jobs', message='theirs').execute()
    assert py.changeMessageVisibility(qname='jobs', id=ours, vt=60).execute() is True
    assert q.change_visibility(theirs, 60) is True
    assert q.pop() is None
    assert py.changeMessageVisibility(qname='jobs', id=theirs, vt=0).execute() is True
    assert q.change_visibility(ours, 0) is True
    popped = {q.pop().id, py.popMessage(qname='jobs').execute()['id']}
    assert popped == {ours, theirs}
    assert q.attributes().msgs == 0


def test_delete_of_a_never_received_message(client, py):
    q = client.rsmq('jobs')
    q.create()
    a, b = q.send('a'), q.send('b')
    assert py.deleteMessage(qname='jobs', id=a).execute() is False  # PyRSMQ's quirk: deleted, yet False
    assert q.delete(b) is True  # ferroq follows RSMQ: it was there
    assert q.attributes().msgs == 0


def test_float_vt_queue_from_pyrsmq(client, py, r):
    py.createQueue(qname='fast', vt=0.5).execute()
    assert r.hget('rsmq:fast:Q', 'vt') == '0.5'
    q = client.rsmq('fast')
    msg_id = py.sendMessage(qname='fast', message='x').execute()
    m = q.receive()
    assert r.zscore('rsmq:fast', msg_id) - m.fr == 500  # 0.5 s, not RSMQ's parseInt 0
    assert py_receive(py, 'fast') is None
    time.sleep(0.6)
    assert py_receive(py, 'fast')['rc'] == 2


def test_queue_deletion_both_ways(client, py):
    client.rsmq('a').create()
    py.createQueue(qname='b').execute()
    assert client.rsmq_queues() == ['a', 'b']
    py.deleteQueue(qname='a').execute()
    client.rsmq('b').delete_queue()
    assert client.rsmq_queues() == []
    assert py.listQueues().execute() == set()


def test_dead_letter_fields_do_not_disturb_pyrsmq(client, py):
    client.rsmq('dead').create()
    q = client.rsmq('jobs')
    q.create(max_receives=1, dead_letter='dead')
    py.setQueueAttributes(qname='jobs', vt=5).execute()
    assert q.attributes().max_receives == 1
    msg_id = py.sendMessage(qname='jobs', message='poison').execute()
    assert py_receive(py, 'jobs', vt=0)['rc'] == 1
    assert q.receive() is None  # received once already: moved to 'dead'
    assert py_receive(py, 'dead')['id'] == msg_id
