"""Small assertions shared by the test modules."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

ID_RE = re.compile(r'[0-9a-f]{32}')


def assert_rfq_id(msg_id: str) -> uuid.UUID:
    """An rfq id: 32 lowercase hex, a version-1 uuid with the multicast bit of a random node (rfq 1.2+)."""
    assert ID_RE.fullmatch(msg_id), msg_id
    u = uuid.UUID(hex=msg_id)
    assert u.version == 1, msg_id
    assert u.node & (1 << 40), f'multicast bit not set in {msg_id}'
    return u


def assert_recent(when: Any, seconds: float = 10.0) -> None:
    """An aware UTC datetime within ``seconds`` of now."""
    assert isinstance(when, datetime), when
    assert when.tzinfo is not None and when.utcoffset() == timezone.utc.utcoffset(None), when
    assert abs((datetime.now(timezone.utc) - when).total_seconds()) < seconds, when


def message_keys(topic: str, ids: list[str]) -> set[str]:
    return {f'rfq:{topic}:message:{i}' for i in ids}


def bodies(messages: list[Any], field: str = 'n') -> list[str]:
    return [m.fields[field] for m in messages]


def run_in_threads(work: Callable[[int], object], n: int, timeout: float = 60.0) -> list[BaseException]:
    """Runs ``work(0)`` .. ``work(n - 1)`` on ``n`` threads at once; returns what they raised."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout)
    return errors


def queue_keys(r: Any, pattern: str = '*') -> set[str]:
    """The keys matching ``pattern`` except the send records (``...:published:<token>``), which expire by themselves."""
    return {k for k in r.keys(pattern) if ':published:' not in k}


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m ferroq ARGS`` with ``env`` added to this process's environment."""
    return subprocess.run(
        [sys.executable, '-m', 'ferroq', *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def signal_when(
    proc: subprocess.Popen[str], sig: int, ready: Callable[[], bool], timeout: float = 20.0
) -> tuple[str, str]:
    """Send ``sig`` to ``proc`` once ``ready()`` holds (polled), then wait for its exit; returns (stdout, stderr).

    Fails if the process exits first or ``ready()`` stays false for ``timeout`` seconds; the process is killed
    if it is still running at the end.
    """
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, f'the process exited first ({proc.returncode})'
            assert time.monotonic() < deadline, f'not ready after {timeout} s'
            time.sleep(0.02)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=timeout)
        return stdout, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def wait_for(what: str, check: Callable[[], object], timeout: float = 20.0, step: float = 0.02) -> None:
    """Polls ``check`` until it is true; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out after {timeout} s waiting for {what}')
        time.sleep(step)
