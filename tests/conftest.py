"""Fixtures: throwaway redis-servers on loopback, and the ``client`` parametrised over every implementation.

- ``redis_server`` (session): ``redis-server --port <free> --bind 127.0.0.1 --save '' --appendonly no``, the
  ``redis-server`` first on PATH (``make test-versions`` puts ``.servers/redis-6.2`` or ``.servers/valkey-8``
  first; the report header names the server).
- ``redis_url``: that server's URL after FLUSHALL, SCRIPT FLUSH and CONFIG RESETSTAT.
- ``r``: a raw redis-py client (``decode_responses=True``) to check state.
- ``client``: ``native`` (ferroq.Client), ``native-async`` (ferroq.AsyncClient), ``pure`` (ferroq.pure.Client),
  ``pure-async`` (ferroq.pure.AsyncClient); the async ones through tests/_adapters.py, so the tests are sync.
- ``make_client(url, **options)``: more clients of the same implementation, closed at teardown.

The whole session runs with ``FERROQ_HOME`` in a temp dir and without ``FERROQ_URL``/``RFQ_REDIS_*`` (nor the
credential and TLS variables of ``ferroq.connection.ENV``), so
nothing touches the user's embedded server or their Redis.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

sys.path.insert(0, str(Path(__file__).parent))  # the helper modules next to this file

from _adapters import KINDS, Client, LoopThread, new_client
from _redis import PASSWORD, RedisServer, server_version

MakeClient = Callable[..., Client]


@pytest.fixture(scope='session', autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp('fh')
    mp = pytest.MonkeyPatch()
    mp.setenv('FERROQ_HOME', str(home))
    from ferroq.connection import ENV

    for name in ('FERROQ_URL', 'RFQ_REDIS_HOST', 'RFQ_REDIS_PORT', 'XDG_DATA_HOME', *ENV.values()):
        mp.delenv(name, raising=False)
    yield home
    with contextlib.suppress(Exception):
        from ferroq import server

        server.stop_embedded()  # in case a test started one in the temp FERROQ_HOME
    mp.undo()


@pytest.fixture(scope='session', autouse=True)
def _sigint_as_at_a_terminal() -> Iterator[None]:
    """A run started in the background (``cmd &`` in a script) has SIGINT ignored, and its children would start
    with it ignored and never see Ctrl-C: the tests that send SIGINT to a child need it as at a terminal."""
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope='session')
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp('redis'))
    yield server
    server.stop()


@pytest.fixture(scope='session')
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server with ``--requirepass PASSWORD``."""
    server = RedisServer(tmp_path_factory.mktemp('redis-auth'), password=PASSWORD)
    yield server
    server.stop()


@pytest.fixture(scope='session')
def _raw(redis_server: RedisServer) -> Iterator[redis.Redis]:
    conn = redis.Redis(host='127.0.0.1', port=redis_server.port, decode_responses=True, socket_timeout=30)
    yield conn
    conn.close()


@pytest.fixture
def redis_url(redis_server: RedisServer, _raw: redis.Redis) -> str:
    _raw.flushall()
    _raw.script_flush()
    _raw.config_resetstat()
    return redis_server.url


@pytest.fixture
def r(redis_url: str, _raw: redis.Redis) -> redis.Redis:
    """Raw redis-py on the flushed test DB, to check what the clients left there."""
    return _raw


@pytest.fixture(scope='session')
def loop_thread() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture(params=KINDS)
def impl(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_client(impl: str, loop_thread: LoopThread) -> Iterator[MakeClient]:
    made: list[Client] = []

    def make(url: str | None, **options: Any) -> Client:
        c = new_client(impl, loop_thread, url, **options)
        made.append(c)
        return c

    yield make
    for c in made:
        with contextlib.suppress(Exception):
            c.close()


@pytest.fixture
def client(make_client: MakeClient, redis_url: str) -> Client:
    return make_client(redis_url)


def pytest_report_header(config: pytest.Config) -> str:
    try:
        import ferroq._ferroq as native

        where = native.__file__
    except ImportError as exc:
        where = f'not importable ({exc})'
    return f'ferroq native module: {where}\nserver: {server_version()} (the redis-server on PATH)'


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line('markers', 'embedded: starts and stops the embedded redis-server in a temp FERROQ_HOME')
