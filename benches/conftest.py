"""Fixtures of the pytest-benchmark suite: a private redis-server for the session.

Run with ``make bench-suite`` or ``pytest benches/`` (``tests/`` is the default test path, so these never
run with the tests).
The server listens on a free loopback port (never 6379) in a temporary directory, without persistence.
Set ``FERROQ_BENCH_URL`` to benchmark an existing server instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis


def _free_port() -> int:
    for _ in range(20):  # bounded; the OS hands out ephemeral ports, which are never 6379 in practice
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = int(s.getsockname()[1])
        if port != 6379:
            return port
    raise RuntimeError('no free loopback port')


@pytest.fixture(scope='session')
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of our own for the whole session."""
    if os.environ.get('FERROQ_BENCH_URL'):
        yield os.environ['FERROQ_BENCH_URL']
        return
    exe = shutil.which(os.environ.get('FERROQ_REDIS_SERVER_BIN', 'redis-server'))
    if exe is None:
        pytest.skip('redis-server is not on PATH')
    port = _free_port()
    directory: Path = tmp_path_factory.mktemp('redis')
    cmd = [exe, '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', str(directory)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f'redis://127.0.0.1:{port}/0'
    admin = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                admin.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f'redis-server did not start: {cmd}') from None
                time.sleep(0.05)
        yield url
    finally:
        admin.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
