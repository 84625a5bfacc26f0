"""publish_arrow: the native and the pure client leave byte-identical Redis content for every Arrow type
(random values and edge cases: NaN, -0.0, huge and tiny exponents, unicode, empty strings, nested nulls)."""

from __future__ import annotations

import math
import random
import struct
from decimal import Decimal

import pytest
import redis

import ferroq
import ferroq.pure

pa = pytest.importorskip('pyarrow')

N = 300
SEED = 20261125


def _nulls(rng: random.Random, values: list, p: float = 0.1) -> list:
    return [None if rng.random() < p else v for v in values]


def _f64(rng: random.Random) -> float:
    while True:
        v = struct.unpack('<d', rng.getrandbits(64).to_bytes(8, 'little'))[0]
        if rng.random() < 0.5 or not math.isfinite(v):
            return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30)
        return v


def _f32(rng: random.Random) -> float:
    while True:
        v = struct.unpack('<f', rng.getrandbits(32).to_bytes(4, 'little'))[0]
        if math.isfinite(v):
            return v


def _text(rng: random.Random) -> str:
    alphabet = 'aZ09 "\\/\n\t\r\b\f\x00\x01\x1f\x7fé€😀\u2028'
    return ''.join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))


def edge_table() -> pa.Table:
    rng = random.Random(SEED)
    n = N
    f64_edges = [math.nan, -0.0, 0.0, math.inf, -math.inf, 1e16, 1e15, 1e-5, 1e-4, 5e-324, 1.7976931348623157e308, 0.1]
    f32_edges = [
        math.nan,
        -0.0,
        math.inf,
        -math.inf,
        3.4028234663852886e38,
        1.1754943508222875e-38,
        1e-45,
        0.1,
        16777216.0,
    ]
    f64s = f64_edges + [_f64(rng) for _ in range(n - len(f64_edges))]
    f32s = [struct.unpack('<f', struct.pack('<f', v))[0] for v in f32_edges] + [_f32(rng) for _ in range(n - 9)]
    texts = ['', 'é', '😀'] + [_text(rng) for _ in range(n - 3)]
    blobs = [b'', b'\x00', b'\xff\xfe\xfd'] + [rng.randbytes(rng.randint(0, 9)) for _ in range(n - 3)]
    ints = [rng.randint(-(2**63), 2**63 - 1) for _ in range(n)]
    ns = [rng.randint(-(2**63), 2**63 - 1) for _ in range(n)]
    secs = [rng.randint(-62_135_596_800, 253_402_300_799) for _ in range(n)]
    days = [-719_162, 2_932_896, 0, -1] + [rng.randint(-719_162, 2_932_896) for _ in range(n - 4)]
    decs = [Decimal(rng.randint(-(10**37), 10**37)).scaleb(-10) for _ in range(n)]
    decs[:3] = [Decimal('0E-10'), Decimal('-1E-10'), Decimal('1.5000000000')]
    cols = {
        'id': pa.array([f'r{i}' for i in range(n)]),
        'i8': pa.array(_nulls(rng, [rng.randint(-128, 127) for _ in range(n)]), pa.int8()),
        'u64': pa.array(_nulls(rng, [rng.randint(0, 2**64 - 1) for _ in range(n)]), pa.uint64()),
        'i64': pa.array(_nulls(rng, ints), pa.int64()),
        'u16': pa.array([rng.randint(0, 65535) for _ in range(n)], pa.uint16()),
        'bool': pa.array(_nulls(rng, [rng.random() < 0.5 for _ in range(n)]), pa.bool_()),
        'f64': pa.array(_nulls(rng, f64s, 0.03), pa.float64()),
        'f32': pa.array(_nulls(rng, f32s, 0.03), pa.float32()),
        'd128': pa.array(_nulls(rng, decs), pa.decimal128(38, 10)),
        'd256': pa.array(
            [Decimal(rng.randint(-(10**60), 10**60)).scaleb(-20) for _ in range(n)], pa.decimal256(76, 20)
        ),
        'd0': pa.array([Decimal(rng.randint(-999, 999)) for _ in range(n)], pa.decimal128(5, 0)),
        'str': pa.array(_nulls(rng, texts), pa.string()),
        'lstr': pa.array(texts[::-1], pa.large_string()),
        'bin': pa.array(_nulls(rng, blobs), pa.binary()),
        'lbin': pa.array(blobs[::-1], pa.large_binary()),
        'fbin': pa.array([rng.randbytes(4) for _ in range(n)], pa.binary(4)),
        'ts_s': pa.array(_nulls(rng, secs), pa.timestamp('s')),
        'ts_ms': pa.array([s * 1000 + rng.randint(0, 999) for s in secs], pa.timestamp('ms', tz='UTC')),
        'ts_us': pa.array([s * 10**6 + rng.randint(0, 10**6 - 1) for s in secs], pa.timestamp('us', tz='Asia/Tokyo')),
        'ts_ns': pa.array(_nulls(rng, ns), pa.timestamp('ns')),
        'd32': pa.array(_nulls(rng, days), pa.date32()),
        'd64': pa.array([d * 86_400_000 for d in days], pa.date64()),
        't32s': pa.array([rng.randint(0, 86_399) for _ in range(n)], pa.time32('s')),
        't32ms': pa.array([rng.randint(0, 86_399_999) for _ in range(n)], pa.time32('ms')),
        't64us': pa.array([rng.randint(0, 86_399_999_999) for _ in range(n)], pa.time64('us')),
        't64ns': pa.array(_nulls(rng, [rng.randint(0, 86_399_999_999_999) for _ in range(n)]), pa.time64('ns')),
        'dur': pa.array(_nulls(rng, ints), pa.duration('us')),
        'null': pa.nulls(n),
        'list': pa.array(
            _nulls(rng, [_nulls(rng, [rng.randint(-5, 5) for _ in range(rng.randint(0, 3))]) for _ in range(n)]),
            pa.list_(pa.int64()),
        ),
        'llist': pa.array(
            [[_text(rng) for _ in range(rng.randint(0, 2))] for _ in range(n)], pa.large_list(pa.string())
        ),
        'fsl': pa.array([[_f32(rng), f32s[i % 9]] for i in range(n)], pa.list_(pa.float32(), 2)),
        'flist': pa.array([[f64s[i], f64s[-i - 1]] for i in range(n)], pa.list_(pa.float64())),
        'struct': pa.array(
            _nulls(
                rng,
                [
                    {'a': rng.choice([None, rng.randint(0, 9)]), 'b': _text(rng), 'c': [Decimal('1.25'), None]}
                    for _ in range(n)
                ],
            ),
            pa.struct([('a', pa.int32()), ('b', pa.string()), ('c', pa.list_(pa.decimal128(6, 2)))]),
        ),
        'map': pa.array(
            [[(_text(rng), rng.choice([None, _f64(rng)])) for _ in range(rng.randint(0, 2))] for _ in range(n)],
            pa.map_(pa.string(), pa.float64()),
        ),
        'nested': pa.array(
            [[{'ts': secs[i], 'raw': blobs[i]}] for i in range(n)],
            pa.list_(pa.struct([('ts', pa.timestamp('s', tz='UTC')), ('raw', pa.binary())])),
        ),
        'dict': pa.array(_nulls(rng, [rng.choice(['red', 'grün', '']) for _ in range(n)])).dictionary_encode(),
    }
    if hasattr(pa, 'string_view'):
        cols['sview'] = pa.array(texts, pa.string_view())
        cols['bview'] = pa.array(blobs, pa.binary_view())
    return pa.table(cols)


@pytest.fixture
def clients(redis_url):
    native = ferroq.Client(redis_url, chunk_size=64)
    pure = ferroq.pure.Client(redis_url, chunk_size=64)
    yield native, pure
    native.close()
    pure.close()


@pytest.fixture
def rb(redis_server):
    conn = redis.Redis(host='127.0.0.1', port=redis_server.port)
    yield conn
    conn.close()


def test_topic_content_is_byte_identical(clients, rb):
    data = edge_table()
    native, pure = clients
    # Table batches sliced unevenly, so chunks cross batch boundaries differently than the data's own.
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=37))
    assert native.topic('n').publish_arrow(reader, id_column='id') == (N, N)
    assert pure.topic('p').publish_arrow(data, id_column='id') == (N, N)
    for i in range(N):
        got_n = rb.hgetall(f'rfq:n:message:r{i}')
        got_p = rb.hgetall(f'rfq:p:message:r{i}')
        assert got_n == got_p, (i, {k: (v, got_p.get(k)) for k, v in got_n.items() if got_p.get(k) != v})
    assert rb.hgetall('rfq:n:message:r0')[b'f64'] == b'nan'


def test_stream_and_rsmq_content_is_byte_identical(clients, rb):
    data = edge_table().drop_columns(['id'])
    native, pure = clients
    native.stream('n').publish_arrow(data)
    pure.stream('p').publish_arrow(data)
    assert [f for _, f in rb.xrange('ferroq:stream:n')] == [f for _, f in rb.xrange('ferroq:stream:p')]
    for c in (native, pure):
        c.rsmq('q').create() if c is native else None
    native.rsmq('q').send_arrow(data)
    pure.rsmq('q').send_arrow(data)
    ids = rb.zrange('rsmq:q', 0, -1)
    bodies = [rb.hget('rsmq:q:Q', i) for i in ids]
    assert len(bodies) == 2 * N
    by_order = sorted(zip(ids, bodies))  # ids sort by send time: the native call first, then the pure one
    assert [b for _, b in by_order[:N]] == [b for _, b in by_order[N:]]
