"""RSMQ's validation rules: bad input raises a typed error before any command reaches Redis."""

from __future__ import annotations

import math

import pytest

from _redis import no_io
from ferroq._limits import MAX_SHOWN_CHARS
from ferroq.exceptions import BatchError, InvalidArgument, InvalidMessage, InvalidName, MessageTooLarge

BAD_QNAMES = ['', 'a:b', 'a.b', 'a b', 'é', 'x' * 161, 'a*', '{t}', 'tab\t', None, 1, b'q']
GOOD_QNAMES = ['a', 'A-z_09', 'x' * 160]
BAD_NS = ['', 'a b', 'a*', 'x' * 65, '{t}', None, 3]
BAD_STORED_SECONDS = [-1, 10_000_000, 1.5, 30.0, '30', True]
BAD_CALL_SECONDS = [-1, -0.001, 10_000_000.5, math.nan, math.inf, '1', True]
BAD_MAXSIZE = [0, 1023, 65537, 65565, -2, 2048.0, '2048', True, None]
BAD_IDS = ['', 'a' * 31, 'a' * 33, 'a' * 31 + '-', 'a' * 31 + ' ', None, 7, b'a' * 32]


@pytest.fixture
def q(client):
    queue = client.rsmq('jobs')
    queue.create(maxsize=1024)
    return queue


@pytest.mark.parametrize('name', BAD_QNAMES)
def test_bad_queue_names(client, r, name):
    with no_io(r), pytest.raises(InvalidName) as info:
        client.rsmq(name)
    assert str(info.value) == f'invalid RSMQ queue name {name!r}: use 1-160 characters from A-Z a-z 0-9 _ -'


@pytest.mark.parametrize('name', GOOD_QNAMES)
def test_good_queue_names(client, r, name):
    q = client.rsmq(name)
    q.create()
    assert client.rsmq_queues() == [name]
    assert r.exists(f'rsmq:{name}:Q')


@pytest.mark.parametrize('ns', BAD_NS)
def test_bad_namespaces(client, r, ns):
    with no_io(r), pytest.raises(InvalidName, match='invalid RSMQ namespace'):
        client.rsmq('jobs', ns=ns)
    with no_io(r), pytest.raises(InvalidName, match='invalid RSMQ namespace'):
        client.rsmq_queues(ns=ns)


def test_realtime_must_be_bool(client, r):
    with no_io(r), pytest.raises(InvalidArgument, match='realtime must be a bool'):
        client.rsmq('jobs', realtime=1)


@pytest.mark.parametrize('value', BAD_STORED_SECONDS)
@pytest.mark.parametrize('name', ['vt', 'delay'])
def test_stored_vt_and_delay_are_integer_seconds(client, r, name, value):
    with no_io(r), pytest.raises(InvalidArgument) as info:
        client.rsmq('jobs').create(**{name: value})
    assert str(info.value) == f'{name} must be an int from 0 to 9999999 (seconds), got {value!r}'
    client.rsmq('jobs').create()
    with no_io(r), pytest.raises(InvalidArgument):
        client.rsmq('jobs').set_attributes(**{name: value})


@pytest.mark.parametrize('value', BAD_MAXSIZE)
def test_maxsize_rule(client, r, value):
    with no_io(r), pytest.raises(InvalidArgument) as info:
        client.rsmq('jobs').create(maxsize=value)
    assert str(info.value) == f'maxsize must be an int from 1024 to 65536, or -1 for unlimited, got {value!r}'


@pytest.mark.parametrize('value', BAD_CALL_SECONDS)
def test_per_call_seconds(q, r, value):
    for call in (
        lambda: q.send('x', delay=value),
        lambda: q.send_batch(['x'], delay=value),
        lambda: q.receive(vt=value),
        lambda: q.receive_batch(2, vt=value),
        lambda: q.change_visibility('a' * 32, value),
    ):
        with no_io(r), pytest.raises(InvalidArgument, match='must be a number of seconds from 0 to 9999999'):
            call()


@pytest.mark.parametrize('count', [0, -1, 10_001, 1.0, True, None])
def test_counts(q, r, count):
    for call in (lambda: q.receive_batch(count), lambda: q.pop_batch(count)):
        with no_io(r), pytest.raises(InvalidArgument, match='count must be an int'):
            call()


@pytest.mark.parametrize('block', [-1, math.nan, '1', True])
def test_block(q, r, block):
    with no_io(r), pytest.raises(InvalidArgument, match='block must be'):
        q.receive(block=block)


@pytest.mark.parametrize('message', [None, 1, b'x', {'a': 'b'}, ['x']])
def test_messages_must_be_str(q, r, message):
    with no_io(r), pytest.raises(InvalidMessage) as info:
        q.send(message)
    assert str(info.value) == f'an RSMQ message must be a str, got {type(message).__name__}'


def test_lone_surrogate(q, r):
    with no_io(r), pytest.raises(InvalidMessage, match='lone surrogate'):
        q.send('a\ud800b')


def test_client_byte_limit(make_client, redis_url, r):
    queue = make_client(redis_url, max_message_bytes=10).rsmq('jobs')
    with no_io(r), pytest.raises(MessageTooLarge, match='message is 11 bytes, more than max_message_bytes=10'):
        queue.send('x' * 11)


def test_queue_maxsize_in_utf16_units(q, r):
    before = r.hgetall('rsmq:jobs:Q')
    with pytest.raises(MessageTooLarge) as info:
        q.send('😀' * 513)
    assert str(info.value) == "message is 1026 characters (UTF-16 code units), more than the queue's maxsize 1024"
    with pytest.raises(MessageTooLarge):
        q.send('x' * 1025)
    assert r.hgetall('rsmq:jobs:Q') == before
    assert r.exists('rsmq:jobs') == 0


def test_batch_lists_every_bad_message(q, r):
    with no_io(r), pytest.raises(BatchError) as info:
        q.send_batch(['ok', 1, 'ok', None])
    assert str(info.value) == (
        '2 of 4 messages are invalid; nothing was written: '
        '[1] an RSMQ message must be a str, got int; [3] an RSMQ message must be a str, got NoneType'
    )
    assert [i for i, _ in info.value.errors] == [1, 3]
    assert all(isinstance(e, InvalidMessage) for _, e in info.value.errors)


@pytest.mark.parametrize('chunk_size', [1000, 2])
def test_batch_over_maxsize_writes_nothing(make_client, redis_url, r, chunk_size):
    queue = make_client(redis_url, chunk_size=chunk_size).rsmq('jobs')
    queue.create(maxsize=1024)
    before = r.hgetall('rsmq:jobs:Q')
    with pytest.raises(BatchError) as info:
        queue.send_batch(['a', 'x' * 2000, 'b', 'c', 'y' * 1025])
    assert [i for i, _ in info.value.errors] == [1, 4]
    assert all(isinstance(e, MessageTooLarge) for _, e in info.value.errors)
    assert r.hgetall('rsmq:jobs:Q') == before
    assert r.exists('rsmq:jobs') == 0


@pytest.mark.parametrize('items', ['abc', b'abc', {'a': 'b'}, 5])
def test_batches_need_iterables(q, r, items):
    with no_io(r), pytest.raises(InvalidArgument):
        q.send_batch(items)
    with no_io(r), pytest.raises(InvalidArgument):
        q.delete_batch(items)


@pytest.mark.parametrize('msg_id', BAD_IDS)
def test_bad_ids(q, r, msg_id):
    with no_io(r), pytest.raises(InvalidArgument) as info:
        q.delete(msg_id)
    assert str(info.value) == f'invalid RSMQ message id {msg_id!r}: expected 32 characters from A-Z a-z 0-9 :'
    with no_io(r), pytest.raises(InvalidArgument):
        q.delete_batch(['a' * 32, msg_id])
    with no_io(r), pytest.raises(InvalidArgument):
        q.change_visibility(msg_id, 1)


def test_a_long_bad_value_is_shown_cut(q, r):
    # A list of ids passed for one id: the error shows the start of its repr, not all of it.
    ids = ['a' * 32] * 1000
    with no_io(r), pytest.raises(InvalidArgument) as info:
        q.delete(ids)
    shown = repr(ids)[: MAX_SHOWN_CHARS - 3] + '...'
    assert str(info.value) == f'invalid RSMQ message id {shown}: expected 32 characters from A-Z a-z 0-9 :'
    with no_io(r), pytest.raises(InvalidArgument) as info:
        q.change_visibility('x' * 500, 1)
    assert f"'{'x' * (MAX_SHOWN_CHARS - 4)}...:" in str(info.value)


def test_ids_with_colons_are_valid(q):
    assert q.delete('ab:' * 10 + 'xy') is False


def test_set_attributes_needs_something(q, r):
    with no_io(r), pytest.raises(InvalidArgument) as info:
        q.set_attributes()
    assert str(info.value) == 'set_attributes needs at least one of vt, delay, maxsize, max_receives, dead_letter'


@pytest.mark.parametrize('kwargs', [{'max_receives': 3}, {'dead_letter': 'dead'}])
def test_dead_letter_pairing(client, r, kwargs):
    with no_io(r), pytest.raises(InvalidArgument) as info:
        client.rsmq('jobs').create(**kwargs)
    assert str(info.value) == (
        'max_receives and dead_letter go together: give both, or max_receives=0 alone to remove the dead-letter queue'
    )
    client.rsmq('jobs').create()
    for bad in (kwargs, {'max_receives': 0, 'dead_letter': 'dead'}):
        with no_io(r), pytest.raises(InvalidArgument, match='max_receives and dead_letter go together'):
            client.rsmq('jobs').set_attributes(**bad)
    with no_io(r), pytest.raises(InvalidArgument, match=r'max_receives must be an int >= 0 \(0 removes'):
        client.rsmq('jobs').set_attributes(max_receives=-1)


@pytest.mark.parametrize('value', [0, -1, 1.5, True, '3'])
def test_max_receives_rule(client, r, value):
    with no_io(r), pytest.raises(InvalidArgument, match='max_receives must be an int >= 1'):
        client.rsmq('jobs').create(max_receives=value, dead_letter='dead')


def test_dead_letter_names(client, r):
    with no_io(r), pytest.raises(InvalidName):
        client.rsmq('jobs').create(max_receives=2, dead_letter='a.b')
    with no_io(r), pytest.raises(InvalidArgument, match='its own dead-letter queue'):
        client.rsmq('jobs').create(max_receives=2, dead_letter='jobs')
