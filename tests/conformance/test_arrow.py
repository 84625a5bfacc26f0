"""publish_arrow / send_arrow on every client kind: one message per row, string forms, value and id columns,
chunking by row index, idempotent chunks (dedup_key), errors raised before anything is written."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

pa = pytest.importorskip('pyarrow')

from ferroq.exceptions import InvalidArgument, InvalidMessage, MessageTooLarge, QueueNotFound
from ferroq.protocol import keys

SKEY = keys.stream_key('ev')


def backlog_fields(r, topic='t'):
    """The messages of a topic's backlog in publish order."""
    return [r.hgetall(f'rfq:{topic}:message:{i}') for i in r.lrange(f'rfq:{topic}:backlog', 0, -1)[::-1]]


def evalsha_calls(r):
    """EVALSHA calls that ran (not those refused with NOSCRIPT)."""
    stats = r.info('commandstats').get('cmdstat_evalsha', {})
    return stats.get('calls', 0) - stats.get('failed_calls', 0) - stats.get('rejected_calls', 0)


def table(n, start=0):
    return pa.table({'id': pa.array(range(start, start + n), pa.int64()), 'tile': [f'T{i % 7}' for i in range(n)]})


def test_topic_rows_become_messages(client, r):
    batch = pa.record_batch(
        {
            'i': pa.array([1, -2, None], pa.int32()),
            's': ['a', None, 'é"\n'],
            'f': [0.1, 1e20, float('nan')],
            'b': [True, False, None],
            'n': pa.nulls(3),
        }
    )
    assert client.topic('t').publish_arrow(batch) == (3, 3)
    assert backlog_fields(r) == [
        {'i': '1', 's': 'a', 'f': '0.1', 'b': 'true'},
        {'i': '-2', 'f': '1e+20', 'b': 'false'},
        {'s': 'é"\n', 'f': 'nan'},
    ]


def test_string_forms_of_every_type(client, r):
    ts = pa.array([1_700_000_000_123_456], pa.timestamp('us'))
    data = pa.table(
        {
            'f32': pa.array([0.1], pa.float32()),
            'f64': [1e-05],
            'dec': pa.array([Decimal('1.50')], pa.decimal128(5, 2)),
            'bin': [b'\x00\xff'],
            'ts': ts,
            'tsz': pa.array([1_700_000_000], pa.timestamp('s', tz='Europe/Paris')),
            'd32': pa.array([19782], pa.date32()),
            't64': pa.array([45_296_789_000], pa.time64('us')),
            'dur': pa.array([1500], pa.duration('ms')),
            'lst': pa.array([[1, None, 3]]),
            'st': pa.array([{'x': 1.5, 'y': 'ü'}]),
            'mp': pa.array([[('k', 1)]], pa.map_(pa.string(), pa.int64())),
            'dict': pa.array(['red']).dictionary_encode(),
        }
    )
    assert client.topic('t').publish_arrow(data) == (1, 1)
    assert backlog_fields(r) == [
        {
            'f32': '0.1',
            'f64': '1e-05',
            'dec': '1.50',
            'bin': 'AP8=',
            'ts': '2023-11-14T22:13:20.123456',
            'tsz': '2023-11-14T22:13:20Z',
            'd32': '2024-02-29',
            't64': '12:34:56.789000',
            'dur': '1500',
            'lst': '[1,null,3]',
            'st': '{"x":1.5,"y":"ü"}',
            'mp': '{"k":1}',
            'dict': 'red',
        }
    ]


def test_value_column_of_a_topic_and_a_stream_is_one_field_raw(client, r):
    data = pa.table({'payload': pa.array([b'\x00\x01raw', b'x'], pa.binary()), 'other': [1, 2]})
    assert client.topic('t').publish_arrow(data, value_column='payload') == (2, 2)
    raw = r.connection_pool.connection_kwargs
    import redis

    rb = redis.Redis(host=raw['host'], port=raw['port'])
    ids = rb.lrange('rfq:t:backlog', 0, -1)[::-1]
    assert [rb.hgetall(b'rfq:t:message:' + i) for i in ids] == [{b'payload': b'\x00\x01raw'}, {b'payload': b'x'}]
    assert client.stream('ev').publish_arrow(data, value_column='payload') == (2, 2)
    assert [f for _, f in rb.xrange(SKEY)] == [{b'payload': b'\x00\x01raw'}, {b'payload': b'x'}]
    rb.close()


def test_rsmq_bodies_json_or_value_column(client, r):
    q = client.rsmq('jobs')
    q.create()
    data = pa.table({'a': [1, None], 'b': ['x"é', 'y'], 'body': ['one', 'two']})
    assert q.send_arrow(data.select(['a', 'b'])) == (2, 2)
    assert q.send_arrow(data, value_column='body', delay=0) == (2, 2)
    got = [m.message for m in q.receive_batch(10)]
    assert got == ['{"a":"1","b":"x\\"é"}', '{"b":"y"}', 'one', 'two']
    assert json.loads(got[0]) == {'a': '1', 'b': 'x"é'}


def test_id_column_is_the_message_id_and_insert_if_absent(client, r):
    t = client.topic('t')
    data = pa.table({'key': ['k1', 'k2', 'k3'], 'v': [1, 2, 3]})
    assert t.publish_arrow(data, id_column='key') == (3, 3)
    assert r.hgetall('rfq:t:message:k2') == {'v': '2'}
    more = pa.table({'key': ['k3', 'k4'], 'v': [30, 4]})
    assert t.publish_arrow(more, id_column='key') == (2, 1)
    assert r.hgetall('rfq:t:message:k3') == {'v': '3'}
    assert r.lrange('rfq:t:backlog', 0, -1)[::-1] == ['k1', 'k2', 'k3', 'k4']


def test_chunks_follow_row_indexes_not_batch_boundaries(make_client, redis_url, r):
    c = make_client(redis_url, chunk_size=1000)
    calls = evalsha_calls(r)
    schema = pa.schema([('id', pa.int64())])
    sizes = [1, 999, 1500, 37, 463]
    batches, start = [], 0
    for n in sizes:
        batches.append(pa.record_batch([pa.array(range(start, start + n), pa.int64())], schema=schema))
        start += n
    reader = pa.RecordBatchReader.from_batches(schema, iter(batches))
    assert c.stream('ev').publish_arrow(reader, dedup_key='job') == (3000, 3000)
    assert [int(f['id']) for _, f in r.xrange(SKEY)] == list(range(3000))
    records = [r.get(keys.stream_published('ev', keys.dedup_token('job', k))) for k in range(3)]
    assert None not in records and [len(ids.split()) for ids in records] == [1000, 1000, 1000]
    assert evalsha_calls(r) - calls == 3  # one script call per chunk
    topic = pa.Table.from_batches(batches)
    assert c.topic('t').publish_arrow(topic, dedup_key='job') == (3000, 3000)
    assert [r.get(keys.rfq_published('t', keys.dedup_token('job', k))) for k in range(4)] == ['1000'] * 3 + [None]


@pytest.mark.parametrize('target', ['topic', 'rsmq', 'stream'])
def test_dedup_key_publishes_each_chunk_once(make_client, redis_url, r, target):
    c = make_client(redis_url, chunk_size=1000)
    if target == 'rsmq':
        c.rsmq('q').create()

    def publish(data, key):
        if target == 'topic':
            return c.topic('t').publish_arrow(data, dedup_key=key, dedup_ttl=60)
        if target == 'rsmq':
            return c.rsmq('q').send_arrow(data, dedup_key=key, dedup_ttl=60)
        return c.stream('ev').publish_arrow(data, dedup_key=key, dedup_ttl=60)

    def count():
        if target == 'topic':
            return r.llen('rfq:t:backlog')
        if target == 'rsmq':
            return r.zcard('rsmq:q')
        return r.xlen(SKEY)

    full = table(5000)
    assert publish(full.slice(0, 2500), 'K') == (2500, 2500)  # chunks 0, 1 and the first half of 2
    # A retry with more rows: chunks 0 and 1 are skipped, chunk 2 writes only the rows after its recorded 500.
    assert publish(full, 'K') == (5000, 2500)
    assert count() == 5000
    assert publish(full, 'K') == (5000, 0)
    assert publish(full, 'other') == (5000, 5000)
    assert count() == 10_000
    token = keys.dedup_token('K', 0)
    marker = {
        'topic': keys.rfq_published('t', token),
        'rsmq': keys.rsmq_published('rsmq', 'q', token),
        'stream': keys.stream_published('ev', token),
    }[target]
    assert 0 < r.pttl(marker) <= 60_000


@pytest.mark.parametrize('target', ['topic', 'rsmq', 'stream'])
def test_dedup_skips_chunks_whose_messages_were_consumed(client, r, target):
    if target == 'topic':
        t = client.topic('t')
        publish, left = t.publish_arrow, lambda: r.llen('rfq:t:backlog')

        def consume():
            assert len(t.commit(t.claim(count=10))) == 10

    elif target == 'rsmq':
        q = client.rsmq('q')
        q.create()
        publish, left = q.send_arrow, lambda: r.zcard('rsmq:q')

        def consume():
            assert len(q.pop_batch(10)) == 10

    else:
        s = client.stream('ev')
        publish, left = s.publish_arrow, lambda: r.xlen(SKEY)

        def consume():
            assert s.delete() is True

    assert publish(table(10), dedup_key='job-1') == (10, 10)
    consume()
    assert left() == 0
    assert publish(table(10), dedup_key='job-1') == (10, 0)
    assert left() == 0
    assert publish(table(10), dedup_key='job-2') == (10, 10)


def test_without_dedup_key_every_call_publishes(client, r):
    t = client.topic('t')
    assert t.publish_arrow(table(3)) == (3, 3)
    assert t.publish_arrow(table(3)) == (3, 3)
    assert r.llen('rfq:t:backlog') == 6
    # A topic keeps no record without a dedup key: each call's goes with the client's next request.
    assert len(r.keys('rfq:t:published:*')) <= 1
    t.stats()
    assert not r.keys('rfq:t:published:*')


def test_empty_data_publishes_nothing(client, r):
    assert client.topic('t').publish_arrow(table(0)) == (0, 0)
    assert client.rsmq('missing').send_arrow(table(0)) == (0, 0)
    assert r.dbsize() == 0


def test_accepts_batches_tables_readers_and_capsule_objects(client, r):
    class Capsules:
        def __init__(self, obj):
            self.obj = obj

        def __arrow_c_stream__(self, requested_schema=None):
            return self.obj.__arrow_c_stream__(requested_schema)

    class ArrayCapsules:
        def __init__(self, obj):
            self.obj = obj

        def __arrow_c_array__(self, requested_schema=None):
            return self.obj.__arrow_c_array__(requested_schema)

    t = client.topic('t')
    data = table(4)
    assert t.publish_arrow(data.to_batches()[0]) == (4, 4)
    assert t.publish_arrow(data.to_reader()) == (4, 4)
    assert t.publish_arrow(Capsules(data)) == (4, 4)
    assert t.publish_arrow(ArrayCapsules(data.to_batches()[0])) == (4, 4)
    assert t.publish_arrow(data.slice(1, 2)) == (2, 2)
    assert [f['id'] for f in backlog_fields(r)][-2:] == ['1', '2']


def test_errors_before_anything_is_written(make_client, redis_url, r):
    c = make_client(redis_url, max_message_bytes=100)
    t = c.topic('t')
    with pytest.raises(InvalidArgument, match='data must be a pyarrow RecordBatch'):
        t.publish_arrow([{'a': 1}])
    with pytest.raises(InvalidArgument, match="value_column 'nope' is not a column of the data"):
        t.publish_arrow(table(3), value_column='nope')
    with pytest.raises(InvalidArgument, match="id_column 'nope' is not a column"):
        t.publish_arrow(table(3), id_column='nope')
    with pytest.raises(InvalidArgument, match="value_column 'id' must be a string or binary column"):
        t.publish_arrow(table(3), value_column='id')
    with pytest.raises(InvalidArgument, match="column 'h' holds float16 values"):
        t.publish_arrow(pa.table({'h': pa.array([1], pa.float16())}))
    union = pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1]), pa.array(['a'])])
    with pytest.raises(InvalidArgument, match="column 'u' holds union values"):
        t.publish_arrow(pa.table({'u': union}))
    with pytest.raises(InvalidMessage, match='row 2: the message has no field: every value is null'):
        t.publish_arrow(pa.table({'a': [1, 2, None], 'b': ['x', None, None]}))
    with pytest.raises(MessageTooLarge, match='row 1: message is 201 bytes, more than max_message_bytes=100'):
        t.publish_arrow(pa.table({'a': ['x', 'y' * 200]}))
    with pytest.raises(InvalidMessage, match='row 1: a message id must be'):
        t.publish_arrow(pa.table({'k': ['ok', 'not ok'], 'v': [1, 2]}), id_column='k')
    with pytest.raises(InvalidArgument, match="value_column 'n' must be a string column"):
        c.rsmq('q').send_arrow(pa.table({'n': [b'x']}), value_column='n')
    with pytest.raises(QueueNotFound):
        c.rsmq('q').send_arrow(table(2))
    assert r.dbsize() == 0


def test_a_bad_row_stops_at_its_chunk(make_client, redis_url, r):
    c = make_client(redis_url, chunk_size=10)
    data = pa.table({'a': [str(i) if i != 25 else None for i in range(40)]})
    with pytest.raises(InvalidMessage, match='row 25') as info:
        c.topic('t').publish_arrow(data)
    assert info.value.published == 20  # chunks 0 and 1 were written, chunk 2 was refused whole
    assert r.llen('rfq:t:backlog') == 20


def test_rsmq_maxsize_names_the_row(client, r):
    q = client.rsmq('q')
    q.create(maxsize=1024)
    with pytest.raises(MessageTooLarge, match='row 1: message is 1025 characters .* maxsize 1024'):
        q.send_arrow(pa.table({'m': ['ok', 'x' * 1025]}), value_column='m')
    assert r.zcard('rsmq:q') == 0


def test_stream_retention_applies(client, r):
    assert client.stream('ev').publish_arrow(table(50), maxlen=10, approximate=False) == (50, 50)
    assert r.xlen(SKEY) == 10


def test_large_round_trip(make_client, redis_url, r):
    c = make_client(redis_url)
    n = 100_000
    data = pa.table({'id': pa.array(range(n), pa.int64()), 'v': pa.array([i / 7 for i in range(n)])})
    assert c.topic('big').publish_arrow(data, dedup_key='big') == (n, n)
    assert r.llen('rfq:big:backlog') == n
    first = r.lindex('rfq:big:backlog', -1)
    assert r.hgetall(f'rfq:big:message:{first}') == {'id': '0', 'v': '0.0'}
    last = r.lindex('rfq:big:backlog', 0)
    assert r.hgetall(f'rfq:big:message:{last}') == {'id': str(n - 1), 'v': repr((n - 1) / 7)}
