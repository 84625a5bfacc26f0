"""Typed columns from fetched binary columns (``_rows.typed_batch``), the publish times made from ids, and
batch reads of every metadata column through a real SparkSession."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from _queries import peek
from pyspark.sql.types import StructType

import ferroq
from ferroq.exceptions import InvalidMessage
from ferroq.spark import _read
from ferroq.spark._rows import Row, to_batch, typed_batch
from ferroq.types import published_at, stream_id_time

UTC = timezone.utc
SCHEMA = StructType.fromJson(
    {
        'type': 'struct',
        'fields': [
            {'name': n, 'type': t, 'nullable': True, 'metadata': {}}
            for n, t in [
                ('n', 'long'),
                ('v', 'double'),
                ('ok', 'boolean'),
                ('at', 'timestamp'),
                ('price', 'decimal(10,2)'),
                ('tags', {'type': 'array', 'elementType': 'long', 'containsNull': True}),
                ('raw', 'binary'),
                ('s', 'string'),
                ('_id', 'string'),
                ('_published', 'timestamp'),
                ('_deliveries', 'long'),
                ('_topic', 'string'),
            ]
        ],
    }
)
FIELDS = ['n', 'v', 'ok', 'at', 'price', 'tags', 'raw', 's']


def fetched(ids: list[str], rows: list[dict[str, bytes]], deliveries: list[int] | None = None) -> pa.RecordBatch:
    """What Topic.fetch_arrow returns (Stream.range_arrow without ``deliveries``)."""
    arrays = [pa.array(ids, pa.utf8())]
    names = ['_id']
    if deliveries is not None:
        arrays.append(pa.array(deliveries, pa.int64()))
        names.append('_deliveries')
    for f in FIELDS:
        arrays.append(pa.array([r.get(f) for r in rows], pa.binary()))
        names.append(f)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def test_typed_batch_casts_every_kind_of_field_and_fills_the_metadata() -> None:
    ids = [uuid.uuid1().hex, uuid.uuid1().hex]
    rows = [
        {
            'n': b'42',
            'v': b'2.5',
            'ok': b'TRUE',
            'at': b'2026-01-02T03:04:05Z',
            'price': b'12.34',
            'tags': b'[1,2]',
            'raw': b'\xff\x00',
            's': 'é'.encode(),
        },
        {'ok': b'false'},
    ]
    batch = typed_batch(fetched(ids, rows, [3, 0]), SCHEMA, 'jobs', _read._rfq_published)
    assert batch.to_pylist() == [
        {
            'n': 42,
            'v': 2.5,
            'ok': True,
            'at': datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            'price': Decimal('12.34'),
            'tags': [1, 2],
            'raw': b'\xff\x00',
            's': 'é',
            '_id': ids[0],
            '_published': published_at(ids[0]),
            '_deliveries': 3,
            '_topic': 'jobs',
        },
        {
            **dict.fromkeys(['n', 'v', 'at', 'price', 'tags', 'raw', 's']),
            'ok': False,
            '_id': ids[1],
            '_published': published_at(ids[1]),
            '_deliveries': 0,
            '_topic': 'jobs',
        },
    ]
    # The rows path (RSMQ queues, samples) gives the same batch.
    same = to_batch([Row(i, r, published_at(i), d) for i, r, d in zip(ids, rows, [3, 0])], SCHEMA, 'jobs')
    assert same.equals(batch)


def test_stream_batches_have_no_deliveries_and_times_from_the_ids() -> None:
    ids = ['1700000000123-0', '1700000000124-5']
    batch = typed_batch(fetched(ids, [{'n': b'1'}, {}]), SCHEMA, 'ev', _read._stream_published)
    assert batch.column('_deliveries').to_pylist() == [0, 0]
    assert batch.column('_published').to_pylist() == [stream_id_time(i) for i in ids]
    assert batch.column('n').to_pylist() == [1, None]


@pytest.mark.parametrize(
    ('field', 'value', 'match'),
    [
        ('s', b'\xff', "field 's' of message m2 is not UTF-8 text: declare the column as binary"),
        ('n', b'4x', "field 'n' of message m2 cannot be read as int64: '4x'"),
        ('tags', b'[1,', "field 'tags' of message m2 cannot be read as list<element: int64>: not JSON"),
        ('tags', b'{"a": 1}', "field 'tags' does not fit the declared type"),
    ],
)
def test_typed_batch_names_the_message_a_field_cannot_be_read_from(field: str, value: bytes, match: str) -> None:
    rows = [{field: b'1' if field != 'tags' else b'[1]'}, {field: value}]
    with pytest.raises(InvalidMessage, match=match.replace('[', r'\[').replace('(', r'\(')):
        typed_batch(fetched(['m1', 'm2'], rows, [0, 0]), SCHEMA, 'jobs', _read._rfq_published)


def test_rfq_publish_times_are_published_at_of_each_id() -> None:
    plain = [uuid.uuid1().hex for _ in range(50)] + [
        uuid.uuid1().hex.upper(),
        uuid.uuid4().hex,
        '0' * 32,
        'f' * 32,
        '00000000000010008000000000000000',
        '000000000000100c8000000000000000',  # variant not RFC 4122
    ]
    assert _read._rfq_published(pa.array(plain)).to_pylist() == [published_at(i) for i in plain]
    odd = [*plain[:3], 'not-a-uuid', '{' + plain[0] + '}', str(uuid.uuid1())]
    assert _read._rfq_published(pa.array(odd)).to_pylist() == [published_at(i) for i in odd]
    assert _read._rfq_published(pa.array([], pa.utf8())).to_pylist() == []


def test_batch_reads_fill_every_metadata_column(spark: Any, redis_url: str) -> None:
    with ferroq.Client(redis_url) as c:
        topic = c.topic('jobs')
        ids = topic.publish_batch([{'n': str(i)} for i in range(30)])
        [held] = topic.claim(count=1)
        topic.release([held])
        c.stream('ev').publish_batch([{'n': str(i)} for i in range(30)])
    ddl = 'n long, _id string, _published timestamp, _deliveries long, _topic string'
    rows = spark.read.format('ferroq').option('url', redis_url).option('topic', 'jobs').schema(ddl).load().collect()
    assert sorted(r.n for r in rows) == list(range(30))
    assert {r._id: r._deliveries for r in rows} == {i: int(i == held.id) for i in ids}
    assert all(r._published.astimezone(UTC) == published_at(r._id) for r in rows)
    assert {r._topic for r in rows} == {'jobs'}
    rows = spark.read.format('ferroq').option('url', redis_url).option('stream', 'ev').schema(ddl).load().collect()
    assert sorted(r.n for r in rows) == list(range(30))
    assert all(r._published.astimezone(UTC) == stream_id_time(r._id) and r._deliveries == 0 for r in rows)
    assert {r._topic for r in rows} == {'ev'}


def test_a_stream_batch_read_with_a_group_shows_its_pending_delivery_counts(spark: Any, redis_url: str) -> None:
    with ferroq.Client(redis_url) as c:
        ids = c.stream('ev').publish_batch([{'n': str(i)} for i in range(30)])
        group = c.stream('ev').group('workers', 'w1')
        group.create('0')
        read = group.read(count=3)  # 3 pending, delivered once
        group.ack(read[:1])  # acknowledged: no longer counted
        again = c.stream('ev').group('workers', 'w2').autoclaim(0, count=1)  # delivered twice now
    assert [e.id for e in again] == [ids[1]]

    def deliveries(**options: str) -> dict[str, int]:
        df = peek(spark, redis_url, stream='ev', numPartitions='3', **options).schema('_id string, _deliveries long')
        return {r._id: r._deliveries for r in df.load().collect()}

    assert deliveries(group='workers') == {i: {ids[1]: 2, ids[2]: 1}.get(i, 0) for i in ids}
    assert deliveries() == dict.fromkeys(ids, 0)  # no group: a stream keeps no other delivery count
    with pytest.raises(Exception, match="stream 'ev' has no consumer group 'nope'"):
        deliveries(group='nope')
