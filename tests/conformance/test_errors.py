"""Connection errors, closed clients, passwords, context managers, NOSCRIPT."""

from __future__ import annotations

import time

import pytest

from _checks import bodies
from _redis import PASSWORD, NotRedisServer, free_port
from ferroq.exceptions import CommandTimeout, ConnectionFailed, FerroqError, OutOfMemory, PermissionDenied


def test_closed_client_raises_connection_failed(make_client, redis_url):
    c = make_client(redis_url)
    t = c.topic('jobs')
    t.publish({'n': '0'})
    c.close()
    for call in (c.ping, c.topics, lambda: t.publish({'n': '1'}), lambda: t.claim(), lambda: c.claim(['jobs'])):
        with pytest.raises(ConnectionFailed, match='closed'):
            call()
    c.close()  # closing twice is fine


def test_unreachable_port(make_client):
    port = free_port()
    c = make_client(f'redis://127.0.0.1:{port}/0', connect_timeout=1.0, command_timeout=2.0)
    start = time.monotonic()
    with pytest.raises(ConnectionFailed) as info:
        c.topic('jobs').publish({'n': '0'})
    assert time.monotonic() - start < 5
    assert f'127.0.0.1:{port}' in str(info.value)
    with pytest.raises(ConnectionFailed):
        c.ping()


def test_context_manager_closes(make_client, redis_url):
    with make_client(redis_url) as c:
        assert c.ping() is True
        c.topic('jobs').publish({'n': '0'})
    with pytest.raises(ConnectionFailed):
        c.ping()


def test_context_manager_closes_on_error(make_client, redis_url):
    c = make_client(redis_url)
    with pytest.raises(RuntimeError), c:
        raise RuntimeError('boom')
    with pytest.raises(ConnectionFailed):
        c.ping()


def test_wrong_password_is_permission_denied_and_redacted(make_client, auth_server):
    wrong = 'Wr0ng-Secret-Value'
    url = f'redis://default:{wrong}@127.0.0.1:{auth_server.port}/0'
    c = make_client(url, connect_timeout=2.0)
    with pytest.raises(PermissionDenied) as info:
        c.ping()
    err = info.value
    for text in (str(err), repr(err), repr(c), c.url, ' '.join(map(str, err.args))):
        assert wrong not in text, text
    assert '***' in c.url
    assert '***' in repr(c)
    assert PASSWORD not in repr(c)


def test_password_without_user(make_client, auth_server):
    wrong = 'An0ther-Wrong-One'
    c = make_client(f'redis://:{wrong}@127.0.0.1:{auth_server.port}/0', connect_timeout=2.0)
    with pytest.raises(PermissionDenied) as info:
        c.topic('jobs').publish({'n': '0'})
    assert wrong not in str(info.value) and wrong not in repr(c)


def test_missing_password_is_permission_denied(make_client, auth_server):
    c = make_client(auth_server.url, connect_timeout=2.0)
    with pytest.raises(PermissionDenied):
        c.ping()


def test_right_password_works_and_is_redacted(make_client, auth_server):
    c = make_client(f'redis://default:{PASSWORD}@127.0.0.1:{auth_server.port}/0')
    assert c.ping() is True
    t = c.topic('jobs')
    t.publish({'n': '0'})
    [msg] = t.claim()
    assert t.commit([msg]) == [msg.id]
    assert PASSWORD not in repr(c) and PASSWORD not in c.url
    assert c.url == f'redis://default:***@127.0.0.1:{auth_server.port}/0'


def test_repr_shows_url(client, redis_url):
    assert redis_url in repr(client)
    assert client.url == redis_url


def test_noscript_fallback_after_script_flush(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    r.script_flush()
    t.publish({'n': '1'})  # EVALSHA gets NOSCRIPT: the client loads the script and carries on
    got = t.claim(count=2)
    r.script_flush()
    assert t.commit(got) == [m.id for m in got]
    assert r.dbsize() == 0


def test_server_error_is_mapped(client, r):
    r.set('rfq:jobs:backlog', 'not a list')
    with pytest.raises(FerroqError) as info:
        client.topic('jobs').publish({'n': '0'})
    assert getattr(info.value, 'code', None) == 'WRONGTYPE'


def _kill_clients(r) -> None:
    """Drop every client connection but ours (what a Redis restart or a network blip does)."""
    r.client_kill_filter(_type='normal', skipme=True)


def test_publish_and_commit_survive_a_dropped_connection(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})  # connected
    _kill_clients(r)
    t.publish({'n': '1'})  # retried once on a new connection: the call's record makes that safe
    got = t.claim(count=2)
    assert [m.fields['n'] for m in got] == ['0', '1']
    _kill_clients(r)
    assert t.commit(got) == [m.id for m in got]
    # After a repeat, the record of the repeated publish is left to expire: the first attempt could still
    # arrive, and must find it.
    record = f'rfq:jobs:published:{got[1].id}'
    assert set(r.keys('*')) <= {record}
    ttl = r.pttl(record)
    assert ttl == -2 or 0 < ttl <= 120_000, ttl  # -2: no such key (no repeat was needed)


def test_client_reconnects_after_a_drop(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    _kill_clients(r)
    try:
        t.claim()
    except ConnectionFailed:
        pass  # a claim is not retried: its outcome is unknown, and a harvest recovers it
    for _ in range(2):
        try:
            assert client.ping() is True
            break
        except ConnectionFailed:
            continue
    assert client.ping() is True
    assert t.stats().backlog + t.stats().nextlog == 1


def test_out_of_memory(client, r):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    r.config_set('maxmemory', '1')  # far below what the server uses: every write is refused (noeviction)
    try:
        with pytest.raises(OutOfMemory):
            t.publish({'n': '1'})
        with pytest.raises(OutOfMemory):
            t.publish_batch([{'n': '2'}, {'n': '3'}])
    finally:
        r.config_set('maxmemory', '0')
    assert t.stats().backlog == 1
    assert bodies(t.claim(count=5)) == ['0']


def assert_times_out(r, call):
    """``call`` raises CommandTimeout well before a 1 s pause of Redis ends (the clients' command_timeout: 0.3 s)."""
    r.execute_command('CLIENT', 'PAUSE', '1000', 'ALL')  # Redis answers nobody else for 1 s
    start = time.monotonic()
    try:
        with pytest.raises(CommandTimeout):
            call()
        assert time.monotonic() - start < 0.95
    finally:
        r.execute_command('CLIENT', 'UNPAUSE')


def test_command_timeout(make_client, redis_url, r):
    c = make_client(redis_url, command_timeout=0.3)
    t = c.topic('jobs')
    t.publish({'n': '0'})
    assert_times_out(r, t.stats)
    # The late reply must not be taken for the answer to a later call.
    for _ in range(3):
        try:
            assert bodies(t.claim()) == ['0']
            break
        except ConnectionFailed:
            continue  # a client may drop the connection that timed out and tell the caller once
    else:
        pytest.fail('the client did not recover after a command timeout')
    assert t.stats().nextlog == 1


def test_ping_obeys_command_timeout(make_client, redis_url, r):
    c = make_client(redis_url, command_timeout=0.3)
    assert c.ping() is True
    assert_times_out(r, c.ping)


@pytest.mark.parametrize(
    'reply',
    [b'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n', b'SSH-2.0-OpenSSH_9.2\r\n'],
    ids=['http', 'ssh'],
)
def test_a_server_that_is_not_redis_is_one_clear_line(make_client, reply):
    server = NotRedisServer(reply)
    try:
        url = server.url
        c = make_client(url, connect_timeout=5.0, command_timeout=5.0)
        for call in (lambda: c.topic('jobs').publish({'n': '0'}), c.ping):
            with pytest.raises(ConnectionFailed) as info:
                call()
            assert str(info.value) == f'the server at {url} does not speak the Redis protocol (not a Redis server?)'
    finally:
        server.close()
