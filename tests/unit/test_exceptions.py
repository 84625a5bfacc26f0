"""The exception tree, shared by both clients."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ferroq
import ferroq.pure
from _redis import NotRedisServer
from ferroq import exceptions as ex
from ferroq.pure._errors import unwrap_script_error
from ferroq.pure._server import check_server_version


@pytest.mark.parametrize(
    ('cls', 'bases'),
    [
        (ex.ConnectionFailed, (ex.FerroqError,)),
        (ex.TlsError, (ex.ConnectionFailed, ex.FerroqError)),
        (ex.CommandTimeout, (ex.FerroqError,)),
        (ex.ServerUnavailable, (ex.FerroqError,)),
        (ex.UnsupportedServer, (ex.FerroqError,)),
        (ex.InvalidArgument, (ex.FerroqError, ValueError)),
        (ex.InvalidName, (ex.InvalidArgument, ValueError)),
        (ex.InvalidMessage, (ex.InvalidArgument, ValueError)),
        (ex.MessageTooLarge, (ex.InvalidMessage, ValueError)),
        (ex.BatchError, (ex.InvalidArgument, ValueError)),
        (ex.QueueNotFound, (ex.FerroqError,)),
        (ex.QueueExists, (ex.FerroqError,)),
        (ex.LeaseLost, (ex.FerroqError,)),
        (ex.PermissionDenied, (ex.FerroqError,)),
        (ex.OutOfMemory, (ex.FerroqError,)),
        (ex.ProtocolError, (ex.FerroqError,)),
        (ex.ServerError, (ex.FerroqError,)),
    ],
)
def test_tree(cls, bases):
    for base in bases:
        assert issubclass(cls, base)
    assert issubclass(cls, Exception)
    assert getattr(ferroq, cls.__name__) is cls


def test_io_errors_are_not_value_errors():
    for cls in (ex.ConnectionFailed, ex.CommandTimeout, ex.PermissionDenied, ex.ServerError, ex.OutOfMemory):
        assert not issubclass(cls, ValueError)


def test_batch_error_carries_causes():
    cause = ex.InvalidMessage('bad')
    err = ex.BatchError('1 of 2 messages are invalid; nothing was written', errors=[(1, cause)])
    assert err.errors == [(1, cause)]
    assert ex.BatchError('x').errors == []


def test_server_error_code():
    assert ex.ServerError('WRONGTYPE x', code='WRONGTYPE').code == 'WRONGTYPE'
    assert ex.ServerError('x').code == 'ERR'


@pytest.mark.parametrize('client_cls', [ferroq.Client, ferroq.pure.Client])
def test_clients_raise_the_python_classes_themselves(client_cls):
    c = client_cls('redis://127.0.0.1:1/0')  # nothing is sent: validation comes first
    try:
        with pytest.raises(ex.InvalidName) as info:
            c.topic('no spaces')
        assert type(info.value) is ex.InvalidName
        with pytest.raises(ex.InvalidArgument) as info2:
            c.topic('ok').claim(count=0)
        assert type(info2.value) is ex.InvalidArgument
        with pytest.raises(ex.BatchError) as info3:
            c.topic('ok').publish_batch([{'a': 'b'}, {}])
        assert type(info3.value) is ex.BatchError
        [(index, cause)] = info3.value.errors
        assert index == 1 and type(cause) is ex.InvalidMessage
    finally:
        c.close()


def test_validation_messages_are_identical():
    native, pure = ferroq.Client('redis://127.0.0.1:1/0'), ferroq.pure.Client('redis://127.0.0.1:1/0')
    try:
        cases = [
            lambda c: c.topic('a:b'),
            lambda c: c.topic('ok').publish({}),
            lambda c: c.topic('ok').publish({'a': 1}),
            lambda c: c.topic('ok').publish_batch([{'a': 'b'}, {'a': {'b': 'c'}}]),
            lambda c: c.topic('ok').claim(count=0),
            lambda c: c.topic('ok').claim(lease=0),
            lambda c: c.topic('ok').claim(block=-1),
            lambda c: c.topic('ok').inspect('other'),
            lambda c: c.claim('ok'),
        ]
        for case in cases:
            errors = []
            for c in (native, pure):
                with pytest.raises(ex.FerroqError) as info:
                    case(c)
                errors.append((type(info.value), str(info.value)))
            assert errors[0] == errors[1]
    finally:
        native.close()
        pure.close()


def test_batch_error_names_the_first_bad_items():
    causes = [(i, ex.InvalidMessage(f'bad {i}')) for i in (2, 5, 7, 9, 11)]
    err = ex.BatchError('5 of 12 messages are invalid; nothing was written', errors=causes)
    assert str(err) == '5 of 12 messages are invalid; nothing was written: [2] bad 2; [5] bad 5; [7] bad 7; and 2 more'
    one = ex.BatchError('1 of 2 messages are invalid; nothing was written', errors=causes[:1])
    assert str(one) == '1 of 2 messages are invalid; nothing was written: [2] bad 2'


@pytest.mark.parametrize('client_cls', [ferroq.Client, ferroq.pure.Client])
def test_clients_batch_errors_name_the_bad_items(client_cls):
    c = client_cls('redis://127.0.0.1:1/0')  # nothing is sent: validation comes first
    try:
        with pytest.raises(ex.BatchError) as info:
            c.topic('t').publish_batch([{'a': 'b'}, {'a': 1}, {}])
        assert str(info.value) == (
            '2 of 3 messages are invalid; nothing was written: '
            "[1] message field 'a' must be a str, got int; [2] a message must have at least one field"
        )
    finally:
        c.close()


def test_not_a_redis_server_without_hiredis():
    """redis-py's own parser words a bad reply differently from hiredis: the pure client's error is the same."""
    server = NotRedisServer(b'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
    code = (
        "import sys; sys.modules['hiredis'] = None\n"  # as if hiredis were not installed
        'import redis.utils, ferroq.pure\n'
        'assert not redis.utils.HIREDIS_AVAILABLE\n'
        f"c = ferroq.pure.Client('{server.url}')\n"
        'try:\n'
        '    c.topics()\n'
        'except ferroq.ConnectionFailed as exc:\n'
        '    print(exc)\n'
    )
    try:
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60, check=False)
    finally:
        server.close()
    assert out.returncode == 0, out.stderr
    assert out.stdout == f'the server at {server.url} does not speak the Redis protocol (not a Redis server?)\n'


_CALL = (
    'Error running script (call to f_aa19): @user_script:1: WRONGTYPE Operation against a key holding the wrong kind'
)
_RAISED = "Error running script (call to f_ee5b): @user_script:9: @user_script: 9: -OOM command not allowed when used memory > 'maxmemory'."


@pytest.mark.parametrize(
    ('text', 'expected'),
    [
        (_CALL, ('WRONGTYPE', 'WRONGTYPE Operation against a key holding the wrong kind')),
        (_RAISED, ('OOM', "OOM command not allowed when used memory > 'maxmemory'.")),
        (
            f'ERR {_RAISED}'.replace('-OOM', '-NOPERM'),
            ('NOPERM', "NOPERM command not allowed when used memory > 'maxmemory'."),
        ),
        ('Error running script (call to f_8290): @user_script:1: user_script:1: boom', None),
        ('Error running script (call to f_4f59): @user_script:1: @user_script: 1: Unknown Redis command called', None),
        ('wrong number of arguments', None),
    ],
)
def test_redis_6_2_script_errors_are_unwrapped(text, expected):
    """Redis 6.2 wraps an error raised in a script in ``ERR Error running script``; the code inside counts
    (the native core's twin is tested in src/errors.rs)."""
    assert unwrap_script_error(text) == expected


def test_old_server_versions_are_refused():
    url = 'redis://127.0.0.1:1/0'
    for info in ({'redis_version': '6.2.0'}, {'redis_version': '7.0.15'}, {'redis_version': 7.2}, {}, None):
        check_server_version(url, info)
    with pytest.raises(ex.UnsupportedServer, match=r'is Redis 6\.0\.16: ferroq needs Redis 6\.2 or later'):
        check_server_version(url, {'redis_version': '6.0.16'})
    valkey = {'redis_version': '6.0.0', 'server_name': 'valkey', 'valkey_version': '7.0.0'}
    with pytest.raises(ex.UnsupportedServer, match='is valkey 7.0.0: '):
        check_server_version(url, valkey)
