"""Arrow reads: Topic.fetch_arrow and Stream.range_arrow on every client, checked against what Redis holds."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest

from _redis import no_io
from ferroq.exceptions import InvalidArgument
from ferroq.protocol import keys

STREAM = keys.stream_key('ev')


def topic_schema(*fields: str) -> pa.Schema:
    return pa.schema([('_id', pa.utf8()), ('_deliveries', pa.int64())] + [(f, pa.binary()) for f in fields])


def stream_schema(*fields: str) -> pa.Schema:
    return pa.schema([('_id', pa.utf8())] + [(f, pa.binary()) for f in fields])


@pytest.fixture
def t(client):
    return client.topic('jobs')


@pytest.fixture
def fixed(client, r):
    """Stream entries 1000-0, 2000-0, 2000-1, 3000-0; 2000-0 has no ``tile``, 2000-1 a binary ``v``."""
    r.xadd(STREAM, {'n': '1', 'tile': 'a'}, id='1000-0')
    r.xadd(STREAM, {'n': '2'}, id='2000-0')
    r.xadd(STREAM, {'n': '3', 'tile': 'c', 'v': b'\xff\x00\xfe'}, id='2000-1')
    r.xadd(STREAM, {'tile': 'd', 'n': '4', 'extra': 'x'}, id='3000-0')
    return client.stream('ev')


# --- Topic.fetch_arrow ---------------------------------------------------------------------------------


def test_fetch_arrow_reads_bodies_and_delivery_counts_in_the_given_order(t, r):
    ids = t.publish_batch([{'n': str(i), 'tile': f'T{i}', 'v': f'{i / 2}'} for i in range(4)])
    [m] = t.claim(count=1, lease=30.0)
    t.release([m])
    [m2] = t.claim(count=1, lease=30.0)  # the same message again: its count is 2, and it is still held
    assert m2.id == m.id
    r.hset(keys.rfq_deliveries('jobs'), ids[3], '7\nlast error')  # a dead-lettered message's record
    wanted = [ids[3], ids[0], ids[2], ids[1]]
    batch = t.fetch_arrow(wanted, ['v', 'n'])
    assert isinstance(batch, pa.RecordBatch)
    assert batch.schema == topic_schema('v', 'n')
    counts = {ids[0]: 2, ids[1]: 0, ids[2]: 0, ids[3]: 7}
    assert batch.to_pydict() == {
        '_id': wanted,
        '_deliveries': [counts[i] for i in wanted],
        'v': [f'{ids.index(i) / 2}'.encode() for i in wanted],
        'n': [str(ids.index(i)).encode() for i in wanted],
    }


def test_fetch_arrow_leaves_out_missing_and_committed_messages(t):
    ids = t.publish_batch([{'n': '0'}, {'n': '1'}, {'n': '2'}])
    [m] = t.claim(count=1)
    assert t.commit([m]) == [ids[0]]
    batch = t.fetch_arrow(['f' * 32, *ids, 'nope'], ['n'])
    assert batch.to_pydict() == {'_id': ids[1:], '_deliveries': [0, 0], 'n': [b'1', b'2']}


def test_fetch_arrow_missing_fields_are_null_and_binary_values_stay_bytes(t, r):
    a, b = t.publish_batch([{'n': '1', 'tile': 'é'}, {'other': 'x'}])
    r.hset(keys.rfq_message('jobs', b), 'raw', b'\x00\xff\x80')
    batch = t.fetch_arrow([a, b], ['tile', 'raw', 'n', 'absent'])
    assert batch.schema == topic_schema('tile', 'raw', 'n', 'absent')
    assert batch.to_pydict() == {
        '_id': [a, b],
        '_deliveries': [0, 0],
        'tile': ['é'.encode(), None],
        'raw': [None, b'\x00\xff\x80'],
        'n': [b'1', None],
        'absent': [None, None],
    }


def test_fetch_arrow_keeps_a_message_with_none_of_the_fields(t, r):
    a, b, c = t.publish_batch([{'other': 'x'}, {'n': '2'}, {'other': 'y'}])
    [m] = t.claim(count=1)
    assert t.commit([m]) == [a]  # gone: left out, though HMGET of its fields looks like that of c
    batch = t.fetch_arrow([a, b, c], ['n', 'tile'])
    assert batch.to_pydict() == {'_id': [b, c], '_deliveries': [0, 0], 'n': [b'2', None], 'tile': [None, None]}


def _calls(r, command: str) -> int:
    return int(r.info('commandstats').get(f'cmdstat_{command}', {}).get('calls', 0))


def test_fetch_arrow_held_counts_the_callers_claim_without_asking_the_in_flight_set(t, r):
    ids = t.publish_batch([{'n': str(i)} for i in range(3)])
    [first] = t.claim(count=1)
    t.release([first])  # its record now counts one delivery that ended
    held = t.claim(count=3)
    assert sorted(m.id for m in held) == sorted(ids)
    before = _calls(r, 'smismember')
    batch = t.fetch_arrow(ids, ['n'], held=True)
    assert _calls(r, 'smismember') == before
    expected = {'_id': ids, '_deliveries': [2, 1, 1], 'n': [b'0', b'1', b'2']}
    assert batch.to_pydict() == expected
    assert t.fetch_arrow(ids, ['n']).to_pydict() == expected  # what the in-flight set says too
    assert _calls(r, 'smismember') == before + 1


def test_fetch_arrow_with_no_ids_or_no_fields(t):
    ids = t.publish_batch([{'n': '1'}])
    empty = t.fetch_arrow([], ['n'])
    assert empty.schema == topic_schema('n') and empty.num_rows == 0
    assert t.fetch_arrow(iter(ids), ()).to_pydict() == {'_id': ids, '_deliveries': [0]}


def test_fetch_arrow_reads_in_rounds_of_chunk_size(make_client, redis_url):
    t = make_client(redis_url, chunk_size=2).topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(5)])
    wanted = ids[::-1] + ['0' * 32]
    batch = t.fetch_arrow(wanted, ['n'])
    assert batch.to_pydict() == {'_id': ids[::-1], '_deliveries': [0] * 5, 'n': [b'4', b'3', b'2', b'1', b'0']}


@pytest.mark.parametrize(
    ('ids', 'fields', 'match'),
    [
        ('abc', ['n'], 'ids must be an iterable of items, not a single str'),
        (5, ['n'], 'ids must be an iterable, got int'),
        (['ok', 'a b'], ['n'], 'a message id must be a non-empty str'),
        ([''], ['n'], 'a message id must be a non-empty str'),
        ([7], ['n'], 'a message id must be a non-empty str'),
        (['ok'], 'n', 'fields must be an iterable of items, not a single str'),
        (['ok'], [b'n'], "a field name must be a str, got b'n'"),
        (['ok'], ['n', 'n'], "field name 'n' is repeated or is a column of the batch already"),
        (['ok'], ['\ud800'], 'a field name must be a str'),
        (['ok'], ['_deliveries'], r"field name '_deliveries' is repeated .* \(_id, _deliveries\)"),
    ],
)
def test_fetch_arrow_refuses_bad_arguments_before_any_io(t, r, ids, fields, match):
    with no_io(r), pytest.raises(InvalidArgument, match=match):
        t.fetch_arrow(ids, fields)


@pytest.mark.parametrize('held', [1, None, 'yes'])
def test_fetch_arrow_refuses_a_held_that_is_not_a_bool(t, r, held):
    with no_io(r), pytest.raises(InvalidArgument, match='held must be a bool'):
        t.fetch_arrow(['ok'], ['n'], held=held)


# --- Stream.range_arrow -----------------------------------------------------------------------------------


def test_range_arrow_is_range_as_columns(fixed):
    batch = fixed.range_arrow('-', '+', 100, ['n', 'tile', 'v'])
    assert isinstance(batch, pa.RecordBatch)
    assert batch.schema == stream_schema('n', 'tile', 'v')
    assert batch.to_pydict() == {
        '_id': ['1000-0', '2000-0', '2000-1', '3000-0'],
        'n': [b'1', b'2', b'3', b'4'],
        'tile': [b'a', None, b'c', b'd'],
        'v': [None, None, b'\xff\x00\xfe', None],
    }


@pytest.mark.parametrize(
    ('start', 'end', 'count', 'expected'),
    [
        ('(1000-0', '+', 100, ['2000-0', '2000-1', '3000-0']),
        ('1000-0', '(3000-0', 100, ['1000-0', '2000-0', '2000-1']),
        ('(2000-0', '(3000-0', 100, ['2000-1']),
        ('2000', '2000', 100, ['2000-0', '2000-1']),
        ('-', '+', 2, ['1000-0', '2000-0']),
        ('(2000-1', '(3000-0', 10, []),
        ('+', '-', 10, []),
        (datetime.fromtimestamp(2, timezone.utc), '+', 10, ['2000-0', '2000-1', '3000-0']),
    ],
)
def test_range_arrow_bounds_and_count(fixed, start, end, count, expected):
    batch = fixed.range_arrow(start, end, count, ['n'])
    assert batch.schema == stream_schema('n')
    assert batch.column('_id').to_pylist() == expected


def test_range_arrow_of_a_missing_stream_is_empty(client):
    batch = client.stream('nothing').range_arrow('-', '+', 10, ['a', 'b'])
    assert batch.schema == stream_schema('a', 'b') and batch.num_rows == 0


@pytest.mark.parametrize(
    ('args', 'match'),
    [
        (('x', '+', 10, ['n']), 'start must be'),
        (('-', '((1-0', 10, ['n']), 'end must be'),
        (('-', '+', 0, ['n']), 'count must be an int from 1 to 10000'),
        (('-', '+', 10_001, ['n']), 'count must be an int from 1 to 10000'),
        (('-', '+', True, ['n']), 'count must be an int from 1 to 10000'),
        (('-', '+', 10, 'n'), 'fields must be an iterable of items, not a single str'),
        (('-', '+', 10, ['_id']), r"field name '_id' is repeated or is a column of the batch already \(_id\)"),
        (('-', '+', 10, ['a', 'b', 'a']), "field name 'a' is repeated"),
    ],
)
def test_range_arrow_refuses_bad_arguments_before_any_io(fixed, r, args, match):
    with no_io(r), pytest.raises(InvalidArgument, match=match):
        fixed.range_arrow(*args)
