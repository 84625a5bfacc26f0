"""A sentinel password never shows: not in a repr, an error, a warning, a log line, CLI output or bench JSON.

The test gives the sentinel to every way a password comes in (URL, argument, file, environment), drives
every surface that shows a URL or an error (successful calls, a failed AUTH, a refused connection, a bad
URL, a failed TLS handshake, a worker that logs retries, the eviction warning, the CLI, ``ferroq bench
--json``), collects all that text and searches it. Each surface must also show the server's address, so
an empty or skipped surface cannot pass for a clean one; and the search itself is checked to find a planted
sentinel.
"""

from __future__ import annotations

import json
import logging
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import ferroq
from _checks import cli
from _redis import RedisServer
from ferroq.exceptions import FerroqError

SENTINEL = 'S3ntinel-7c1f9e2b-never-shown'


@pytest.fixture(scope='module')
def secret_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A server whose default user's password is the sentinel; allkeys-lru, so clients warn about eviction."""
    server = RedisServer(
        tmp_path_factory.mktemp('redis-secret'), '--maxmemory-policy', 'allkeys-lru', password=SENTINEL
    )
    yield server
    server.stop()


class Seen:
    """Every text a surface showed, by surface name."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.texts: dict[str, list[str]] = {}
        self.expected: dict[str, str] = {}

    def add(self, surface: str, *texts: object, expect: str | None = None) -> None:
        """Keep ``texts``; ``expect`` (default: the server's address; '': any text) must be among them, so the
        surface showed something real."""
        self.texts.setdefault(surface, []).extend(str(t) for t in texts)
        self.expected[surface] = self.address if expect is None else expect

    def error(self, surface: str, call: Callable[[], Any], expect: str | None = None) -> None:
        """Run ``call``, which must fail with a ferroq error, and keep everything the error shows."""
        try:
            call()
        except FerroqError as exc:
            chain: list[BaseException] = []
            e: BaseException | None = exc
            while e is not None and len(chain) < 10:
                chain.append(e)
                e = e.__cause__ or e.__context__
            texts = [*(str(x) for x in chain), *(repr(x) for x in chain), *(x.args for x in chain)]
            self.add(surface, *texts, ''.join(traceback.format_exception(exc)), expect=expect)
        else:
            pytest.fail(f'{surface}: no error')

    def assert_clean(self) -> None:
        assert self.texts, 'nothing was collected'
        for surface, texts in self.texts.items():
            joined = '\n'.join(texts)
            assert SENTINEL not in joined, f'the password shows in {surface}: {joined[:2000]}'
            assert joined.strip() and self.expected[surface] in joined, f'{surface} showed nothing real: {joined[:500]}'


def test_the_search_finds_a_planted_sentinel():
    seen = Seen('127.0.0.1:1')
    seen.add('planted', f'redis://:{SENTINEL}@127.0.0.1:1/0')
    with pytest.raises(AssertionError, match='the password shows in planted'):
        seen.assert_clean()


def test_the_password_never_shows(make_client, impl, loop_thread, secret_server, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    address = f'127.0.0.1:{secret_server.port}'
    url = f'redis://default:{SENTINEL}@{address}/0'
    password_file = tmp_path / 'password'
    password_file.write_text(SENTINEL)
    seen = Seen(address)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        clients = {
            'url': make_client(url),
            'argument': make_client(f'redis://{address}/0', username='default', password=SENTINEL),
            'file': make_client(f'redis://{address}/0', password_file=str(password_file)),
        }
        monkeypatch.setenv('FERROQ_PASSWORD', SENTINEL)
        clients['environment'] = make_client(f'redis://{address}/0')
        monkeypatch.delenv('FERROQ_PASSWORD')
        for how, c in clients.items():
            topic = c.topic(f'jobs-{how}')
            topic.publish({'n': '1'})  # connects, authenticates and reads the eviction policy
            seen.add(f'client repr ({how})', repr(c), c.url, repr(topic), repr(c.rsmq('q')), repr(c.stream('s')))
            seen.add(f'group repr ({how})', repr(c.stream('s').group('g')), c.url)
    assert any('maxmemory-policy allkeys-lru' in str(w.message) for w in caught), 'the eviction warning is a surface'
    seen.add('warnings', *(w.message for w in caught))

    seen.error('failed AUTH', lambda: make_client(url.replace(SENTINEL, SENTINEL + 'x')).ping(), 'PermissionDenied')
    wrong = lambda: make_client(f'redis://{address}/0', password=SENTINEL + 'x').ping()
    seen.error('wrong password argument', wrong, 'PermissionDenied')
    closed = f'redis://default:{SENTINEL}@127.0.0.1:1/0'
    seen.error('refused connection', lambda: make_client(closed, connect_timeout=5).ping(), '127.0.0.1:1')
    seen.error('bad URL', lambda: make_client(f'redis://default:{SENTINEL}@{address}:notaport/0'))
    # TLS to a plain port: the server waits for the rest of a command, so only the timeouts end it.
    tls = f'rediss://default:{SENTINEL}@{address}/0'
    seen.error('TLS handshake', lambda: make_client(tls, connect_timeout=0.5, command_timeout=0.5).ping())
    seen.error('insecure without its switch', lambda: make_client(f'rediss://default:{SENTINEL}@{address}/0#insecure'))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        make_client(f'rediss://default:{SENTINEL}@{address}/0', tls_insecure_skip_verify=True)
    seen.add('insecure warning', *(w.message for w in caught))

    # A worker that retries a failing message logs each failure.
    c = clients['url']
    c.topic('work').publish({'n': '1'})
    calls: list[int] = []

    def handle(msg: ferroq.Message) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError('first try fails')

    async def handle_async(msg: ferroq.Message) -> None:
        handle(msg)

    options: dict[str, Any] = {'burst': True, 'poll': 0.05, 'handle_signals': False, 'retry_delay': 0.01}
    if impl.endswith('async'):
        worker: Any = ferroq.AsyncWorker(c.wrapped, ['work'], handle_async, **options)
        loop_thread.run(worker.run())
    else:
        worker = ferroq.Worker(c, ['work'], handle, **options)
        worker.run()
    assert len(calls) == 2
    seen.add('worker', repr(worker), caplog.text)
    assert 'first try fails' in caplog.text, 'the worker logged its retry'
    seen.assert_clean()


def test_the_password_never_shows_in_cli_output_or_bench_json(secret_server, tmp_path):
    address = f'127.0.0.1:{secret_server.port}'
    url = f'redis://default:{SENTINEL}@{address}/0'
    seen = Seen(address)
    for flags in ([], ['--pure']):
        runs = {
            'publish': cli('--url', url, *flags, 'publish', '-t', 'cli', '-m', '{"n": "1"}'),
            'stats': cli('--url', url, *flags, '--json', 'stats'),
            'server url': cli('--url', url, 'server', 'url'),
            'wrong password': cli('--url', url.replace(SENTINEL, SENTINEL + 'x'), *flags, 'stats'),
            'password from the environment': cli(
                '--url', f'redis://{address}/0', *flags, 'claim', '-t', 'cli', env={'FERROQ_PASSWORD': SENTINEL}
            ),
            'verbose failure': cli('--url', f'redis://default:{SENTINEL}@{address}:notaport/0', *flags, 'stats'),
        }
        for name, out in runs.items():
            seen.add(f'cli {name} {flags}', out.stdout, out.stderr, expect='')
        assert runs['publish'].returncode == 0 and runs['wrong password'].returncode == 1
        assert runs['password from the environment'].returncode == 0, runs['password from the environment'].stderr
    results = tmp_path / 'bench.json'
    out = cli(
        'bench', '--url', url, '--impl', 'native', '--op', 'publish', '--batch', '100', '--messages', '200',
        '--no-ceiling', '--no-latency', '--no-scale', '--target-pairs', '0', '--spark-rows', '0',
        '--json', str(results),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    document = results.read_text()
    assert json.loads(document)['rows'], 'the bench measured something'
    seen.add('bench', out.stdout, out.stderr, document)
    seen.assert_clean()


def test_the_spark_plan_hides_the_password(secret_server, tmp_path):
    from ferroq.spark._options import parse

    address = f'127.0.0.1:{secret_server.port}'
    password_file = tmp_path / 'password'
    password_file.write_text(SENTINEL)
    seen = Seen(address)
    for options in (
        {'url': f'redis://default:{SENTINEL}@{address}/0'},
        {'url': f'redis://{address}/0', 'username': 'default', 'password': SENTINEL},
        {'url': f'redis://{address}/0', 'username': 'default', 'password_file': str(password_file)},
    ):
        plan = parse({**options, 'topic': 'jobs'}, 'write')
        seen.add(f'plan {sorted(options)}', repr(plan), plan.connection.shown_url)
        assert SENTINEL in plan.connection.url  # the executors get it (the plan is pickled), unshown
        bad = {**options, 'topic': 'jobs', 'pool_size': 'x'}
        seen.error(f'plan error {sorted(options)}', lambda o=bad: parse(o, 'write'), 'pool_size')
    seen.assert_clean()
