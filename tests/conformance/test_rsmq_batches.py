"""RsmqQueue.batches: a receive+delete loop whose next receive is in flight while a batch is handled."""

from __future__ import annotations

import threading
import time

import pytest

from _checks import run_in_threads, wait_for
from _redis import assert_refused
from ferroq.exceptions import InvalidArgument


def _hidden(r) -> int:
    """Messages of queue ``jobs`` hidden by a receive (their score is past the server's clock)."""
    sec, usec = r.time()
    return r.zcount('rsmq:jobs', f'({sec * 1000 + usec // 1000}', '+inf')


def _messages_left(r) -> int:
    """Members of the queue's ZSET, and message fields (``<id>``, ``<id>:rc``, ``<id>:fr``) of its hash."""
    fields = [f for f in r.hkeys('rsmq:jobs:Q') if f not in ('vt', 'delay', 'maxsize', 'created', 'modified')]
    return r.zcard('rsmq:jobs') + len([f for f in fields if not f.startswith('total')])


@pytest.fixture
def q(client):
    queue = client.rsmq('jobs')
    queue.create()
    return queue


def test_batches_drain_the_queue(q, r):
    ids = q.send_batch([str(i) for i in range(25)])
    seen = []
    with q.batches(10) as batches:
        for batch in batches:
            seen.append([m.id for m in batch])
            assert all(m.rc == 1 for m in batch)
            assert q.delete_batch(seen[-1]) == seen[-1]
    assert [len(b) for b in seen] == [10, 10, 5]
    assert sorted(i for b in seen for i in b) == sorted(ids) and len({i for b in seen for i in b}) == 25
    assert _messages_left(r) == 0  # every message deleted, none received ahead and left hidden
    assert r.hget('rsmq:jobs:Q', 'totalrecv') == '25'


def test_the_next_batch_is_received_while_one_is_handled(q, r):
    q.send_batch([str(i) for i in range(6)])
    batches = q.batches(2, vt=30)
    first = next(batches)
    assert len(first) == 2
    wait_for('the receive ahead', lambda: _hidden(r) == 4)  # the batch handed out and the one received ahead
    assert q.delete_batch([m.id for m in first]) == [m.id for m in first]
    second = next(batches)
    assert len(second) == 2 and not {m.id for m in second} & {m.id for m in first}
    assert q.delete_batch([m.id for m in second]) == [m.id for m in second]
    batches.close()


def test_close_makes_the_batch_received_ahead_visible(q, r):
    ids = q.send_batch([str(i) for i in range(6)])
    with q.batches(2, vt=30) as batches:
        held = next(batches)
        wait_for('the receive ahead', lambda: _hidden(r) == 4)
    # Leaving the block made the batch received ahead visible again; the one handed out stays hidden, the
    # caller's to delete.
    assert _hidden(r) == 2
    assert list(batches) == []  # a closed iterator receives nothing more
    assert q.delete_batch([m.id for m in held]) == [m.id for m in held]
    again = q.receive_batch(4, vt=30)
    assert sorted(m.id for m in again) == sorted(set(ids) - {m.id for m in held})
    assert sorted(m.rc for m in again) == [1, 1, 2, 2]  # the batch received ahead counts its receive
    assert q.delete_batch([m.id for m in again]) == [m.id for m in again]
    assert _messages_left(r) == 0


def test_an_exception_in_the_loop_gives_back_only_the_batch_ahead(q, r):
    q.send_batch([str(i) for i in range(4)])
    handed = []
    with pytest.raises(RuntimeError, match='handler failed'), q.batches(2, vt=30) as batches:
        for batch in batches:
            handed += batch
            wait_for('the receive ahead', lambda: _hidden(r) == 4)
            raise RuntimeError('handler failed')
    assert _hidden(r) == 2  # the batch handed out; the one ahead is visible again
    assert q.delete_batch([m.id for m in handed]) == [m.id for m in handed]
    assert len(q.receive_batch(4)) == 2


def test_batches_stop_at_the_first_empty_receive(q, r):
    with q.batches(5) as batches:
        assert list(batches) == []
    q.send('0')
    batches = q.batches(5)
    assert [m.message for m in next(batches)] == ['0']
    with pytest.raises(StopIteration):
        next(batches)
    q.send('1')
    with pytest.raises(StopIteration):  # an iteration that ended stays ended
        next(batches)
    assert r.zcard('rsmq:jobs') == 2 and _hidden(r) == 1


def test_threads_sharing_batches_get_each_message_once(q, r):
    ids = q.send_batch([str(i) for i in range(40)])
    got: list[str] = []
    lock = threading.Lock()
    with q.batches(3) as batches:

        def work(_: int) -> None:
            for batch in batches:
                with lock:
                    got.extend(m.id for m in batch)
                assert q.delete_batch([m.id for m in batch]) == [m.id for m in batch]

        assert run_in_threads(work, 4) == []
    assert sorted(got) == sorted(ids) and len(got) == len(ids)
    assert _messages_left(r) == 0


def test_batches_with_block_wait_for_messages(q):
    start = time.monotonic()
    with q.batches(5, block=0.2) as batches:
        assert list(batches) == []
    assert time.monotonic() - start >= 0.19  # the one receive waited for its block


@pytest.mark.parametrize(
    'kwargs',
    [
        {'count': 0},
        {'count': '10'},
        {'count': True},
        {'vt': -1},
        {'vt': float('nan')},
        {'vt': '30'},
        {'block': -1},
    ],
)
def test_bad_batches_arguments_are_refused_before_any_receive(q, r, kwargs):
    q.send('0')
    assert_refused(r, lambda: q.batches(**kwargs))
    with pytest.raises(InvalidArgument, match=next(iter(kwargs))):
        q.batches(**kwargs)


def test_batches_repr_names_queue_and_arguments(q):
    with q.batches(7, vt=12.5) as batches:
        assert "'jobs'" in repr(batches) and 'count=7' in repr(batches) and 'vt=12.5' in repr(batches)
