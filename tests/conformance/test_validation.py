"""Bad input is refused before any I/O, with the same exception class in every client."""

from __future__ import annotations

import math

import pytest

from _redis import assert_refused, no_io
from ferroq.exceptions import (
    BatchError,
    FerroqError,
    InvalidArgument,
    InvalidMessage,
    InvalidName,
    MessageTooLarge,
)
from ferroq.types import Message

BAD_NAMES = ['', 'a:b', 'a b', 'a*', 'a?', '[ab]', '{tag}', 'x' * 129, 'tab\t', 'new\nline', 'é', 'a/b']
GOOD_NAMES = ['a', 'A-Z_0.9', 'x' * 128, 'ndvi.T32UNE_2024-01']
BAD_MESSAGES = [
    {},
    {'a': {'b': 'c'}},
    {'a': ['b']},
    {'a': 1},
    {'a': 1.5},
    {'a': None},
    {'a': True},
    {1: 'a'},
    {'': 'x'},
    {'a': b'x'},
    {b'a': 'x'},
    'a=b',
    b'a=b',
    [('a', 'b')],
    None,
    42,
]


@pytest.mark.parametrize('name', BAD_NAMES)
def test_bad_topic_names(client, r, name):
    with no_io(r), pytest.raises(InvalidName) as info:
        client.topic(name)
    assert repr(name) in str(info.value)


@pytest.mark.parametrize('name', [None, 1, b'abc', ['a']])
def test_non_str_topic_names(client, r, name):
    with no_io(r), pytest.raises(InvalidArgument):
        client.topic(name)


@pytest.mark.parametrize('name', GOOD_NAMES)
def test_good_topic_names(client, r, name):
    t = client.topic(name)
    assert t.name == name
    msg_id = t.publish({'n': '0'})
    assert r.exists(f'rfq:{name}:backlog', f'rfq:{name}:message:{msg_id}') == 2


@pytest.mark.parametrize('message', BAD_MESSAGES, ids=repr)
def test_bad_messages(client, r, message):
    t = client.topic('jobs')
    with no_io(r), pytest.raises(InvalidMessage):
        t.publish(message)


def test_batch_with_one_bad_item_writes_nothing(client, r):
    t = client.topic('jobs')
    t.publish({'n': 'existing'})
    with no_io(r), pytest.raises(BatchError) as info:
        t.publish_batch([{'n': '0'}, {'n': 1}, {'n': '2'}, {}])
    err = info.value
    assert isinstance(err, InvalidArgument)
    assert [i for i, _ in err.errors] == [1, 3]
    assert all(isinstance(e, InvalidMessage) for _, e in err.errors)
    assert '2 of 4' in str(err)
    assert 'nothing was written' in str(err)


def test_batch_with_too_large_item(make_client, redis_url, r):
    t = make_client(redis_url, max_message_bytes=10).topic('jobs')
    with no_io(r), pytest.raises(BatchError) as info:
        t.publish_batch([{'a': 'x'}, {'a': 'x' * 10}])
    assert [(i, type(e)) for i, e in info.value.errors] == [(1, MessageTooLarge)]


@pytest.mark.parametrize('batch', ['abc', b'abc', 42, None, {'a': 'b'}])
def test_batch_that_is_not_a_list_of_messages(client, r, batch):
    t = client.topic('jobs')
    with no_io(r), pytest.raises(InvalidArgument):
        t.publish_batch(batch)


def test_message_too_large(make_client, redis_url, r):
    t = make_client(redis_url, max_message_bytes=10).topic('jobs')
    with no_io(r):
        with pytest.raises(MessageTooLarge):
            t.publish({'a': 'x' * 10})  # 11 bytes
        with pytest.raises(MessageTooLarge):
            t.publish({'a': 'é' * 5})  # 1 + 10 bytes in UTF-8
        with pytest.raises(MessageTooLarge):
            t.publish({'abcdef': 'xyzuv'})
    t.publish({'a': 'x' * 9})  # exactly 10 bytes
    t.publish({'é': 'é' * 4})
    assert r.llen('rfq:jobs:backlog') == 2


def test_message_too_large_is_invalid_message_and_value_error():
    assert issubclass(MessageTooLarge, InvalidMessage)
    assert issubclass(InvalidArgument, ValueError)
    assert issubclass(BatchError, ValueError)
    assert issubclass(InvalidName, ValueError)


BAD_COUNTS = [0, -1, 10_001, True, False, 1.5, '1', None]
BAD_LEASES = [0, -1, 0.0009, 604_801, math.nan, math.inf, '1', None]


@pytest.mark.parametrize(('argument', 'value'), [('count', v) for v in BAD_COUNTS] + [('lease', v) for v in BAD_LEASES])
def test_bad_count_or_lease(client, r, argument, value):
    """Every call that takes the argument refuses the value."""
    t = client.topic('jobs')
    t.publish({'n': '0'})
    bad = {argument: value}
    calls = [lambda: t.claim(**bad), lambda: client.claim(['jobs'], **bad)]
    if argument == 'count':
        calls.append(lambda: t.inspect(**bad))
    else:
        calls += [lambda: t.extend(['0' * 32], **bad), lambda: t.harvest(**bad)]
    assert_refused(r, *calls)


def test_lease_limits_accepted(client):
    t = client.topic('jobs')
    t.publish_batch([{'n': '0'}, {'n': '1'}])
    assert len(t.claim(lease=0.001)) == 1
    assert len(t.claim(lease=604_800)) == 1


@pytest.mark.parametrize('block', [-1, -0.001, math.nan, math.inf, 604_801, '1'])
def test_bad_block(client, r, block):
    t = client.topic('jobs')
    with no_io(r):
        with pytest.raises(InvalidArgument):
            t.claim(block=block)
        with pytest.raises(InvalidArgument):
            client.claim(['jobs', 'other'], block=block)


@pytest.mark.parametrize('flag', [1, 0, 'yes', None, 1.0])
def test_bad_flags(client, r, flag):
    t = client.topic('jobs')
    with no_io(r):
        with pytest.raises(InvalidArgument, match='front must be a bool'):
            t.publish({'n': '0'}, front=flag)
        with pytest.raises(InvalidArgument, match='front must be a bool'):
            t.publish_batch([{'n': '0'}], front=flag)
        with pytest.raises(InvalidArgument, match='all must be a bool'):
            t.harvest(all=flag)


@pytest.mark.parametrize('queue', ['', 'BACKLOG', 'other', None, 1])
def test_bad_queue(client, r, queue):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    with no_io(r):
        with pytest.raises(InvalidArgument):
            t.inspect(queue)
        with pytest.raises(InvalidArgument):
            t.purge(queue)


@pytest.mark.parametrize('start', [-1, 1.5, '0', None])
def test_bad_inspect_start(client, r, start):
    with no_io(r), pytest.raises(InvalidArgument):
        client.topic('jobs').inspect('backlog', start=start)


@pytest.mark.parametrize('msg_id', ['', 'a b', ' ', 'x' * 129, 'a\n', None, 12])
def test_bad_ids(client, r, msg_id):
    t = client.topic('jobs')
    t.publish({'n': '0'})
    with no_io(r):
        for op in (t.commit, t.extend, t.release):
            with pytest.raises(InvalidArgument):
                op([msg_id])
        with pytest.raises(InvalidArgument):
            t.peek(msg_id)


def test_message_of_another_topic(client, r):
    client.topic('a').publish({'n': '0'})
    [msg] = client.topic('a').claim()
    other = client.topic('b')
    with no_io(r):
        for op in (other.commit, other.extend, other.release):
            with pytest.raises(InvalidArgument):
                op([msg])
    assert client.topic('a').commit([msg]) == [msg.id]


def test_client_commit_takes_messages_only(client, r):
    with no_io(r), pytest.raises(InvalidArgument):
        client.commit(['0' * 32])


def test_forged_message_with_bad_topic(client, r):
    with no_io(r), pytest.raises(InvalidArgument):
        client.commit([Message('0' * 32, 'bad:topic', {'a': 'b'}, 1)])


@pytest.mark.parametrize('topics', ['jobs', b'jobs', [], (), None, ['jobs', 'bad:name'], ['jobs', 3]])
def test_bad_claim_topics(client, r, topics):
    with no_io(r), pytest.raises(InvalidArgument):
        client.claim(topics)


def test_bad_claim_topic_name_is_invalid_name(client, r):
    with no_io(r), pytest.raises(InvalidName):
        client.claim(['jobs', 'bad name'])


@pytest.mark.parametrize(
    'options',
    [
        {'pool_size': 0},
        {'pool_size': 65},
        {'chunk_size': 0},
        {'chunk_size': 10_001},
        {'command_timeout': 0},
        {'connect_timeout': -1},
        {'max_message_bytes': 0},
    ],
    ids=repr,
)
def test_bad_client_options(make_client, redis_url, options):
    with pytest.raises(InvalidArgument):
        make_client(redis_url, **options)


@pytest.mark.parametrize('url', ['http://127.0.0.1:1/0', 'localhost:6379', ''])
def test_bad_url(make_client, url):
    with pytest.raises(InvalidArgument):
        make_client(url)


def test_errors_are_ferroq_errors(client):
    with pytest.raises(FerroqError):
        client.topic('bad name')
    with pytest.raises(ValueError):
        client.topic('jobs').claim(count=0)


# --- publish_arrow / send_arrow ---------------------------------------------------------------------------

ARROW_BAD = [
    (
        {'dedup_key': ''},
        "dedup_key must be None or a non-empty str of at most 200 characters, got ''",
    ),
    (
        {'dedup_key': 'k' * 201},
        f"dedup_key must be None or a non-empty str of at most 200 characters, got '{'k' * 201}'",
    ),
    ({'dedup_key': 7}, 'dedup_key must be None or a non-empty str of at most 200 characters, got 7'),
    ({'dedup_ttl': 0}, 'dedup_ttl must be a number of seconds > 0 and at most 2592000 (30 days), got 0'),
    ({'dedup_ttl': -1.5}, 'dedup_ttl must be a number of seconds > 0 and at most 2592000 (30 days), got -1.5'),
    (
        {'dedup_ttl': 2592000.5},
        'dedup_ttl must be a number of seconds > 0 and at most 2592000 (30 days), got 2592000.5',
    ),
    ({'dedup_ttl': True}, 'dedup_ttl must be a number of seconds > 0 and at most 2592000 (30 days), got True'),
    ({'dedup_ttl': math.nan}, 'dedup_ttl must be a number of seconds > 0 and at most 2592000 (30 days), got nan'),
    ({'dedup_ttl': '60'}, "dedup_ttl must be a number of seconds > 0 and at most 2592000 (30 days), got '60'"),
    ({'value_column': ''}, "value_column must be None or a column name (a non-empty str), got ''"),
    ({'value_column': 1}, 'value_column must be None or a column name (a non-empty str), got 1'),
]


def _arrow_targets(client):
    return {
        'topic': client.topic('t').publish_arrow,
        'rsmq': client.rsmq('q').send_arrow,
        'stream': client.stream('s').publish_arrow,
    }


@pytest.mark.parametrize('target', ['topic', 'rsmq', 'stream'])
@pytest.mark.parametrize(('kwargs', 'message'), ARROW_BAD)
def test_bad_arrow_arguments(client, r, target, kwargs, message):
    pa = pytest.importorskip('pyarrow')
    data = pa.table({'a': ['x']})
    with no_io(r), pytest.raises(InvalidArgument) as info:
        _arrow_targets(client)[target](data, **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize('target', ['topic', 'rsmq', 'stream'])
def test_arrow_data_must_be_arrow(client, r, target):
    with no_io(r), pytest.raises(InvalidArgument) as info:
        _arrow_targets(client)[target]([{'a': 'x'}])
    assert str(info.value) == (
        'data must be a pyarrow RecordBatch, Table or RecordBatchReader, or an object with __arrow_c_stream__ '
        'or __arrow_c_array__ (the Arrow PyCapsule interface), got list'
    )


def test_bad_arrow_columns(client, r):
    pa = pytest.importorskip('pyarrow')
    t = client.topic('t')
    data = pa.table({'a': ['x'], 'n': [1], 'l': [[1]]})
    cases = [
        ({'id_column': ''}, "id_column must be None or a column name (a non-empty str), got ''"),
        ({'id_column': 'zz'}, "id_column 'zz' is not a column of the data (columns: 'a', 'n', 'l')"),
        ({'id_column': 'l'}, "id_column 'l' must hold scalar values (not nested, not null-typed)"),
        ({'value_column': 'n'}, "value_column 'n' must be a string or binary column"),
    ]
    for kwargs, message in cases:
        with no_io(r), pytest.raises(InvalidArgument) as info:
            t.publish_arrow(data, **kwargs)
        assert str(info.value) == message
    with no_io(r), pytest.raises(InvalidArgument) as info:
        client.rsmq('q').send_arrow(data, value_column='n')
    assert str(info.value) == "value_column 'n' must be a string column (RSMQ messages are text)"
    with no_io(r), pytest.raises(InvalidArgument) as info:
        client.stream('s').publish_arrow(data, maxlen=-1)
    assert str(info.value) == 'maxlen must be None or an int >= 0, got -1'
    twice = pa.Table.from_arrays([pa.array(['x']), pa.array(['y'])], names=['a', 'a'])
    for publish in _arrow_targets(client).values():
        with no_io(r), pytest.raises(InvalidArgument) as info:
            publish(twice)
        assert str(info.value) == "column name 'a' appears twice: message field names must be unique"
    interval = pa.array([pa.scalar((1, 2, 3), pa.month_day_nano_interval())])
    with no_io(r), pytest.raises(InvalidArgument) as info:
        t.publish_arrow(pa.table({'i': interval}))
    assert str(info.value) == (
        "column 'i' holds interval values, which cannot be published (see the string forms in docs/protocol.md)"
    )
