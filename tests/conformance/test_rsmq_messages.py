"""RSMQ messages: send, receive, pop, delete, change_visibility and their batches, with RSMQ's exact writes."""

from __future__ import annotations

import gc
import re
import threading
import time

import pytest

from ferroq._limits import MIN_RSMQ_COUNT_FOR_CALLER_BODIES
from ferroq.exceptions import OutOfMemory
from ferroq.types import RsmqMessage, rsmq_sent

RSMQ_ID = re.compile(r'[0-9a-z]{10}[A-Za-z0-9]{22}')


def redis_ms(r) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def _next_ms(r) -> None:
    """Returns once the server's clock is past the millisecond it read first."""
    seen = redis_ms(r)
    while redis_ms(r) <= seen:
        time.sleep(0.001)


@pytest.fixture
def q(client):
    queue = client.rsmq('jobs')
    queue.create()
    return queue


def test_send_writes_rsmq_fields(q, r):
    t0 = redis_ms(r)
    msg_id = q.send('hello')
    t1 = redis_ms(r)
    assert RSMQ_ID.fullmatch(msg_id), msg_id
    # The first 10 characters: epoch microseconds in base36, from the Redis clock.
    assert t0 * 1000 <= int(msg_id[:10], 36) <= t1 * 1000 + 999
    assert r.hget('rsmq:jobs:Q', msg_id) == 'hello'
    assert r.hget('rsmq:jobs:Q', 'totalsent') == '1'
    assert r.hexists('rsmq:jobs:Q', f'{msg_id}:rc') == 0
    score = r.zscore('rsmq:jobs', msg_id)
    assert t0 <= score <= t1 and score == int(score)
    assert r.zcard('rsmq:jobs') == 1


def test_send_with_delay(q, r):
    t0 = redis_ms(r)
    msg_id = q.send('later', delay=100)
    assert t0 + 100_000 <= r.zscore('rsmq:jobs', msg_id) <= redis_ms(r) + 100_000
    assert q.receive() is None
    sub = q.send('soon', delay=0.25)  # a fraction: ms resolution
    assert r.zscore('rsmq:jobs', sub) - r.zscore('rsmq:jobs', msg_id) < -99_000
    assert q.receive() is None
    time.sleep(0.35)
    assert q.receive().message == 'soon'


def test_queue_delay_is_the_default(client, r):
    queue = client.rsmq('slow')
    queue.create(delay=60)
    t0 = redis_ms(r)
    msg_id = queue.send('x')
    assert r.zscore('rsmq:slow', msg_id) >= t0 + 60_000
    assert queue.receive() is None
    now_id = queue.send('y', delay=0)
    assert queue.receive().id == now_id


def test_receive_hides_for_vt_and_redelivers(q, r):
    msg_id = q.send('work')
    t0 = redis_ms(r)
    m = q.receive(vt=0.3)
    assert isinstance(m, RsmqMessage)
    assert (m.id, m.message, m.rc) == (msg_id, 'work', 1)
    assert t0 <= m.fr <= redis_ms(r)
    assert m.sent == int(msg_id[:10], 36) / 1000
    assert r.hget('rsmq:jobs:Q', f'{msg_id}:rc') == '1'
    assert r.hget('rsmq:jobs:Q', f'{msg_id}:fr') == str(m.fr)
    assert r.hget('rsmq:jobs:Q', 'totalrecv') == '1'
    assert m.fr + 300 <= r.zscore('rsmq:jobs', msg_id) <= redis_ms(r) + 300
    assert q.receive() is None
    time.sleep(0.4)
    again = q.receive(vt=60)
    assert (again.id, again.rc, again.fr) == (msg_id, 2, m.fr)
    assert r.hget('rsmq:jobs:Q', f'{msg_id}:fr') == str(m.fr)
    assert r.hget('rsmq:jobs:Q', 'totalrecv') == '2'


# A receive asking for MIN_RSMQ_COUNT_FOR_CALLER_BODIES or more reads the bodies itself, after the script.
BOTH_WAYS = pytest.mark.parametrize(
    'count', [10, MIN_RSMQ_COUNT_FOR_CALLER_BODIES], ids=['script-bodies', 'caller-bodies']
)


@BOTH_WAYS
def test_receive_batch_mixes_messages_received_before_with_new_ones(q, r, count):
    # Each step waits for the next millisecond of the server's clock: scores never tie (ties go by id).
    old = q.send_batch(['a', 'b', 'c'])
    _next_ms(r)
    first = q.receive_batch(2, vt=0)  # a and b: visible again at once, now the newest
    assert [(m.id, m.rc) for m in first] == [(old[0], 1), (old[1], 1)]
    _next_ms(r)
    new = q.send_batch(['d', 'e'])
    t0 = redis_ms(r)
    got = q.receive_batch(count, vt=60)
    # Oldest score first: c (never received), a and b (received before), then d and e.
    assert [(m.id, m.message, m.rc) for m in got] == [
        (old[2], 'c', 1), (old[0], 'a', 2), (old[1], 'b', 2), (new[0], 'd', 1), (new[1], 'e', 1),
    ]  # fmt: skip
    assert [m.fr for m in got[1:3]] == [m.fr for m in first]  # kept from their first receive
    for m in (got[0], *got[3:]):
        assert t0 <= m.fr <= redis_ms(r)
    for m in got:
        assert r.hmget('rsmq:jobs:Q', f'{m.id}:rc', f'{m.id}:fr') == [str(m.rc), str(m.fr)]
    assert r.hget('rsmq:jobs:Q', 'totalrecv') == '7'


def test_a_receive_leaves_the_garbage_collector_as_it_was(q, impl):
    # The native client pauses the collector while it makes a batch of 100 messages or more.
    bodies = [str(i) for i in range(201)]
    sent = q.send_batch(bodies)
    assert [m.message for m in q.receive_batch(100, vt=60)] == bodies[:100]
    assert gc.isenabled()
    assert q.receive(vt=60).message == bodies[100]
    assert gc.isenabled()
    gc.disable()
    try:
        got = q.receive_batch(100, vt=60)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert [(type(m), m.id, m.message, m.rc, m.sent) for m in got] == [
        (RsmqMessage, i, body, 1, rsmq_sent(i)) for i, body in zip(sent[101:], bodies[101:])
    ]
    assert [gc.is_tracked(m) for m in got] == [impl.startswith('pure')] * len(got)  # see test_claim.py


def test_receive_uses_queue_vt(client, r):
    queue = client.rsmq('vt')
    queue.create(vt=45)
    msg_id = queue.send('x')
    m = queue.receive()
    assert r.zscore('rsmq:vt', msg_id) - m.fr == 45_000


def test_receive_vt_zero_leaves_it_visible(q):
    msg_id = q.send('x')
    assert q.receive(vt=0).rc == 1
    assert q.receive(vt=0).rc == 2
    assert [(m.id, m.rc) for m in q.receive_batch(5, vt=0)] == [(msg_id, 3)]


def test_fifo_within_a_millisecond(q):
    ids = q.send_batch([str(i) for i in range(300)])
    ids += [q.send(f's{i}') for i in range(20)]
    assert len(set(ids)) == 320
    got = q.receive_batch(1000)
    assert [m.id for m in got] == ids
    assert [m.message for m in got[:3]] == ['0', '1', '2']


def test_receive_batch_and_chunks(make_client, redis_url, r):
    small = make_client(redis_url, chunk_size=3)
    queue = small.rsmq('jobs')
    queue.create()
    ids = queue.send_batch([f'm{i}' for i in range(10)])  # 4 send scripts
    assert r.zcard('rsmq:jobs') == 10 and r.hget('rsmq:jobs:Q', 'totalsent') == '10'
    first = queue.receive_batch(7)
    assert [m.id for m in first] == ids[:7]
    assert [m.message for m in queue.receive_batch(7)] == ['m7', 'm8', 'm9']
    assert queue.receive_batch(7) == []
    assert r.hget('rsmq:jobs:Q', 'totalrecv') == '10'
    assert queue.delete_batch(ids) == ids


def test_pop(q, r):
    ids = [q.send('a')]
    q.receive(vt=0)  # visible again, from now: before b and c, sent later
    ids += q.send_batch(['b', 'c'])
    m = q.pop()
    assert (m.id, m.message, m.rc) == (ids[0], 'a', 2)
    assert not r.hexists('rsmq:jobs:Q', ids[0])
    assert not r.hexists('rsmq:jobs:Q', f'{ids[0]}:rc')
    assert not r.hexists('rsmq:jobs:Q', f'{ids[0]}:fr')
    assert r.zscore('rsmq:jobs', ids[0]) is None
    fresh = q.pop_batch(5)
    assert [(x.message, x.rc) for x in fresh] == [('b', 1), ('c', 1)]
    assert fresh[0].fr >= m.fr
    assert r.hget('rsmq:jobs:Q', 'totalrecv') == '4'
    assert q.pop() is None and q.pop_batch(3) == []
    assert [m.message for m in q.pop_batch(MIN_RSMQ_COUNT_FOR_CALLER_BODIES)] == []
    q.send_batch(['d', 'e'])
    assert [m.message for m in q.pop_batch(MIN_RSMQ_COUNT_FOR_CALLER_BODIES)] == ['d', 'e']
    assert r.hget('rsmq:jobs:Q', 'totalrecv') == '6'
    assert set(r.hkeys('rsmq:jobs:Q')) == {'vt', 'delay', 'maxsize', 'created', 'modified', 'totalsent', 'totalrecv'}


def test_delete(q, r):
    received, never = q.send_batch(['a', 'b'])
    q.receive()
    assert q.delete(received) is True
    assert q.delete(never) is True  # never received: no :rc / :fr, still deleted (RSMQ's rule)
    assert q.delete(received) is False
    assert r.zcard('rsmq:jobs') == 0
    assert set(r.hkeys('rsmq:jobs:Q')) == {'vt', 'delay', 'maxsize', 'created', 'modified', 'totalsent', 'totalrecv'}


def test_delete_batch_returns_what_was_there(make_client, redis_url, r):
    queue = make_client(redis_url, chunk_size=2).rsmq('jobs')
    queue.create()
    ids = queue.send_batch(['a', 'b', 'c', 'd', 'e'])
    missing = 'x' * 32
    assert queue.delete_batch([ids[4], missing, ids[0], ids[2], ids[0]]) == [ids[4], ids[0], ids[2]]
    assert queue.delete_batch([]) == []
    assert queue.delete_batch([missing, missing]) == []
    assert r.zscore('rsmq:jobs', missing) is None  # looking for it left nothing behind
    assert [m.id for m in queue.receive_batch(10)] == [ids[1], ids[3]]


def test_delete_batch_of_chunks_longer_than_a_script_slice(make_client, redis_url, r):
    """A chunk of 2,500 ids goes to the server in slices of 1000: whether all were deleted (the reply is then
    their number) or some were not (the list), every chunk reports its ids in input order."""
    queue = make_client(redis_url, chunk_size=2500).rsmq('jobs')
    queue.create(maxsize=-1)
    ids = queue.send_batch([str(i) for i in range(6000)])
    received = [m.id for m in queue.receive_batch(3000)]
    assert queue.delete_batch(received[:2500]) == received[:2500]  # one chunk, every id deleted
    missing = 'x' * 32
    mixed = [*received[2500:], missing, received[0], *ids[3000:4998]]  # 2,500: a chunk with some not there
    assert queue.delete_batch([*mixed, *ids[4998:]]) == [*received[2500:], *ids[3000:]]
    assert r.zcard('rsmq:jobs') == 0
    assert r.hlen('rsmq:jobs:Q') == 7  # the queue's attributes alone


def test_delete_counts_a_member_with_a_body_or_receive_marks(q, r):
    """Deleted means: a member of the queue's ZSET with at least one of its fields (RSMQ's rule), whatever mix
    of cases one call holds; every field of every id given is removed."""
    received, never = q.send_batch(['a', 'b'])
    q.receive()
    bodiless = 'aaaaaaaaaa' + 'B' * 22  # a member with receive marks but no body: still counts (HDEL took 2)
    r.zadd('rsmq:jobs', {bodiless: 1})
    r.hset('rsmq:jobs:Q', mapping={f'{bodiless}:rc': 1, f'{bodiless}:fr': 1})
    phantom = 'aaaaaaaaaa' + 'P' * 22  # a member with no field at all: removed, not counted
    r.zadd('rsmq:jobs', {phantom: 1})
    stray = 'aaaaaaaaaa' + 'S' * 22  # a body that is not a member: removed, not counted
    r.hset('rsmq:jobs:Q', stray, 'left over')
    got = q.delete_batch([phantom, never, stray, received, bodiless, never])
    assert got == [never, received, bodiless]
    assert r.zcard('rsmq:jobs') == 0
    assert set(r.hkeys('rsmq:jobs:Q')) == {'vt', 'delay', 'maxsize', 'created', 'modified', 'totalsent', 'totalrecv'}


def test_delete_with_a_member_at_minus_infinity(q, r):
    """A score no RSMQ write makes (-inf, a foreign write) changes nothing of what a delete reports."""
    received, never = q.send_batch(['a', 'b'])
    q.receive()
    floor = 'aaaaaaaaaa' + 'F' * 22
    r.zadd('rsmq:jobs', {floor: '-inf'})
    r.hset('rsmq:jobs:Q', floor, 'body')
    missing = 'x' * 32
    assert q.delete_batch([missing, floor, received, floor]) == [floor, received]
    assert r.zrange('rsmq:jobs', 0, -1) == [never]


def test_delete_on_a_full_server(q, r):
    """At maxmemory (noeviction) sends are refused, and deletes still free what was received."""
    ids = q.send_batch(['a', 'b', 'c'])
    received = [m.id for m in q.receive_batch(2)]
    r.config_set('maxmemory', '1')  # far below what the server uses: every write that may grow memory is refused
    try:
        with pytest.raises(OutOfMemory):
            q.send('d')
        assert q.delete_batch([*received, 'x' * 32]) == received
        assert q.delete(received[0]) is False
    finally:
        r.config_set('maxmemory', '0')
    assert r.zrange('rsmq:jobs', 0, -1) == [ids[2]]


def test_change_visibility(q, r):
    msg_id = q.send('x')
    q.receive(vt=60)
    assert q.receive() is None
    assert q.change_visibility(msg_id, 0) is True
    assert q.receive(vt=60).rc == 2
    t0 = redis_ms(r)
    assert q.change_visibility(msg_id, 2.5) is True
    assert t0 + 2500 <= r.zscore('rsmq:jobs', msg_id) <= redis_ms(r) + 2500
    q.delete(msg_id)
    assert q.change_visibility(msg_id, 1) is False
    assert r.zcard('rsmq:jobs') == 0


def test_message_sizes_follow_rsmq(client):
    queue = client.rsmq('small')
    queue.create(maxsize=1024)
    assert queue.send('') != ''
    queue.send('x' * 1024)
    queue.send('é' * 1024)  # 2048 UTF-8 bytes, 1024 UTF-16 units
    queue.send('😀' * 512)  # 1024 UTF-16 units
    assert [m.message for m in queue.receive_batch(10)] == ['', 'x' * 1024, 'é' * 1024, '😀' * 512]
    unlimited = client.rsmq('big')
    unlimited.create(maxsize=-1)
    unlimited.send('z' * 200_000)
    assert len(unlimited.receive().message) == 200_000


def test_realtime_publishes_the_queue_size(client, r):
    client.rsmq('jobs').create()
    rt = client.rsmq('jobs', realtime=True)
    assert rt.realtime is True
    sub = r.pubsub()
    sub.subscribe('rsmq:rt:jobs')
    assert sub.get_message(timeout=5)['type'] == 'subscribe'
    client.rsmq('jobs').send('quiet')  # realtime off: nothing published
    rt.send('a')
    rt.send_batch(['b', 'c'])
    got = [sub.get_message(timeout=5) for _ in range(2)]
    assert [(m['channel'], m['data']) for m in got] == [('rsmq:rt:jobs', '2'), ('rsmq:rt:jobs', '4')]
    assert sub.get_message(timeout=0.2) is None
    sub.close()


def test_blocking_receive_wakes_on_a_realtime_send(make_client, redis_url):
    consumer = make_client(redis_url)
    producer = make_client(redis_url)
    consumer.rsmq('jobs').create()
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(consumer.rsmq('jobs').receive(block=30)))
    t0 = time.monotonic()
    worker.start()
    time.sleep(0.3)
    # The same client still serves other calls while one of its receives blocks.
    assert consumer.rsmq('jobs').attributes().msgs == 0
    producer.rsmq('jobs', realtime=True).send('wake')
    worker.join(30)
    assert not worker.is_alive()
    elapsed = time.monotonic() - t0
    assert out[0].message == 'wake'
    # Woken by the notification (sent at 0.3 s), not by the 1 s fallback poll nor the 30 s limit.
    assert elapsed < 0.95


def test_blocking_receive_picks_up_delayed_and_unannounced_messages(q, client, r):
    q.send('delayed', delay=0.4)
    m = q.receive(block=10)
    assert m.message == 'delayed'
    # A producer that never publishes (PyRSMQ, RSMQ without realtime) is seen by the fallback poll.
    threading.Timer(0.2, lambda: client.rsmq('jobs').send('plain')).start()
    assert q.receive(block=10).message == 'plain'


def test_blocking_receive_times_out_without_a_busy_loop(q, r):
    r.config_resetstat()
    t0 = time.monotonic()
    assert q.receive(block=1.5) is None
    assert q.receive_batch(3, block=0.3) == []
    assert time.monotonic() - t0 >= 1.7
    calls = int(r.info('commandstats').get('cmdstat_evalsha', {}).get('calls', 0))
    assert calls <= 10, calls  # one try, one after SUBSCRIBE, one per fallback poll (and a NOSCRIPT)
    for _ in range(100):  # the subscription is gone (the server sees the disconnect a moment later)
        if r.pubsub_numsub('rsmq:rt:jobs') == [('rsmq:rt:jobs', 0)]:
            break
        time.sleep(0.02)
    assert r.pubsub_numsub('rsmq:rt:jobs') == [('rsmq:rt:jobs', 0)]
