"""Streams validation: bad input raises a typed error before any command reaches Redis."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from _redis import assert_refused, no_io
from ferroq.exceptions import BatchError, InvalidArgument, InvalidMessage, InvalidName, MessageTooLarge
from ferroq.protocol import keys
from ferroq.types import StreamEntry

KEY = keys.stream_key('ev')
AWARE = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
NAIVE = datetime(2024, 5, 1, 12, 0)

BAD_STREAM_NAMES = ['', 'a:b', 'a b', 'é', 'x' * 129, 'a*', '{t}', None, 1, b'ev']
BAD_GROUP_NAMES = ['', 'a b', 'é', 'x' * 129, 'tab\t', None, 1, b'g']
BAD_COUNTS = [0, -1, 10_001, True, 1.0, '5', None]
BAD_SECONDS = [-1, -0.001, math.nan, math.inf, True, '1']
BAD_RANGE_IDS = ['', '$', 'abc', '1-', '-1', '1-2-3', '(', '(-', '(+', '((1', '1.5', ' 1', '1' * 21, str(2**64)]
BAD_RANGE_IDS += [f'1-{2**64}', None, 5, NAIVE]
BAD_POSITIONS = [
    '',
    '-',
    '+',
    '(5',
    'abc',
    '1-',
    str(2**64),
    None,
    0,
    NAIVE,
    datetime(1969, 12, 31, tzinfo=timezone.utc),
]
BAD_ENTRY_IDS = ['5', '$', '0', '-', 'abc', '1-2-3', '(1-0', f'1-{2**64}', None, 5]


@pytest.fixture
def s(client):
    return client.stream('ev')


@pytest.fixture
def g(s):
    return s.group('g', 'c')


# --- names and the group factory ------------------------------------------------------------------


@pytest.mark.parametrize('name', BAD_STREAM_NAMES)
def test_bad_stream_names(client, r, name):
    with no_io(r), pytest.raises(InvalidName, match='stream name'):
        client.stream(name)


@pytest.mark.parametrize('name', ['a', 'A-z_0.9', 'x' * 128])
def test_good_stream_names(client, r, name):
    assert client.stream(name).publish({'a': 'b'})
    assert r.xlen(keys.stream_key(name)) == 1


@pytest.mark.parametrize('name', BAD_GROUP_NAMES)
def test_bad_group_and_consumer_names(s, r, name):
    with no_io(r):
        with pytest.raises(InvalidName, match='group name'):
            s.group(name)
        if name is None:
            return  # a consumer of None is the default one (and pending's "any consumer")
        with pytest.raises(InvalidName, match='consumer name'):
            s.group('g', name)
        with pytest.raises(InvalidName, match='consumer name'):
            s.group('g', 'c').pending(consumer=name)


@pytest.mark.parametrize('name', ['!', 'a:b{c}*', 'x' * 128])
def test_good_group_and_consumer_names(s, r, name):
    g = s.group(name, name)
    assert g.create('0') is True
    s.publish({'a': 'b'})
    assert [e.deliveries for e in g.read()] == [1]
    assert r.xinfo_consumers(KEY, name)[0]['name'] == name


@pytest.mark.parametrize('value', [0, -1, 1_000_001, True, 1.0, '2'])
def test_bad_max_deliveries(s, r, value):
    with no_io(r), pytest.raises(InvalidArgument, match='max_deliveries'):
        s.group('g', max_deliveries=value)


def test_good_max_deliveries(s):
    assert s.group('g', max_deliveries=1).max_deliveries == 1
    assert s.group('g', max_deliveries=1_000_000).max_deliveries == 1_000_000


def test_dead_letter_stream_is_a_stream_name_other_than_the_stream(s, r):
    with no_io(r):
        with pytest.raises(InvalidName, match='stream name'):
            s.group('g', dead_letter='bad name')
        with pytest.raises(InvalidArgument, match='differ'):
            s.group('g', dead_letter='ev')
    assert s.group('g', dead_letter='ev.dlq').dead_letter_stream == 'ev.dlq'


# --- messages ----------------------------------------------------------------------------------------


@pytest.mark.parametrize('fields', [{}, {'a': 1}, {1: 'a'}, {'': 'a'}, {'a': None}, [('a', 'b')], 'a=b', None])
def test_bad_messages(s, r, fields):
    with no_io(r), pytest.raises(InvalidMessage):
        s.publish(fields)


def test_at_most_1000_fields(s, r):
    with no_io(r), pytest.raises(InvalidMessage, match='1000'):
        s.publish({f'f{i}': 'v' for i in range(1001)})
    entry_id = s.publish({f'f{i}': 'v' for i in range(1000)})
    assert len(r.xrange(KEY)[0][1]) == 1000 and r.xrange(KEY)[0][0] == entry_id


def test_message_too_large(make_client, redis_url, r):
    s = make_client(redis_url, max_message_bytes=10).stream('ev')
    with no_io(r), pytest.raises(MessageTooLarge):
        s.publish({'abc': 'é' * 4})  # 3 + 8 bytes: counted in UTF-8
    assert s.publish({'abc': 'é' * 3 + 'x'})  # 10 bytes


def test_bad_items_in_a_batch_write_nothing(make_client, redis_url, r):
    s = make_client(redis_url, max_message_bytes=100, chunk_size=2).stream('ev')
    batch = [{'a': 'b'}, {}, {'a': 'b'}, {'a': 'x' * 200}, {f'f{i}': 'v' for i in range(1001)}, 'nope', {'a': 'b'}]
    with no_io(r), pytest.raises(BatchError) as info:
        s.publish_batch(batch)
    assert [i for i, _ in info.value.errors] == [1, 3, 4, 5]
    assert isinstance(info.value.errors[1][1], MessageTooLarge)
    assert all(isinstance(e, InvalidMessage) for _, e in info.value.errors)
    assert r.exists(KEY) == 0


@pytest.mark.parametrize('messages', [{'a': 'b'}, 'ab', 5, None])
def test_batch_must_be_an_iterable_of_messages(s, r, messages):
    with no_io(r), pytest.raises(InvalidArgument):
        s.publish_batch(messages)


# --- retention ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'retention',
    [
        {'maxlen': 5, 'max_age': 60},
        {'maxlen': 0, 'max_age': 1.5, 'approximate': False},
        {'maxlen': -1},
        {'maxlen': True},
        {'maxlen': 1.5},
        {'maxlen': '3'},
        {'max_age': 0},
        {'max_age': -1},
        {'max_age': math.nan},
        {'max_age': math.inf},
        {'max_age': True},
        {'max_age': '60'},
        {'maxlen': 5, 'approximate': 1},
        {'approximate': None},
        {'max_age': 60, 'approximate': 'yes'},
    ],
)
def test_bad_retention(s, r, retention):
    with no_io(r):
        with pytest.raises(InvalidArgument):
            s.publish({'a': 'b'}, **retention)
        with pytest.raises(InvalidArgument):
            s.publish_batch([{'a': 'b'}], **retention)
        with pytest.raises(InvalidArgument):
            s.publish_batch([], **retention)  # checked even when there is nothing to write
        with pytest.raises(InvalidArgument):  # with maxlen when the case has no size or age of its own
            s.trim(**(retention if {'maxlen', 'max_age'} & set(retention) else {'maxlen': 1, **retention}))


def test_trim_needs_maxlen_or_max_age(s, r):
    with no_io(r), pytest.raises(InvalidArgument, match='maxlen or max_age'):
        s.trim()
    with no_io(r), pytest.raises(InvalidArgument, match='maxlen or max_age'):
        s.trim(approximate=False)


# --- ids, positions, entries -------------------------------------------------------------------------


@pytest.mark.parametrize('bound', BAD_RANGE_IDS, ids=repr)
def test_bad_range_bounds(s, r, bound):
    assert_refused(r, lambda: s.range(bound), lambda: s.range('-', bound))


def test_naive_datetimes_are_refused(s, g, r):
    with no_io(r):
        for call in (
            lambda: s.range(NAIVE),
            lambda: s.range('-', NAIVE),
            lambda: g.create(NAIVE),
            lambda: g.seek(NAIVE),
        ):
            with pytest.raises(InvalidArgument, match='aware datetime'):
                call()


@pytest.mark.parametrize('bound', ['0', '(5', '5', '5-1', '(5-1', str(2**64 - 1), f'1-{2**64 - 1}', AWARE, '-', '+'])
def test_good_range_bounds(s, bound):
    assert s.range(bound) == [] and s.range('-', bound) == []


@pytest.mark.parametrize('position', BAD_POSITIONS, ids=repr)
def test_bad_group_positions(g, r, position):
    assert_refused(r, lambda: g.create(position), lambda: g.seek(position))


@pytest.mark.parametrize('position', ['$', '0', '5', '5-1', AWARE])
def test_good_group_positions(g, position):
    assert g.create(position) is True
    assert g.seek(position) is None
    assert g.delete() is True


@pytest.mark.parametrize('entry', BAD_ENTRY_IDS, ids=repr)
def test_bad_entry_ids(g, r, entry):
    with no_io(r):
        with pytest.raises(InvalidArgument):
            g.ack(['1-0', entry])
        with pytest.raises(InvalidArgument):
            g.dead_letter([entry])


def test_entries_of_another_stream_or_not_in_a_list(client, g, r):
    other = StreamEntry('1-0', 'other', {'a': 'b'}, 1)
    mine = StreamEntry('1-0', 'ev', {'a': 'b'}, 1)
    with no_io(r):
        for call in (lambda: g.ack([other]), lambda: g.dead_letter([other])):
            with pytest.raises(InvalidArgument, match='other'):
                call()
        for single in ('1-0', mine):
            with pytest.raises(InvalidArgument):
                g.ack(single)
            with pytest.raises(InvalidArgument):
                g.dead_letter(single)


# --- counts, waits and flags -------------------------------------------------------------------------


@pytest.mark.parametrize('count', BAD_COUNTS)
def test_bad_counts(s, g, r, count):
    with no_io(r):
        for call in (
            lambda: s.range(count=count),
            lambda: g.read(count),
            lambda: g.pending(count),
            lambda: g.autoclaim(0, count),
        ):
            with pytest.raises(InvalidArgument, match='count'):
                call()


@pytest.mark.parametrize('value', BAD_SECONDS)
def test_bad_block_and_min_idle(g, r, value):
    with no_io(r):
        with pytest.raises(InvalidArgument, match='block'):
            g.read(block=value)
        with pytest.raises(InvalidArgument, match='min_idle'):
            g.pending(min_idle=value)
        with pytest.raises(InvalidArgument, match='min_idle'):
            g.autoclaim(value)


@pytest.mark.parametrize('value', [1, None, 'no'])
def test_exist_ok_must_be_bool(g, r, value):
    with no_io(r), pytest.raises(InvalidArgument, match='exist_ok'):
        g.create(exist_ok=value)


@pytest.mark.parametrize('error', [None, 1, b'x'])
def test_error_must_be_str(g, r, error):
    with no_io(r):
        with pytest.raises(InvalidArgument, match='error'):
            g.autoclaim(0, error=error)
        with pytest.raises(InvalidArgument, match='error'):
            g.dead_letter(['1-0'], error=error)
