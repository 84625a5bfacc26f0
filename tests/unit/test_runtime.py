"""Process-level behaviour of the sync clients: fork safety, the GIL released during I/O, Ctrl-C, threads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import ferroq
import ferroq.pure
from _checks import run_in_threads

SYNC_CLIENTS = {'native': ferroq.Client, 'pure': ferroq.pure.Client}


def _wait_child(pid: int, timeout: float = 15.0) -> int:
    """The exit status of a forked child, killing it if it runs longer than ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f'the forked child did not finish within {timeout} s')


def _run_in_forked_child(body: Callable[[], bool], tmp_path: Path) -> None:
    """Runs ``body`` in a forked child; fails with the child's traceback unless it returns True."""
    errors = tmp_path / 'child-error.txt'
    pid = os.fork()
    if pid == 0:  # the child: only os._exit, never return into pytest
        code = 1
        try:
            code = 0 if body() else 1
        except BaseException:  # noqa: BLE001 - report anything to the parent
            errors.write_text(traceback.format_exc())
        finally:
            os._exit(code)
    status = _wait_child(pid)
    assert status == 0, errors.read_text() if errors.exists() else f'exit status {status}'


@pytest.mark.parametrize('kind', list(SYNC_CLIENTS))
def test_client_works_in_forked_child(kind, redis_url, r, tmp_path):
    c = SYNC_CLIENTS[kind](redis_url)
    try:
        t = c.topic('fork')
        t.publish({'from': 'parent'})  # connections and the runtime are up before the fork

        def child() -> bool:
            t.publish({'from': 'child'})
            [msg] = t.claim()
            assert msg.fields == {'from': 'parent'}
            assert t.commit([msg]) == [msg.id]
            return c.ping()

        _run_in_forked_child(child, tmp_path)
        # The parent's client still works after the child used (and dropped) its inherited state.
        [msg] = t.claim()
        assert msg.fields == {'from': 'child'}
        assert t.commit([msg]) == [msg.id]
        assert r.dbsize() == 0
    finally:
        c.close()


@pytest.mark.parametrize('kind', list(SYNC_CLIENTS))
def test_a_forked_child_never_draws_its_parents_ids(kind, redis_url, r, tmp_path):
    """An id is random past its timestamp: a child that went on with its parent's random state would draw the
    very numbers the parent draws next."""
    c = SYNC_CLIENTS[kind](redis_url)
    try:
        t = c.topic('fork')
        t.publish({'from': 'parent'})  # the parent has made ids (and seeded what makes them) before the fork
        written = tmp_path / 'child-ids.txt'

        def child() -> bool:
            written.write_text(' '.join(t.publish_batch([{'from': 'child'}] * 20)))
            return True

        _run_in_forked_child(child, tmp_path)
        parent = t.publish_batch([{'from': 'parent'}] * 20)
        child_ids = written.read_text().split()
        assert len(child_ids) == 20

        def random_parts(ids: list[str]) -> set[str]:
            return {i[16:] for i in ids}  # clock sequence and node

        assert not random_parts(parent) & random_parts(child_ids)
        assert r.llen('rfq:fork:backlog') == 41
    finally:
        c.close()


@pytest.mark.parametrize('source', ['topic', 'rsmq'])
def test_native_batches_refuse_a_forked_child_and_still_serve_the_parent(source, redis_url, r, tmp_path):
    """The claim (a topic's) or receive (an RSMQ queue's) ahead is a task of the parent's runtime: a child gets a
    clear error, the parent its batches."""
    c = ferroq.Client(redis_url)
    try:
        if source == 'topic':
            t = c.topic('fork')
            ids = t.publish_batch([{'n': str(i)} for i in range(6)])
            batches = t.batches(2, lease=30)
            done = t.commit

            def left() -> list[str]:
                return r.lrange('rfq:fork:backlog', 0, -1)[::-1]
        else:
            q = c.rsmq('fork')
            q.create()
            ids = q.send_batch([str(i) for i in range(6)])
            batches = q.batches(2, vt=60)

            def done(batch: list[ferroq.RsmqMessage]) -> list[str]:
                return q.delete_batch([m.id for m in batch])

            def left() -> list[str]:
                return [m.id for m in q.receive_batch(10)]

        first = next(batches)  # the call for the second batch is in flight

        def child() -> bool:
            with pytest.raises(ferroq.InvalidArgument, match='forked child'):
                next(batches)
            return True

        _run_in_forked_child(child, tmp_path)
        assert [m.id for m in first] == ids[:2] and done(first) == ids[:2]
        second = next(batches)
        assert [m.id for m in second] == ids[2:4] and done(second) == ids[2:4]
        batches.close()  # gives the third batch, taken ahead, back
        assert left() == ids[4:]
    finally:
        c.close()


def test_native_blocking_claim_releases_the_gil(redis_url):
    c = ferroq.Client(redis_url)
    try:
        t = c.topic('gil')
        t.claim()  # connect first, so only the blocking wait is measured
        ticks = 0
        stop = threading.Event()

        def count() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                time.sleep(0.001)

        counter = threading.Thread(target=count, daemon=True)
        counter.start()
        time.sleep(0.05)
        start_ticks = ticks
        start = time.monotonic()
        assert t.claim(block=1.0) == []
        elapsed = time.monotonic() - start
        during = ticks - start_ticks
        stop.set()
        counter.join(5)
        assert elapsed >= 0.9
        # A thread sleeping 1 ms per tick makes hundreds of ticks per second unless the GIL is held.
        assert during > 100, f'only {during} ticks in {elapsed:.2f} s: the GIL was held during the wait'
    finally:
        c.close()


def test_native_publish_batch_from_threads(redis_url, r):
    c = ferroq.Client(redis_url)
    try:
        t = c.topic('threads')
        results: list[list[str]] = []

        def work(n: int) -> None:
            results.append(t.publish_batch([{'thread': str(n), 'i': str(i)} for i in range(200)]))

        assert run_in_threads(work, 8, 30) == []
        assert len(results) == 8
        assert len({i for ids in results for i in ids}) == 1600
        assert r.llen('rfq:threads:backlog') == 1600
    finally:
        c.close()


_CTRL_C_CHILD = """
import sys, time
import redis, ferroq, ferroq.pure
url, kind = sys.argv[1], sys.argv[2]
c = (ferroq.Client if kind == 'native' else ferroq.pure.Client)(url)
t = c.topic('ctrl-c')
t.claim()  # connected, so only the blocking wait is interrupted
print('blocking', flush=True)
try:
    t.claim(block=60)
except KeyboardInterrupt:
    print('interrupted', flush=True)
r = redis.Redis.from_url(url)
deadline = time.monotonic() + 10
while r.info('clients')['blocked_clients'] and time.monotonic() < deadline:
    time.sleep(0.01)
# The interrupted claim's BLMOVE is gone (its connection closed) before the client is used again.
print('blocked', r.info('clients')['blocked_clients'], flush=True)
t.publish({'n': '1'})
[m] = t.claim()
print('committed', t.commit([m]) == [m.id], flush=True)
"""


def _interrupt_blocked_child(script: str, *args: str, r) -> tuple[list[str], int]:
    """Runs ``script`` in a child; once it prints 'blocking' and waits in a BLMOVE, sends it SIGINT.

    Returns the lines it printed after 'blocking' and its exit status.
    """
    child = subprocess.Popen([sys.executable, '-c', script, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == 'blocking'
        deadline = time.monotonic() + 10
        while not r.info('clients')['blocked_clients'] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert r.info('clients')['blocked_clients'] == 1  # the child waits in its BLMOVE
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)  # without the interruption: 60 s, and this fails
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return out.split('\n'), child.returncode


@pytest.mark.parametrize('kind', list(SYNC_CLIENTS))
def test_ctrl_c_interrupts_a_blocking_claim(kind, redis_url, r):
    """SIGINT during ``claim(block=60)`` raises KeyboardInterrupt at once, and the client still works."""
    lines, status = _interrupt_blocked_child(_CTRL_C_CHILD, redis_url, kind, r=r)
    assert lines[:3] == ['interrupted', 'blocked 0', 'committed True'], lines
    assert status == 0


_CTRL_C_SINGLE_CHILD = """
import sys
import ferroq, ferroq.pure
url, kind, call = sys.argv[1], sys.argv[2], sys.argv[3]
c = (ferroq.Client if kind == 'native' else ferroq.pure.Client)(url, command_timeout=30)
t = c.topic('ctrl-c')
t.publish({'n': '0'})
t.publish({'n': '0'})
t.claim()  # connected and the scripts loaded: the native client's next call waits on a blocking connection
print('ready', flush=True)
sys.stdin.readline()  # Redis holds writes now
try:
    t.publish({'n': '1'}) if call == 'publish' else t.claim()
except KeyboardInterrupt:
    print('interrupted', flush=True)
sys.stdin.readline()  # Redis runs writes again
print('published', len(t.publish({'n': '2'})) == 32, flush=True)
"""


@pytest.mark.parametrize('call', ['publish', 'claim'])
@pytest.mark.parametrize('kind', list(SYNC_CLIENTS))
def test_ctrl_c_interrupts_a_single_call(kind, call, redis_url, r):
    """SIGINT while a single publish or claim waits for Redis (its writes paused) raises KeyboardInterrupt at
    once, and the client still works."""
    child = subprocess.Popen(
        [sys.executable, '-c', _CTRL_C_SINGLE_CHILD, redis_url, kind, call],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    # Without the interruption the call waits for its command timeout (30 s): the child is killed first.
    killer = threading.Timer(20, child.kill)
    killer.start()
    try:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().strip() == 'ready'
        r.execute_command('CLIENT', 'PAUSE', 60_000, 'WRITE')
        try:
            child.stdin.write('go\n')
            child.stdin.flush()
            deadline = time.monotonic() + 10
            while not r.info('clients')['blocked_clients'] and time.monotonic() < deadline:
                time.sleep(0.01)
            assert r.info('clients')['blocked_clients'] == 1  # the child's call waits
            child.send_signal(signal.SIGINT)
            assert child.stdout.readline().strip() == 'interrupted'
        finally:
            r.execute_command('CLIENT', 'UNPAUSE')
        child.stdin.write('go\n')
        child.stdin.flush()
        out, _ = child.communicate(timeout=30)
    finally:
        killer.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    assert out.split('\n')[0] == 'published True'
    assert child.returncode == 0


_CTRL_C_BATCHES_CHILD = """
import os, sys
import ferroq
c = ferroq.Client(sys.argv[1])
t = c.topic('ctrl-c')
t.claim()  # connected, so only the blocking wait is interrupted
batches = t.batches(10, block=60, lease=30)
print('blocking', flush=True)
try:
    next(batches)
except KeyboardInterrupt:
    print('interrupted', flush=True)
t.publish({'n': '1'})  # the interrupted claim is still waiting: this message is its batch
[m] = next(batches)
print('got', m.fields['n'], flush=True)
print('committed', t.commit([m]) == [m.id], flush=True)
# Not batches.close(): it would wait for the next claim, blocked for up to 60 s, to give its batch back.
os._exit(0)
"""


def test_ctrl_c_leaves_the_native_claim_ahead_in_flight(redis_url, r):
    """SIGINT while ``next(batches)`` waits raises KeyboardInterrupt; the claim stays the iterator's next batch."""
    lines, status = _interrupt_blocked_child(_CTRL_C_BATCHES_CHILD, redis_url, r=r)
    assert lines[:3] == ['interrupted', 'got 1', 'committed True'], lines
    assert status == 0
    assert r.dbsize() == 0


def test_native_sync_calls_from_many_threads_share_the_runtime(redis_url, r):
    """One thread waits in a blocking claim while others publish, claim and commit on the same client."""
    c = ferroq.Client(redis_url)
    try:
        waiting, busy = c.topic('waiting'), c.topic('busy')
        got: list[list[ferroq.Message]] = []
        blocked = threading.Thread(target=lambda: got.append(waiting.claim(block=30)))
        blocked.start()

        def work(n: int) -> None:
            for i in range(50):
                busy.publish({'thread': str(n), 'i': str(i)})
                [m] = busy.claim()
                assert busy.commit([m]) == [m.id]

        assert run_in_threads(work, 4, 60) == []
        waiting.publish({'n': 'last'})
        blocked.join(30)
        assert [[m.fields for m in ms] for ms in got] == [[{'n': 'last'}]]
        assert waiting.commit(got[0]) == [got[0][0].id]
        assert r.dbsize() == 0
    finally:
        c.close()


def test_sync_calls_from_inside_publish_stream(redis_url, r, loop_thread):
    """The iterable of publish_stream runs on a runtime thread; a sync call made there still completes."""
    c = ferroq.Client(redis_url)
    try:
        t, other = c.topic('stream'), c.topic('other')

        def messages(n: int) -> Iterator[dict[str, str]]:
            for i in range(n):
                other.publish({'i': str(i)})  # the same client, from inside its own call
                yield {'i': str(i)}

        assert t.publish_stream(messages(5)) == 5

        async def from_async() -> int:
            ac = ferroq.AsyncClient(redis_url)
            try:
                return await ac.topic('stream').publish_stream(messages(3))
            finally:
                await ac.close()

        assert loop_thread.run(from_async()) == 3
        assert r.llen('rfq:stream:backlog') == 8
        assert r.llen('rfq:other:backlog') == 8
    finally:
        c.close()


@pytest.mark.parametrize('kind', list(SYNC_CLIENTS))
def test_connection_dropped_while_idle_is_replaced_before_a_claim(kind, redis_url, r):
    """A claim is not repeated after a drop, so a connection the server closed is replaced before it is sent."""
    c = SYNC_CLIENTS[kind](redis_url)
    try:
        t = c.topic('idle')
        for i in range(20):
            t.publish({'i': str(i)})
            r.client_kill_filter(_type='normal', skipme=True)  # the server closes them before replying
            [m] = t.claim()
            assert t.commit([m]) == [m.id]
    finally:
        c.close()
