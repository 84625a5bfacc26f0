"""ferroq.Worker / ferroq.AsyncWorker over every client: commit, retry with backoff, dead-letter, lease
renewal, priority, processing lists, harvester takeover, graceful shutdown on SIGTERM, bad settings.

Sync clients run :class:`ferroq.Worker` on the test thread (or a helper thread); async clients run
:class:`ferroq.AsyncWorker` on the session's loop thread, with the unwrapped async client.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import ferroq
from _adapters import LoopThread
from _checks import wait_for

#: Worker settings that keep the tests short: quick polls, no signal handlers on the test thread.
FAST = {'poll': 0.05, 'handle_signals': False, 'retry_delay': 0.01}


def _worker(impl: str, client: Any, topics: Any, handler: Any, **opts: Any) -> ferroq.worker._WorkerBase:
    opts = {**FAST, **opts}
    if impl.endswith('async'):
        return ferroq.AsyncWorker(client.wrapped, topics, handler, **opts)
    return ferroq.Worker(client, topics, handler, **opts)


class Running:
    """A worker running in the background until :meth:`stop`."""

    def __init__(self, impl: str, loop: LoopThread, client: Any, topics: Any, handler: Any, **opts: Any) -> None:
        self.worker = _worker(impl, client, topics, handler, **opts)
        self.result: Future[ferroq.WorkerStats]
        if isinstance(self.worker, ferroq.AsyncWorker):
            self.result = asyncio.run_coroutine_threadsafe(self.worker.run(), loop.loop)
        else:
            assert isinstance(self.worker, ferroq.Worker)
            pool = ThreadPoolExecutor(1)
            self.result = pool.submit(self.worker.run)
            pool.shutdown(wait=False)

    def stop(self, timeout: float = 30) -> ferroq.WorkerStats:
        self.worker.stop()
        return self.result.result(timeout)


def run_burst(impl: str, loop: LoopThread, client: Any, topics: Any, handler: Any, **opts: Any) -> ferroq.WorkerStats:
    """Run a burst worker to the end (bounded by the result timeout)."""
    running = Running(impl, loop, client, topics, handler, burst=True, **opts)
    try:
        return running.result.result(60)
    except TimeoutError:
        running.worker.stop()  # a failing test leaves no worker running behind it
        raise


# --- protocol pieces the worker is built on ---------------------------------------------------------


def test_delayed_release_waits_then_returns_to_the_front(client, r):
    t = client.topic('jobs')
    first, second = t.publish_batch([{'n': '1'}, {'n': '2'}])
    [msg] = t.claim(lease=60)
    assert t.release([msg], delay=0.3) == [first]
    assert r.zscore('rfq:jobs:delayed', first) is not None
    # its record keeps the count and loses the claim
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [] and r.hget('rfq:jobs:deliveries', first) == '1'
    s = t.stats()
    assert (s.backlog, s.nextlog, s.delayed) == (1, 0, 1)
    [other] = t.claim(lease=60)  # not due yet: only the second message is visible
    assert other.id == second
    time.sleep(0.35)
    [again] = t.claim(lease=60)  # due now: moved to the consume end by the claim itself
    assert (again.id, again.deliveries) == (first, 2)
    assert t.commit([other, again]) == [second, first]
    assert r.dbsize() == 0  # a full drain leaves no side keys


def test_harvest_promotes_due_delayed_messages(client, r):
    t = client.topic('jobs')
    [msg_id] = t.publish_batch([{'n': '1'}])
    [msg] = t.claim()
    t.release([msg], delay=0.05)
    time.sleep(0.1)
    assert t.harvest() == []  # not a lease: promoted, but not reported as requeued
    assert r.lrange('rfq:jobs:backlog', 0, -1) == [msg_id]
    assert r.exists('rfq:jobs:delayed') == 0


def test_release_delay_is_validated(client, r):
    t = client.topic('jobs')
    t.publish({'n': '1'})
    [msg] = t.claim()
    for bad in (-1, 604_801, float('nan'), '1', True):
        with pytest.raises(ferroq.InvalidArgument):
            t.release([msg], delay=bad)
    assert r.zcard('rfq:jobs:delayed') == 0 and r.llen('rfq:jobs:nextlog') == 1


def test_dead_letter_moves_atomically_and_records_the_error(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': '1', 'x': 'y'}, {'n': '2'}])
    held = t.claim(count=2, lease=60)
    assert t.dead_letter([held[0]], error='ValueError: boom') == [ids[0]]
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [ids[1]]
    assert r.zscore('rfq:jobs:leases', ids[0]) is None and r.hget('rfq:jobs:deliveries', ids[0]) is None
    assert r.exists(f'rfq:jobs:message:{ids[0]}') == 0
    dead = client.topic('jobs.dead')
    [entry] = dead.inspect()
    assert (entry.id, entry.fields, entry.error, entry.deliveries) == (
        ids[0],
        {'n': '1', 'x': 'y'},
        'ValueError: boom',
        0,
    )
    assert dead.stats().backlog == 1
    # An ordinary message there: claim and commit drain it, side keys included.
    [d] = dead.claim()
    assert d.fields == {'n': '1', 'x': 'y'} and dead.commit([d]) == [ids[0]]
    # A custom dead topic; a stale token is refused and nothing moves.
    assert t.dead_letter([held[1]], error='e', to='graveyard') == [ids[1]]
    assert t.dead_letter([held[1]], error='again', to='graveyard') == []
    assert client.topic('graveyard').inspect()[0].error == 'e'
    client.topic('graveyard').purge()
    assert r.dbsize() == 0


def test_dead_letter_is_fenced(client, r):
    t = client.topic('jobs')
    [msg_id] = t.publish_batch([{'n': '1'}])
    [old] = t.claim(lease=0.05)
    time.sleep(0.1)
    assert t.harvest() == [msg_id]
    [new] = t.claim(lease=60)
    assert t.dead_letter([old], error='late') == []  # the old claim lost its lease: refused
    assert r.exists('rfq:jobs.dead:backlog') == 0
    assert t.dead_letter([new.id], error='unfenced') == [msg_id]  # a bare id: unfenced
    assert r.lrange('rfq:jobs.dead:backlog', 0, -1) == [msg_id]


def test_dead_letter_arguments_are_validated_before_io(client, r):
    t = client.topic('jobs')
    t.publish({'n': '1'})
    [msg] = t.claim()
    with pytest.raises(ferroq.InvalidArgument):
        t.dead_letter([msg], error='x', to='jobs')
    with pytest.raises(ferroq.InvalidName):
        t.dead_letter([msg], error='x', to='bad:name')
    with pytest.raises(ferroq.InvalidName):
        client.topic('x' * 124).dead_letter(['a'], error='x')  # '<topic>.dead' would be too long
    with pytest.raises(ferroq.InvalidArgument):
        t.dead_letter([msg], error=3)
    assert r.llen('rfq:jobs:nextlog') == 1 and r.exists('rfq:jobs.dead:backlog') == 0


def test_owner_is_recorded_and_resume_reclaims_only_own_claims(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(5)])
    mine = t.claim(count=2, owner='w1', lease=60)
    theirs = t.claim(count=2, owner='w2', lease=60)
    anon = t.claim(lease=60)
    assert {e.id: e.owner for e in t.inspect('nextlog')} == {
        **{m.id: 'w1' for m in mine},
        **{m.id: 'w2' for m in theirs},
        anon[0].id: None,
    }
    again = t.resume('w1', lease=60)
    assert [(m.id, m.deliveries) for m in again] == [(m.id, 2) for m in mine]
    assert t.commit(mine) == []  # the previous run's tokens are stale now
    assert t.commit(again) == [m.id for m in mine]
    assert t.resume('w1') == []
    assert t.release(theirs) == [m.id for m in theirs]  # released: no owner any more
    assert t.resume('w2') == []
    with pytest.raises(ferroq.InvalidArgument):
        t.resume('a b')
    with pytest.raises(ferroq.InvalidArgument):
        t.claim(owner='')
    assert ids


# --- the worker ------------------------------------------------------------------------------------


def test_worker_processes_and_commits(client, r, impl, loop_thread):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(40)])
    seen: list[str] = []
    lock = threading.Lock()

    def handle(msg: ferroq.Message) -> None:
        with lock:
            seen.append(msg.fields['n'])

    stats = run_burst(impl, loop_thread, client, 'jobs', handle, concurrency=4, prefetch=8)
    assert sorted(seen, key=int) == [str(i) for i in range(40)]
    assert (stats.committed, stats.retried, stats.dead, stats.lost) == (40, 0, 0, 0)
    assert len(ids) == 40 and r.dbsize() == 0


def test_a_burst_worker_returns_once_drained_without_waiting_out_a_poll(client, r, impl, loop_thread):
    # The claim that takes the last messages (or the one after it) gets fewer than it asked for: the
    # worker then finds nothing left and returns. A blocking claim would first wait the whole poll.
    client.topic('jobs').publish_batch([{'n': str(i)} for i in range(25)])
    started = time.monotonic()
    stats = run_burst(impl, loop_thread, client, 'jobs', lambda m: None, prefetch=10, poll=600)
    assert (stats.committed, stats.lost) == (25, 0) and r.dbsize() == 0
    assert time.monotonic() - started < 30


def test_a_burst_worker_on_empty_topics_returns_at_once(client, r, impl, loop_thread):
    started = time.monotonic()
    stats = run_burst(impl, loop_thread, client, ['jobs', 'other'], lambda m: None, poll=600)
    assert stats == ferroq.WorkerStats()
    assert time.monotonic() - started < 30


def test_async_handler(client, r, impl, loop_thread):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(10)])
    seen: list[str] = []

    async def handle(msg: ferroq.Message) -> None:
        await asyncio.sleep(0.001)
        seen.append(msg.fields['n'])

    stats = run_burst(impl, loop_thread, client, 'jobs', handle, concurrency=3)
    assert sorted(seen, key=int) == [str(i) for i in range(10)] and stats.committed == 10
    assert r.dbsize() == 0


def test_failure_is_retried_after_a_backoff(client, r, impl, loop_thread):
    t = client.topic('jobs')
    [msg_id] = t.publish_batch([{'n': '1'}])
    attempts: list[tuple[int, float]] = []

    def handle(msg: ferroq.Message) -> None:
        attempts.append((msg.deliveries, time.monotonic()))
        if msg.deliveries < 3:
            raise RuntimeError(f'try {msg.deliveries}')

    stats = run_burst(impl, loop_thread, client, 'jobs', handle, retry_delay=0.2, retry_backoff=2.0)
    assert [d for d, _ in attempts] == [1, 2, 3]
    # The delays are lower bounds (Redis holds the message until due): 0.2 s, then 0.4 s.
    assert attempts[1][1] - attempts[0][1] >= 0.19
    assert attempts[2][1] - attempts[1][1] >= 0.39
    assert (stats.committed, stats.retried, stats.dead) == (1, 2, 0)
    assert r.dbsize() == 0 and msg_id


def test_backoff_is_exponential_and_capped(client, impl):
    w = _worker(impl, client, 'jobs', print, retry_delay=0.5, retry_backoff=3.0, max_retry_delay=10.0)
    assert [w.backoff(d) for d in (1, 2, 3, 4, 50)] == [0.5, 1.5, 4.5, 10.0, 10.0]


def test_dead_letter_error_stays_through_claims_in_the_dead_topic(client, r):
    t = client.topic('jobs')
    msg_id = t.publish({'n': '1'})
    [msg] = t.claim()
    error = 'ValueError: two words\nand a second line'
    assert t.dead_letter([msg], error=error) == [msg_id]
    dead = client.topic('jobs.dead')
    [held] = dead.claim(owner='w:1')  # an owner may contain ':'
    assert held.deliveries == 1
    [entry] = dead.inspect('nextlog')
    assert (entry.deliveries, entry.owner, entry.error) == (1, 'w:1', error) and entry.claimed_at is not None
    assert [m.id for m in dead.resume('w:1')] == [msg_id]
    [entry] = dead.inspect('nextlog')
    assert (entry.deliveries, entry.owner, entry.error) == (2, 'w:1', error)
    assert dead.release([held]) == []  # its token is stale after the resume
    assert dead.release([ferroq.Message(msg_id, 'jobs.dead', {'n': '1'}, 2)]) == [msg_id]
    [entry] = dead.inspect()
    assert (entry.deliveries, entry.claimed_at, entry.owner, entry.error) == (2, None, None, error)
    [last] = dead.claim()
    assert last.deliveries == 3 and dead.commit([last]) == [msg_id]
    assert r.dbsize() == 0


def test_dead_letter_after_max_deliveries(client, r, impl, loop_thread):
    t = client.topic('jobs')
    [msg_id] = t.publish_batch([{'n': '1', 'payload': 'p'}])
    attempts: list[int] = []

    def handle(msg: ferroq.Message) -> None:
        attempts.append(msg.deliveries)
        raise ValueError(f'boom {msg.deliveries}')

    stats = run_burst(impl, loop_thread, client, 'jobs', handle, max_deliveries=3)
    assert attempts == [1, 2, 3]
    assert (stats.committed, stats.retried, stats.dead) == (0, 2, 1)
    [entry] = client.topic('jobs.dead').inspect()
    assert (entry.id, entry.fields, entry.error) == (msg_id, {'n': '1', 'payload': 'p'}, 'ValueError: boom 3')
    assert sorted(r.keys('*')) == [
        'rfq:jobs.dead:backlog',
        'rfq:jobs.dead:deliveries',
        f'rfq:jobs.dead:message:{msg_id}',
    ]


def test_message_without_outcome_is_dead_lettered_without_running(client, r, impl, loop_thread):
    t = client.topic('jobs')
    [msg_id] = t.publish_batch([{'n': '1'}])
    for _ in range(2):  # two workers died holding it
        t.claim(lease=0.01)
        time.sleep(0.02)
        t.harvest()
    ran: list[str] = []
    stats = run_burst(
        impl, loop_thread, client, 'jobs', lambda m: ran.append(m.id), max_deliveries=2, dead_letter='dlq'
    )
    assert ran == [] and stats.dead == 1
    assert 'no outcome after 2 deliveries' in (client.topic('dlq').inspect()[0].error or '')
    assert r.lrange('rfq:dlq:backlog', 0, -1) == [msg_id]


def test_lease_renewal_keeps_a_slow_message(client, r, impl, loop_thread):
    t = client.topic('jobs')
    [msg_id] = t.publish_batch([{'n': '1'}])
    deliveries: list[int] = []
    other = client.topic('jobs')

    def handle(msg: ferroq.Message) -> None:
        deliveries.append(msg.deliveries)
        time.sleep(1.5)  # well past the 0.3 s lease

    running = Running(impl, loop_thread, client, 'jobs', handle, lease=0.3, harvest_interval=0.05)
    wait_for('the handler to start', lambda: deliveries)
    requeued = []
    for _ in range(10):  # a concurrent harvester elsewhere finds nothing to take
        requeued += other.harvest(lease=0.3)
        time.sleep(0.1)
    wait_for('the commit', lambda: r.exists(f'rfq:jobs:message:{msg_id}') == 0)
    stats = running.stop()
    assert requeued == [] and deliveries == [1]
    assert (stats.committed, stats.lost) == (1, 0)
    assert r.dbsize() == 0


def test_topics_in_priority_order(client, r, impl, loop_thread):
    client.topic('low').publish_batch([{'t': 'low'} for _ in range(5)])
    client.topic('high').publish_batch([{'t': 'high'} for _ in range(5)])
    order: list[str] = []
    stats = run_burst(impl, loop_thread, client, ['high', 'low'], lambda m: order.append(m.topic), prefetch=1)
    assert order == ['high'] * 5 + ['low'] * 5 and stats.committed == 10
    assert r.dbsize() == 0


def test_named_worker_resumes_its_processing_list_first(client, r, impl, loop_thread):
    t = client.topic('jobs')
    t.publish_batch([{'n': f'old{i}'} for i in range(3)])
    crashed = t.claim(count=3, owner='w1', lease=60)  # the previous run of w1 died holding these
    t.publish_batch([{'n': f'other{i}'} for i in range(2)])
    foreign = t.claim(count=2, owner='w2', lease=60)  # a live worker's claims: not w1's to take
    t.publish_batch([{'n': f'new{i}'} for i in range(3)])
    order: list[tuple[str, int]] = []
    running = Running(impl, loop_thread, client, 'jobs', lambda m: order.append((m.fields['n'], m.deliveries)),
                      name='w1', prefetch=1)  # fmt: skip
    wait_for('six messages', lambda: len(order) >= 6)
    stats = running.stop()
    assert order == [('old0', 2), ('old1', 2), ('old2', 2), ('new0', 1), ('new1', 1), ('new2', 1)]
    assert stats.committed == 6 and len(crashed) == 3
    assert {e.id: e.owner for e in t.inspect('nextlog')} == {m.id: 'w2' for m in foreign}


def test_harvester_takes_over_a_retired_workers_list(client, r, impl, loop_thread):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(3)])
    gone = t.claim(count=3, owner='retired', lease=0.3)
    got: list[tuple[str, int]] = []
    stats = run_burst(impl, loop_thread, client, 'jobs', lambda m: got.append((m.id, m.deliveries)),
                      name='heir', harvest_interval=0.05)  # fmt: skip
    assert sorted(got) == sorted((m.id, 2) for m in gone)
    assert stats.committed == 3 and r.dbsize() == 0


def test_stop_releases_prefetched_messages(client, r, impl, loop_thread):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(10)])
    started: list[str] = []
    proceed = threading.Event()

    def handle(msg: ferroq.Message) -> None:
        started.append(msg.id)
        proceed.wait(30)

    running = Running(impl, loop_thread, client, 'jobs', handle, concurrency=2, prefetch=6)
    # Both handlers running, four more prefetched (two claims of three: half the prefetch each).
    wait_for('two handlers and six claimed', lambda: len(started) == 2 and r.llen('rfq:jobs:nextlog') == 6)
    running.worker.stop()
    proceed.set()
    stats = running.result.result(30)
    assert (stats.committed, stats.released) == (2, 4)
    s = t.stats()
    assert (s.backlog, s.nextlog, s.leased) == (8, 0, 0)


# --- lanes: each of `concurrency` lanes runs message after message --------------------------------------


def _handler(kind: str, fn: Any) -> Any:
    """``fn`` as a plain handler or as an ``async def`` one (the two kinds of lanes)."""
    if kind == 'plain':
        return fn

    async def handle(msg: ferroq.Message) -> None:
        fn(msg)

    return handle


@pytest.mark.parametrize('kind', ['plain', 'async'])
def test_long_run_with_interleaved_failures(client, r, impl, loop_thread, kind):
    t = client.topic('jobs')
    for start in range(0, 600, 200):
        t.publish_batch([{'n': str(i)} for i in range(start, start + 200)])
    succeeded: list[str] = []
    lock = threading.Lock()

    def handle(msg: ferroq.Message) -> None:
        n = int(msg.fields['n'])
        if n % 50 == 7 or (n % 5 == 0 and msg.deliveries == 1):  # always failing / failing once
            raise ValueError(f'n={n}')
        with lock:
            succeeded.append(msg.id)

    stats = run_burst(impl, loop_thread, client, 'jobs', _handler(kind, handle), concurrency=3, prefetch=50,
                      max_deliveries=2)  # fmt: skip
    assert (stats.committed, stats.retried, stats.dead, stats.lost, stats.released) == (588, 132, 12, 0, 0)
    assert len(succeeded) == len(set(succeeded)) == 588  # each message succeeded exactly once
    dead = client.topic('jobs.dead').inspect()
    assert sorted(int(e.fields['n']) for e in dead) == list(range(7, 600, 50))  # type: ignore[index]
    assert {e.error for e in dead} == {f'ValueError: n={n}' for n in range(7, 600, 50)}
    assert t.stats().backlog == 0 and r.exists('rfq:jobs:nextlog', 'rfq:jobs:delayed', 'rfq:jobs:leases') == 0


@pytest.mark.parametrize('kind', ['plain', 'async'])
def test_stop_in_the_middle_of_a_run(client, r, impl, loop_thread, kind):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(300)])
    handled: list[str] = []
    lock = threading.Lock()
    workers: list[Any] = []

    def handle(msg: ferroq.Message) -> None:
        with lock:
            handled.append(msg.id)
            if len(handled) == 40:
                workers[0].stop()  # from inside a handler, while the other lane is busy too

    running = Running(impl, loop_thread, client, 'jobs', _handler(kind, handle), concurrency=2, prefetch=100)
    workers.append(running.worker)
    stats = running.result.result(30)
    # Every handler that started finished and was committed; no lane took a message after stop().
    assert 40 <= len(handled) <= 41 and len(set(handled)) == len(handled)
    assert (stats.committed, stats.retried, stats.lost) == (len(handled), 0, 0)
    assert all(r.exists(f'rfq:jobs:message:{msg_id}') == 0 for msg_id in handled)
    s = t.stats()  # the rest was released unstarted (or never claimed): all in the backlog again
    assert (s.backlog, s.nextlog, s.leased, s.delayed) == (300 - len(handled), 0, 0, 0)
    assert stats.released > 0


@pytest.mark.parametrize('kind', ['plain', 'async'])
def test_finished_messages_are_committed_while_a_lane_runs_a_slow_one(client, r, impl, loop_thread, kind):
    t = client.topic('jobs')
    first, _, _ = t.publish_batch([{'n': str(i)} for i in range(3)])
    seen: list[bool] = []

    def committed() -> bool:
        return r.exists(f'rfq:jobs:message:{first}') == 0

    def handle(msg: ferroq.Message) -> None:  # the second waits for the first's commit (bounded)
        if msg.fields['n'] == '1':
            deadline = time.monotonic() + 10
            while not committed() and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(committed())

    async def handle_async(msg: ferroq.Message) -> None:
        if msg.fields['n'] == '1':
            deadline = time.monotonic() + 10
            while not committed() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            seen.append(committed())

    stats = run_burst(impl, loop_thread, client, 'jobs', handle if kind == 'plain' else handle_async, prefetch=3)
    assert seen == [True] and stats.committed == 3
    assert r.dbsize() == 0


def test_async_handlers_that_never_wait_do_not_hold_up_renewals(client, r, impl, loop_thread, redis_url):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(120)])
    deliveries: list[int] = []

    async def handle(msg: ferroq.Message) -> None:
        deliveries.append(msg.deliveries)
        time.sleep(0.005)  # noqa: ASYNC251 - blocks the loop on purpose: 0.6 s in all, past the 0.3 s lease

    harvester = ferroq.Client(redis_url).topic('jobs')  # elsewhere: requeues every claim whose lease expires
    stop = threading.Event()
    requeued: list[str] = []

    def harvest() -> None:
        while not stop.wait(0.05):
            requeued.extend(harvester.harvest(lease=0.3))

    thread = threading.Thread(target=harvest)
    thread.start()
    try:
        stats = run_burst(impl, loop_thread, client, 'jobs', handle, prefetch=120, lease=0.3)
    finally:
        stop.set()
        thread.join(10)
    assert requeued == [] and deliveries == [1] * 120
    assert (stats.committed, stats.lost) == (120, 0)
    assert r.dbsize() == 0


def test_plain_handler_returning_a_coroutine(client, r, impl, loop_thread):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(6)])
    ran: list[str] = []

    async def work(msg: ferroq.Message) -> None:
        await asyncio.sleep(0)
        ran.append(msg.fields['n'])
        if msg.fields['n'] == '3' and msg.deliveries == 1:
            raise RuntimeError('later')

    stats = run_burst(impl, loop_thread, client, 'jobs', lambda m: work(m), concurrency=2)
    assert sorted(ran) == ['0', '1', '2', '3', '3', '4', '5']
    assert (stats.committed, stats.retried) == (6, 1)
    assert r.dbsize() == 0


def test_bad_settings_raise_before_io(client, r, impl):
    for kwargs, exc in (
        ({'concurrency': 0}, ferroq.InvalidArgument),
        ({'concurrency': 4, 'prefetch': 2}, ferroq.InvalidArgument),
        ({'prefetch': 10_001}, ferroq.InvalidArgument),
        ({'lease': 0}, ferroq.InvalidArgument),
        ({'max_deliveries': 0}, ferroq.InvalidArgument),
        ({'retry_delay': -1}, ferroq.InvalidArgument),
        ({'retry_backoff': 0.5}, ferroq.InvalidArgument),
        ({'poll': 0}, ferroq.InvalidArgument),
        ({'name': 'a b'}, ferroq.InvalidArgument),
        ({'dead_letter': 'bad:name'}, ferroq.InvalidName),
        ({'dead_letter': 'jobs'}, ferroq.InvalidArgument),
        ({'burst': 1}, ferroq.InvalidArgument),
    ):
        with pytest.raises(exc):
            _worker(impl, client, 'jobs', print, **kwargs)
    for topics in ([], 'bad:topic', ['a', 'a'], 3):
        with pytest.raises(ferroq.InvalidArgument):
            _worker(impl, client, topics, print)
    with pytest.raises(ferroq.InvalidArgument):
        _worker(impl, client, 'jobs', 'not callable')
    with pytest.raises(ferroq.InvalidArgument):
        ferroq.Worker(object(), 'jobs', print)
    assert r.dbsize() == 0


# --- graceful shutdown of a worker process -----------------------------------------------------------

SCRIPT = """
import asyncio, sys, time
import ferroq, ferroq.pure

impl, url, log = sys.argv[1:4]
cls = {'native': ferroq.Client, 'native-async': ferroq.AsyncClient,
       'pure': ferroq.pure.Client, 'pure-async': ferroq.pure.AsyncClient}[impl]
opts = dict(concurrency=2, prefetch=6, lease=30.0, poll=0.05)

def note(msg):
    with open(log, 'a') as f:
        f.write(msg.id + '\\n')

if impl.endswith('async'):
    async def handle(msg):
        note(msg)
        await asyncio.sleep(1.0)

    async def main():
        return await ferroq.AsyncWorker(cls(url), 'jobs', handle, **opts).run()

    stats = asyncio.run(main())
else:
    def handle(msg):
        note(msg)
        time.sleep(1.0)

    stats = ferroq.Worker(cls(url), 'jobs', handle, **opts).run()
print(stats.committed, stats.released)
"""


def test_sigterm_finishes_in_flight_and_releases_prefetched(client, r, impl, redis_url, tmp_path):
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(10)])
    script, log = tmp_path / 'worker.py', tmp_path / 'started.log'
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), impl, redis_url, str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=dict(os.environ),
    )  # fmt: skip
    try:
        wait_for('two handlers to start', lambda: log.exists() and len(log.read_text().split()) >= 2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    started = log.read_text().split()
    assert out.split() == ['2', '4'] and len(started) == 2
    for msg_id in started:  # finished and committed
        assert r.exists(f'rfq:jobs:message:{msg_id}') == 0
    s = t.stats()
    assert (s.backlog, s.nextlog, s.leased, s.delayed) == (8, 0, 0, 0)


def test_worker_exports():
    assert ferroq.Worker is ferroq.worker.Worker and ferroq.AsyncWorker is ferroq.worker.AsyncWorker
    assert isinstance(ferroq.WorkerStats(), ferroq.WorkerStats)
    assert Path(ferroq.worker.__file__).name == 'worker.py'
