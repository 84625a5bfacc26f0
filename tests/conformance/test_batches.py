"""Topic.batches: a claim+commit loop whose next claim is in flight while a batch is handled."""

from __future__ import annotations

import threading
import time

import pytest

from _checks import bodies, run_in_threads, wait_for
from _redis import assert_refused
from ferroq.exceptions import InvalidArgument


def _claims(r) -> int:
    """Claims held on topic ``jobs`` (each claim has a lease)."""
    return r.zcard('rfq:jobs:claim_leases')


def test_batches_drain_the_topic_in_order(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(25)])
    seen = []
    with t.batches(10, lease=30) as batches:
        for batch in batches:
            seen.append([m.id for m in batch])
            assert len({m.claim for m in batch}) == 1 and all(m.deliveries == 1 for m in batch)
            assert t.commit(batch) == seen[-1]
    assert [len(b) for b in seen] == [10, 10, 5]
    assert [i for b in seen for i in b] == ids
    assert r.dbsize() == 0  # every message committed, no claim left behind


def test_the_next_batch_is_claimed_while_one_is_handled(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(6)])
    batches = t.batches(2, lease=30)
    first = next(batches)
    assert [m.id for m in first] == ids[:2]
    wait_for('the claim ahead', lambda: _claims(r) == 2)  # the batch handed out and the one claimed ahead
    assert r.llen('rfq:jobs:backlog') == 2
    assert t.commit(first) == ids[:2]
    second = next(batches)
    assert [m.id for m in second] == ids[2:4]
    assert t.commit(second) == ids[2:4]
    batches.close()


def test_close_gives_the_batch_claimed_ahead_back(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(6)])
    with t.batches(2, lease=30) as batches:
        held = next(batches)
        wait_for('the claim ahead', lambda: _claims(r) == 2)
    # Leaving the block released the batch claimed ahead, to the front of the backlog; the one handed out is
    # still the caller's to commit.
    assert _claims(r) == 1 and r.llen('rfq:jobs:backlog') == 4
    assert list(batches) == []  # a closed iterator claims nothing more
    assert t.commit(held) == ids[:2]
    again = t.claim(count=4)
    assert [m.id for m in again] == ids[2:]
    assert [m.deliveries for m in again] == [2, 2, 1, 1]  # the released claim counts as a delivery
    assert t.commit(again) == ids[2:]
    assert r.dbsize() == 0


def test_an_exception_in_the_loop_releases_only_the_batch_ahead(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(4)])
    handed = []
    with pytest.raises(RuntimeError, match='handler failed'), t.batches(2, lease=30) as batches:
        for batch in batches:
            handed += batch
            wait_for('the claim ahead', lambda: _claims(r) == 2)
            raise RuntimeError('handler failed')
    assert r.lrange('rfq:jobs:backlog', 0, -1) == ids[2:][::-1]  # the batch ahead, back at the front
    assert [m.id for m in handed] == ids[:2] and t.commit(handed) == ids[:2]


def test_batches_stop_at_the_first_empty_claim(client, r):
    t = client.topic('jobs')
    with t.batches(5) as batches:
        assert list(batches) == []
    t.publish_batch([{'n': '0'}])
    batches = t.batches(5)
    assert bodies(next(batches)) == ['0']
    with pytest.raises(StopIteration):
        next(batches)
    t.publish_batch([{'n': '1'}])
    with pytest.raises(StopIteration):  # an iteration that ended stays ended
        next(batches)
    assert r.llen('rfq:jobs:backlog') == 1 and _claims(r) == 1


def test_threads_sharing_batches_get_each_message_once(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(40)])
    got: list[str] = []
    lock = threading.Lock()
    with t.batches(3) as batches:

        def work(_: int) -> None:
            for batch in batches:
                with lock:
                    got.extend(m.id for m in batch)
                assert t.commit(batch) == [m.id for m in batch]

        assert run_in_threads(work, 4) == []
    assert sorted(got) == sorted(ids) and len(got) == len(ids)
    assert r.dbsize() == 0


def test_batches_with_block_wait_for_messages(client):
    t = client.topic('jobs')
    start = time.monotonic()
    with t.batches(5, block=0.2) as batches:
        assert list(batches) == []
    assert time.monotonic() - start >= 0.19  # the one claim waited for its block


def test_batches_record_their_owner(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(3)])
    with t.batches(3, owner='w1') as batches:
        batch = next(batches)
        assert r.hget('rfq:jobs:claims', batch[0].claim).split(' ')[1] == 'w1'
        assert [m.id for m in t.resume('w1')] == ids  # the worker's processing list holds them
        assert t.commit(t.resume('w1')) == ids


@pytest.mark.parametrize(
    'kwargs',
    [
        {'count': 0},
        {'count': '10'},
        {'count': True},
        {'lease': -1},
        {'lease': float('nan')},
        {'block': -1},
        {'owner': 'a b'},
        {'owner': ''},
    ],
)
def test_bad_batches_arguments_are_refused_before_any_claim(client, r, kwargs):
    t = client.topic('jobs')
    t.publish_batch([{'n': '0'}])
    assert_refused(r, lambda: t.batches(**kwargs))
    with pytest.raises(InvalidArgument, match=next(iter(kwargs))):
        t.batches(**kwargs)


def test_batches_repr_names_topic_and_arguments(client):
    with client.topic('jobs').batches(7, lease=12.5) as batches:
        assert "'jobs'" in repr(batches) and 'count=7' in repr(batches) and 'lease=12.5' in repr(batches)
