"""Process-level behaviour of the sync clients: fork safety and the GIL released during I/O."""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback

import pytest

import ferroq
import ferroq.pure

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


@pytest.mark.parametrize('kind', list(SYNC_CLIENTS))
def test_client_works_in_forked_child(kind, redis_url, r, tmp_path):
    c = SYNC_CLIENTS[kind](redis_url)
    try:
        t = c.topic('fork')
        t.publish({'from': 'parent'})  # connections and the runtime are up before the fork
        errors = tmp_path / 'child-error.txt'
        pid = os.fork()
        if pid == 0:  # the child: only os._exit, never return into pytest
            code = 1
            try:
                t.publish({'from': 'child'})
                [msg] = t.claim()
                assert msg.fields == {'from': 'parent'}
                assert t.commit([msg]) == [msg.id]
                code = 0 if c.ping() else 1
            except BaseException:  # noqa: BLE001 - report anything to the parent
                errors.write_text(traceback.format_exc())
            finally:
                os._exit(code)
        status = _wait_child(pid)
        assert status == 0, errors.read_text() if errors.exists() else f'exit status {status}'
        # The parent's client still works after the child used (and dropped) its inherited state.
        [msg] = t.claim()
        assert msg.fields == {'from': 'child'}
        assert t.commit([msg]) == [msg.id]
        assert r.dbsize() == 0
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
        lock = threading.Lock()

        def work(n: int) -> None:
            ids = t.publish_batch([{'thread': str(n), 'i': str(i)} for i in range(200)])
            with lock:
                results.append(ids)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert len(results) == 8
        assert len({i for ids in results for i in ids}) == 1600
        assert r.llen('rfq:threads:backlog') == 1600
    finally:
        c.close()
