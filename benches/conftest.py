"""Fixtures of the pytest-benchmark suite: a private redis-server and one client per implementation.

Run with ``pytest benches/`` (``tests/`` is the default test path, so these never run with the tests).
The server listens on a free loopback port (never 6379) in a temporary directory, without persistence.
Set ``FERROQ_BENCH_URL`` to benchmark an existing server instead.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

IMPLEMENTATIONS = ('native', 'native-async', 'pure')


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


class _Blocking:
    """Runs the awaitable methods of an async topic on one event loop, so a benchmark can time them."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target = target
        self._loop = loop

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._target, name)

        async def run(*args: Any, **kwargs: Any) -> Any:
            return await method(*args, **kwargs)  # called inside the loop: the native client needs a running one

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run_until_complete(run(*args, **kwargs))

        return call


@pytest.fixture(params=IMPLEMENTATIONS)
def impl(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def topic(impl: str, redis_url: str) -> Iterator[Any]:
    """A fresh topic of the client ``impl``, with a sync interface; deleted afterwards."""
    name = f'bench-{secrets.token_hex(4)}'
    loop: asyncio.AbstractEventLoop | None = None
    if impl == 'native-async':
        import ferroq

        loop = asyncio.new_event_loop()

        async def make() -> Any:
            return ferroq.AsyncClient(redis_url)

        aclient = loop.run_until_complete(make())
        t: Any = _Blocking(aclient.topic(name), loop)
        close: Callable[[], object] = _Blocking(aclient, loop).close
    else:
        if impl == 'native':
            import ferroq

            client: Any = ferroq.Client(redis_url)
        else:
            import ferroq.pure

            client = ferroq.pure.Client(redis_url)
        t = client.topic(name)
        close = client.close
    try:
        yield t
    finally:
        t.purge('backlog')
        t.purge('nextlog')
        close()
        if loop is not None:
            loop.close()
        admin = redis.Redis.from_url(redis_url)
        left = list(admin.scan_iter(match=f'rfq:{name}:*', count=1000))
        if left:
            admin.delete(*left)
        admin.close()
        assert not left, f'keys left after the benchmark: {left[:5]}'
