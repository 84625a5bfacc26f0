"""TLS and mTLS on every client kind, the CLI, the worker and the Spark source's connections.

The fixtures make a CA (tests/_tls.py) and run three ``redis-server --port 0 --tls-port P`` on loopback that
require a client certificate: one with a certificate for 127.0.0.1/localhost, one for another host name, one
expired. A verified connection works; every way a handshake can fail is a ``TlsError`` (a
``ConnectionFailed``) that says what to fix, and nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import ferroq
from _checks import cli
from _tls import Pki, TlsRedisServer, make_pki
from ferroq.connection import InsecureTlsWarning
from ferroq.exceptions import ConnectionFailed, InvalidArgument, TlsError


@pytest.fixture(scope='module')
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp('pki'))


@pytest.fixture(scope='module')
def tls_servers(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TlsRedisServer]]:
    servers: dict[str, TlsRedisServer] = {}
    try:
        for cert in ('server', 'wronghost', 'expired'):
            servers[cert] = TlsRedisServer(tmp_path_factory.mktemp(f'redis-tls-{cert}'), pki, cert)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def _raw(server: TlsRedisServer, pki: Pki) -> redis.Redis:
    """redis-py on a TLS server, checking the chain only (the wrong-host and expired servers too)."""
    return redis.Redis(
        host='127.0.0.1',
        port=server.port,
        ssl=True,
        ssl_ca_certs=str(pki.ca),
        ssl_certfile=str(pki.cert('client')),
        ssl_keyfile=str(pki.key('client')),
        ssl_cert_reqs='none',
        ssl_check_hostname=False,
        decode_responses=True,
        socket_timeout=30,
    )


@pytest.fixture
def tls(tls_servers: dict[str, TlsRedisServer], pki: Pki) -> Iterator[redis.Redis]:
    """Raw access to the verified TLS server, flushed."""
    raws = {name: _raw(server, pki) for name, server in tls_servers.items()}
    for raw in raws.values():
        raw.flushall()
    yield raws['server']
    for name, raw in raws.items():
        if name != 'server':
            assert raw.dbsize() == 0, f'something reached the {name} server'
        raw.close()


def _files(pki: Pki) -> dict[str, str]:
    return {
        'tls_ca_file': str(pki.ca),
        'tls_cert_file': str(pki.cert('client')),
        'tls_key_file': str(pki.key('client')),
    }


def _use(c: Any) -> None:
    """Every protocol and a blocking call (dedicated connection) over the client ``c``."""
    topic = c.topic('jobs')
    msg_id = topic.publish({'tile': 'T32UNE'})
    [msg] = topic.claim(count=1, lease=30)
    assert (msg.id, msg.fields) == (msg_id, {'tile': 'T32UNE'})
    assert topic.commit([msg]) == [msg_id]
    assert topic.claim(count=1, block=0.05) == []
    q = c.rsmq('q')
    q.create()
    sent = q.send('hello')
    assert q.receive(vt=30).id == sent
    assert c.stream('events').publish({'kind': 'signup'})
    assert c.ping() is True


def test_a_verified_connection_works(make_client, tls_servers, pki, tls):
    c = make_client(tls_servers['server'].url, **_files(pki))
    _use(c)
    assert tls.llen('rfq:jobs:backlog') == 0
    assert tls.xlen('ferroq:stream:events') == 1
    assert c.url == tls_servers['server'].url


def test_tls_files_as_url_query_parameters(make_client, tls_servers, pki, tls):
    query = '&'.join(f'{k}={v}' for k, v in _files(pki).items())
    url = f'{tls_servers["server"].url}?{query}'
    c = make_client(url)
    _use(c)
    assert tls.xlen('ferroq:stream:events') == 1


def test_tls_files_from_the_environment(make_client, tls_servers, pki, tls, monkeypatch):
    for name, value in _files(pki).items():
        monkeypatch.setenv(f'FERROQ_{name.upper()}', value)
    c = make_client(tls_servers['server'].url)
    _use(c)
    # The variables apply to rediss:// URLs only: a plain URL ignores them.
    plain = make_client('redis://127.0.0.1:1/0')
    assert plain.url == 'redis://127.0.0.1:1/0'


#: How each broken setup fails: (server, options without..., words of the message).
FAILURES = {
    'no CA': ('server', 'tls_ca_file', 'not signed by a trusted CA'),
    'wrong host': ('wronghost', None, 'not valid for this host name'),
    'expired': ('expired', None, 'has expired'),
    'no client certificate': ('server', 'tls_cert_file', 'client certificate'),
}


@pytest.mark.parametrize('case', list(FAILURES))
def test_a_failed_handshake_is_a_typed_error(make_client, tls_servers, pki, tls, case):
    server, drop, words = FAILURES[case]
    options = _files(pki)
    if drop is not None:
        options.pop(drop)
        if drop == 'tls_cert_file':
            options.pop('tls_key_file')
    c = make_client(tls_servers[server].url, connect_timeout=10, **options)
    with pytest.raises(TlsError) as info:
        c.topic('jobs').publish({'a': 'b'})
    assert isinstance(info.value, ConnectionFailed)
    assert words in str(info.value), str(info.value)
    assert tls_servers[server].url in str(info.value)
    # Retried calls fail the same way (nothing half-open is kept).
    with pytest.raises(TlsError):
        c.rsmq('q').create()


def test_insecure_mode_needs_its_own_switch(make_client, tls_servers, pki, tls, monkeypatch):
    url = tls_servers['wronghost'].url
    client_cert = {'tls_cert_file': str(pki.cert('client')), 'tls_key_file': str(pki.key('client'))}
    with pytest.raises(InvalidArgument, match='tls_insecure_skip_verify'):
        make_client(url + '#insecure', **client_cert)
    with pytest.raises(InvalidArgument, match='cannot come from the URL'):
        make_client(url + '?tls_insecure_skip_verify=true', **client_cert)
    with pytest.warns(InsecureTlsWarning, match='OFF'):
        c = make_client(url + '#insecure', tls_insecure_skip_verify=True, **client_cert)
    assert c.topic('jobs').publish({'a': 'b'})
    monkeypatch.setenv('FERROQ_TLS_INSECURE_SKIP_VERIFY', '1')
    with pytest.warns(InsecureTlsWarning):
        c = make_client(tls_servers['expired'].url, **client_cert)
    assert c.topic('jobs').publish({'a': 'b'})
    for server in ('wronghost', 'expired'):
        raw = _raw(tls_servers[server], pki)
        assert raw.llen('rfq:jobs:backlog') == 1
        raw.flushall()
        raw.close()


def test_bad_tls_options_are_refused_before_any_io(make_client, tls_servers, pki, tmp_path):
    url = tls_servers['server'].url
    with pytest.raises(InvalidArgument, match='need a rediss:// URL'):
        make_client('redis://127.0.0.1:1/0', tls_ca_file=str(pki.ca))
    with pytest.raises(InvalidArgument, match='cannot be read') as info:
        make_client(url, tls_ca_file=str(tmp_path / 'missing.pem'))
    assert 'missing.pem' in str(info.value)
    with pytest.raises(InvalidArgument, match='conflict'):
        make_client(url, tls_ca_file=str(pki.ca), tls_insecure_skip_verify=True)
    with pytest.raises(InvalidArgument, match='needs tls_cert_file'):
        make_client(url, tls_ca_file=str(pki.ca), tls_key_file=str(pki.key('client')))
    with pytest.raises(InvalidArgument, match='fragment'):
        make_client(url + '#whatever')


@pytest.mark.parametrize('flags', [[], ['--pure']], ids=['native', 'pure'])
def test_the_cli_over_tls(tls_servers, pki, tls, flags):
    url = tls_servers['server'].url
    options = [f'--{k.replace("_", "-")}={v}' for k, v in _files(pki).items()]
    out = cli('--url', url, *flags, *options, '--json', 'publish', '-t', 'jobs', '-m', '{"n": "1"}')
    assert out.returncode == 0, out.stderr
    [msg_id] = json.loads(out.stdout)
    out = cli('--url', url, *flags, '--json', 'claim', '-t', 'jobs', *options)  # options after the verb too
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])['id'] == msg_id
    env = {f'FERROQ_{k.upper()}': v for k, v in _files(pki).items()}
    out = cli('--url', url, *flags, 'stats', '-t', 'jobs', env=env)
    assert out.returncode == 0, out.stderr
    out = cli('--url', url, *flags, 'publish', '-t', 'jobs', '-m', '{"n": "2"}')  # no CA: the system's roots
    assert out.returncode == 1
    assert 'TLS handshake' in out.stderr and 'not signed by a trusted CA' in out.stderr, out.stderr
    out = cli('--url', tls_servers['expired'].url, *flags, '--tls-insecure-skip-verify', 'publish', '-t', 'jobs',
               '-m', '{"n": "3"}', '--tls-cert-file', str(pki.cert('client')), '--tls-key-file', str(pki.key('client')))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert 'InsecureTlsWarning' in out.stderr
    assert tls.llen('rfq:jobs:nextlog') == 1
    _raw(tls_servers['expired'], pki).flushall()


def test_a_worker_over_tls(make_client, impl, loop_thread, tls_servers, pki, tls):
    c = make_client(tls_servers['server'].url, **_files(pki))
    c.topic('jobs').publish_batch([{'n': str(i)} for i in range(5)])
    seen: list[str] = []

    def handle(msg: ferroq.Message) -> None:
        seen.append(msg.fields['n'])

    async def handle_async(msg: ferroq.Message) -> None:
        seen.append(msg.fields['n'])

    options: dict[str, Any] = {'burst': True, 'poll': 0.05, 'handle_signals': False}
    if impl.endswith('async'):
        worker = ferroq.AsyncWorker(c.wrapped, ['jobs'], handle_async, **options)
        stats = loop_thread.run(worker.run())
    else:
        stats = ferroq.Worker(c, ['jobs'], handle, **options).run()
    assert sorted(seen) == ['0', '1', '2', '3', '4']
    assert stats.committed == 5
    assert tls.dbsize() == 0


def test_the_spark_source_connects_over_tls(tls_servers, pki, tls):
    from ferroq.spark import _conn
    from ferroq.spark._options import parse

    options = {'url': tls_servers['server'].url, 'topic': 'jobs', **_files(pki)}
    plan = parse(options, 'write')
    assert plan.connection.tls_ca_file == str(pki.ca)
    _conn.native(plan.connection).topic('jobs').publish({'n': '1'})
    assert _conn.raw(plan.connection).call('llen', 'rfq:jobs:backlog') == 1
    with pytest.raises(TlsError):
        _conn.raw(parse({**options, 'tls_ca_file': str(pki.cert('client'))}, 'write').connection).call('ping')
    with pytest.raises(InvalidArgument, match='tls_insecure_skip_verify must be true or false'):
        parse({**options, 'tls_insecure_skip_verify': 'maybe'}, 'write')
