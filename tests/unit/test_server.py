"""URL resolution, redaction and the embedded redis-server (in a temp FERROQ_HOME)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import ferroq
import ferroq.pure
from ferroq import server
from ferroq.exceptions import ServerUnavailable


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
    pid = status['pid']
    assert isinstance(pid, int)
    os.kill(pid, 0)  # alive
    assert sock.stat().st_mode & 0o077 == 0  # only the user may connect
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
def test_embedded_without_redis_server(embedded_home, monkeypatch):
    monkeypatch.setenv('PATH', str(embedded_home))  # no redis-server there
    with pytest.raises(ServerUnavailable, match='redis-server was not found on PATH'):
        server.ensure_embedded()
