"""Streams topics: Stream and ConsumerGroup over every client, checked against what Redis holds.

Entries written with explicit ids through redis-py (``1000-0``, ``2000-0``, ...) make id and time bounds exact.
"""

from __future__ import annotations

import gc
import os
import re
import socket
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from _redis import no_io
from ferroq import protocol
from ferroq.exceptions import FerroqError, QueueExists, QueueNotFound
from ferroq.protocol import keys
from ferroq.types import GroupInfo, PendingEntry, StreamEntry, StreamInfo

KEY = keys.stream_key('ev')
DEAD = keys.stream_key('ev.dead')
ID = re.compile(r'\d+-\d+')
TOKEN_KEY = re.compile(re.escape(KEY) + r':published:[0-9a-f]{32}')
UTC = timezone.utc


def id_key(entry_id: str) -> tuple[int, int]:
    ms, seq = entry_id.split('-')
    return int(ms), int(seq)


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


@pytest.fixture
def s(client):
    return client.stream('ev')


@pytest.fixture
def fixed(s, r):
    """Entries 1000-0, 2000-0, 2000-1, 3000-0 (times 1, 2, 2 and 3 s after the epoch)."""
    for entry_id in ('1000-0', '2000-0', '2000-1', '3000-0'):
        r.xadd(KEY, {'id': entry_id}, id=entry_id)
    return s


def ids(entries: list[StreamEntry]) -> list[str]:
    return [e.id for e in entries]


def dead_records(r, key: str = DEAD) -> list[dict[str, str]]:
    return [fields for _, fields in r.xrange(key)]


# --- Stream ---------------------------------------------------------------------------------------


def test_names_and_repr(client):
    s = client.stream('ev')
    assert s.name == 'ev'
    assert repr(s).endswith("Stream(name='ev')")
    g = s.group('g', 'c1', max_deliveries=3, dead_letter='graveyard')
    assert (g.name, g.consumer, g.stream, g.max_deliveries, g.dead_letter_stream) == ('g', 'c1', 'ev', 3, 'graveyard')
    assert repr(g).endswith("ConsumerGroup(stream='ev', name='g', consumer='c1')")
    g = s.group('g')
    assert g.consumer == f'{socket.gethostname()}-{os.getpid()}'
    assert (g.max_deliveries, g.dead_letter_stream) == (None, 'ev.dead')


def test_publish_returns_ids_in_order_and_entries_are_readable(s, r):
    first = s.publish({'n': '0'})
    batch = s.publish_batch([{'n': str(i), 'é': 'ü'} for i in range(1, 6)])
    all_ids = [first, *batch]
    assert all(ID.fullmatch(i) for i in all_ids)
    assert sorted(all_ids, key=id_key) == all_ids and len(set(all_ids)) == 6
    assert [(i, f) for i, f in r.xrange(KEY)] == [(first, {'n': '0'})] + [
        (i, {'n': str(n), 'é': 'ü'}) for n, i in enumerate(batch, 1)
    ]
    assert s.length() == 6
    got = s.range()
    assert got == [StreamEntry(i, 'ev', f, 0) for i, f in r.xrange(KEY)]
    assert got[0].published == at(id_key(first)[0])


def test_publish_batch_chunks_each_get_a_token(make_client, redis_url, r):
    s = make_client(redis_url, chunk_size=2).stream('ev')
    got = s.publish_batch([{'n': str(i)} for i in range(5)])
    assert [f['n'] for _, f in r.xrange(KEY)] == ['0', '1', '2', '3', '4']
    assert [i for i, _ in r.xrange(KEY)] == got
    tokens = r.keys(f'{KEY}:published:*')
    assert len(tokens) == 3 and all(TOKEN_KEY.fullmatch(t) for t in tokens)
    assert sorted(r.get(t) for t in tokens) == sorted([' '.join(got[0:2]), ' '.join(got[2:4]), got[4]])
    assert all(0 < r.pttl(t) <= keys.STREAM_PUBLISH_TOKEN_MS for t in tokens)


def test_a_resend_with_the_publish_token_appends_nothing(s, r):
    """A retry after a dropped reply resends the same token: the script answers with the first ids."""
    entry_id = s.publish({'n': '1'})
    [token_key] = r.keys(f'{KEY}:published:*')
    args = [keys.STREAM_PUBLISH_TOKEN_MS, '', '', '~', 1, 'n', '1']
    resent = r.eval(protocol.script_source('streams/publish-2'), 2, KEY, token_key, *args)
    assert resent == ['done', [entry_id]]
    assert r.xlen(KEY) == 1
    s.publish({'n': '2'})  # a new call, a new token
    assert r.xlen(KEY) == 2 and len(r.keys(f'{KEY}:published:*')) == 2


def test_publish_survives_a_dropped_connection(s, r):
    s.publish({'n': '0'})
    r.client_kill_filter(_type='normal', skipme=True)
    s.publish_batch([{'n': '1'}, {'n': '2'}])
    assert [f['n'] for _, f in r.xrange(KEY)] == ['0', '1', '2']


def test_empty_batch_does_no_io(s, r):
    with no_io(r):
        assert s.publish_batch([]) == []


def test_retention_maxlen_exact_and_approximate(s, r):
    s.publish_batch([{'n': str(i)} for i in range(10)], maxlen=3, approximate=False)
    assert [f['n'] for _, f in r.xrange(KEY)] == ['7', '8', '9']
    s.publish({'n': '10'}, maxlen=2, approximate=False)
    assert [f['n'] for _, f in r.xrange(KEY)] == ['9', '10']
    r.delete(KEY)
    # Approximate: Redis drops whole macro-nodes only (100 entries each by default), so more than 3 stay.
    s.publish_batch([{'n': str(i)} for i in range(250)], maxlen=3)
    assert 3 < r.xlen(KEY) < 250
    assert r.xrevrange(KEY, count=1)[0][1] == {'n': '249'}


def test_retention_max_age_uses_the_client_clock(s, r):
    now_ms = int(time.time() * 1000)
    r.xadd(KEY, {'age': 'old'}, id='1000-0')
    r.xadd(KEY, {'age': '30s'}, id=f'{now_ms - 30_000}-0')
    s.publish({'age': 'new'}, max_age=60, approximate=False)
    assert [f['age'] for _, f in r.xrange(KEY)] == ['30s', 'new']
    s.publish_batch([{'age': 'newer'}], max_age=10.5, approximate=False)
    assert [f['age'] for _, f in r.xrange(KEY)] == ['new', 'newer']


def test_trim(s, r):
    assert s.trim(maxlen=0) == 0  # a missing stream
    assert r.exists(KEY) == 0
    s.publish_batch([{'n': str(i)} for i in range(10)])
    assert s.trim(maxlen=4, approximate=False) == 6
    assert [f['n'] for _, f in r.xrange(KEY)] == ['6', '7', '8', '9']
    assert s.trim(maxlen=4) == 0
    assert s.trim(maxlen=100, approximate=True) == 0
    r.delete(KEY)
    r.xadd(KEY, {'n': 'old'}, id='1000-0')
    r.xadd(KEY, {'n': 'older than an hour'}, id=f'{int(time.time() * 1000) - 3_700_000}-0')
    s.publish({'n': 'now'})
    assert s.trim(max_age=3600, approximate=False) == 2
    assert [f['n'] for _, f in r.xrange(KEY)] == ['now']


def test_range_bounds(fixed):
    assert ids(fixed.range()) == ['1000-0', '2000-0', '2000-1', '3000-0']
    assert ids(fixed.range('2000')) == ['2000-0', '2000-1', '3000-0']
    assert ids(fixed.range('(2000-0')) == ['2000-1', '3000-0']
    assert ids(fixed.range('-', '(3000-0')) == ['1000-0', '2000-0', '2000-1']
    assert ids(fixed.range('(1000', '2000')) == ['2000-0', '2000-1']
    assert ids(fixed.range('0', '2000-0')) == ['1000-0', '2000-0']
    assert ids(fixed.range(count=2)) == ['1000-0', '2000-0']
    assert ids(fixed.range('2000-1', count=1)) == ['2000-1']
    assert fixed.range('+', '-') == []
    # A datetime is <ms>-0: as an end bound it stops before the other entries of that millisecond.
    assert ids(fixed.range(at(2000))) == ['2000-0', '2000-1', '3000-0']
    assert ids(fixed.range(at(1500), at(2000))) == ['2000-0']
    plus_one = timezone(timedelta(hours=1))
    assert ids(fixed.range(datetime(1970, 1, 1, 1, 0, 2, 500_000, tzinfo=plus_one))) == ['3000-0']
    assert fixed.range()[1] == StreamEntry('2000-0', 'ev', {'id': '2000-0'}, 0)


def test_info_groups_length_delete_on_a_missing_stream(s, r):
    assert s.info() == StreamInfo('ev', 0, None, None, 0)
    assert s.groups() == []
    assert s.length() == 0
    assert s.delete() is False
    assert r.dbsize() == 0


def test_info_groups_length_delete(fixed, r):
    assert fixed.info() == StreamInfo('ev', 4, '1000-0', '3000-0', 0)
    fixed.group('a').create('0')
    fixed.group('b').create()
    assert fixed.info() == StreamInfo('ev', 4, '1000-0', '3000-0', 2)
    fixed.group('a', 'c').read(3)
    groups = fixed.groups()
    assert [g.name for g in groups] == ['a', 'b']
    a, b = groups
    assert (a.consumers, a.pending, a.last_delivered_id) == (1, 3, '2000-1')
    assert (b.consumers, b.pending, b.last_delivered_id) == (0, 0, '3000-0')
    assert a.entries_read in (3, None) and a.lag in (1, None)  # None before Redis 7
    assert fixed.length() == 4
    r.xtrim(KEY, maxlen=0)
    assert fixed.info() == StreamInfo('ev', 0, None, None, 2)  # empty, but there
    assert fixed.delete() is True
    assert r.exists(KEY) == 0 and fixed.groups() == []
    assert fixed.delete() is False


# --- ConsumerGroup: create, read, ack ---------------------------------------------------------------


@pytest.mark.parametrize(
    ('start', 'expected'),
    [
        ('$', []),
        ('0', ['1000-0', '2000-0', '2000-1', '3000-0']),
        ('2000-0', ['2000-1', '3000-0']),
        ('2000', ['2000-1', '3000-0']),
        (at(2000), ['2000-1', '3000-0']),
        (at(2500), ['3000-0']),
    ],
)
def test_create_at_a_position(fixed, start, expected):
    g = fixed.group('g', 'c')
    assert g.create(start) is True
    assert ids(g.read(10)) == expected


def test_a_read_leaves_the_garbage_collector_as_it_was(fixed, impl):
    g = fixed.group('g', 'c')
    g.create('0')
    assert ids(g.read(2)) == ['1000-0', '2000-0']
    assert gc.isenabled()
    gc.disable()
    try:
        got = g.read(10)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert got == [StreamEntry('2000-1', 'ev', {'id': '2000-1'}, 1), StreamEntry('3000-0', 'ev', {'id': '3000-0'}, 1)]
    assert all(type(e) is StreamEntry for e in got)
    assert [gc.is_tracked(e) for e in got] == [impl.startswith('pure')] * 2  # see test_claim.py


def test_create_default_start_is_new_entries_only(fixed):
    g = fixed.group('g', 'c')
    assert g.create() is True
    assert g.read(10) == []
    new = fixed.publish({'n': 'new'})
    assert ids(g.read(10)) == [new]


def test_create_makes_the_stream_and_exist_ok(s, r):
    g = s.group('g')
    assert g.create() is True
    assert r.type(KEY) == 'stream' and r.xlen(KEY) == 0
    assert g.create() is False
    assert g.create('0', exist_ok=True) is False
    with pytest.raises(QueueExists, match="'g'"):
        g.create(exist_ok=False)
    assert [x.name for x in s.groups()] == ['g']


def test_read_delivers_new_entries_once(fixed, r):
    g = fixed.group('g', 'c1')
    g.create('0')
    got = g.read(3)
    assert got == [StreamEntry(i, 'ev', {'id': i}, 1) for i in ('1000-0', '2000-0', '2000-1')]
    assert ids(g.read(10)) == ['3000-0']
    assert g.read(10) == []
    assert [(p['message_id'], p['consumer']) for p in r.xpending_range(KEY, 'g', '-', '+', 10)] == [
        (i, 'c1') for i in ('1000-0', '2000-0', '2000-1', '3000-0')
    ]


def test_read_block_times_out_with_nothing(s):
    g = s.group('g', 'c')
    g.create()
    t0 = time.monotonic()
    assert g.read(block=0.3) == []
    assert 0.25 <= time.monotonic() - t0 < 5
    t0 = time.monotonic()
    assert g.read(block=0) == []  # 0 means no wait, not Redis's "forever"
    assert time.monotonic() - t0 < 0.25


def test_read_block_wakes_on_a_publish_from_another_thread(make_client, redis_url, s):
    g = s.group('g', 'c')
    g.create()
    other = make_client(redis_url).stream('ev')
    published: list[str] = []
    timer = threading.Timer(0.3, lambda: published.append(other.publish({'n': 'late'})))
    timer.start()
    try:
        t0 = time.monotonic()
        got = g.read(5, block=10)
        elapsed = time.monotonic() - t0
    finally:
        timer.join(10)
    assert got == [StreamEntry(published[0], 'ev', {'n': 'late'}, 1)]
    assert 0.2 <= elapsed < 8


def test_groups_read_independently_and_consumers_share_a_group(fixed):
    a, b = fixed.group('a', 'c1'), fixed.group('b', 'c1')
    a.create('0')
    b.create('0')
    assert ids(a.read(10)) == ['1000-0', '2000-0', '2000-1', '3000-0']
    assert a.ack(['1000-0', '2000-0']) == ['1000-0', '2000-0']
    assert ids(b.read(2)) == ['1000-0', '2000-0']  # b's offset is its own
    other = fixed.group('b', 'c2')
    assert ids(other.read(10)) == ['2000-1', '3000-0']  # the rest of b's entries, to its second consumer
    assert [(p.id, p.consumer) for p in b.pending()] == [
        ('1000-0', 'c1'),
        ('2000-0', 'c1'),
        ('2000-1', 'c2'),
        ('3000-0', 'c2'),
    ]
    assert [p.id for p in a.pending()] == ['2000-1', '3000-0']


def test_seek_replays(fixed):
    g = fixed.group('g', 'c')
    g.create('0')
    everything = g.read(10)
    assert g.ack(everything) == ids(everything)
    assert g.read(10) == []
    assert g.seek('0') is None
    assert [(e.id, e.deliveries) for e in g.read(10)] == [(i, 1) for i in ids(everything)]
    g.seek(at(2000))
    assert ids(g.read(10)) == ['2000-1', '3000-0']
    g.seek('1000-0')
    assert ids(g.read(10)) == ['2000-0', '2000-1', '3000-0']
    g.seek('$')
    assert g.read(10) == []
    assert g.info().last_delivered_id == '3000-0'


def test_ack_reports_pending_ids_once_in_input_order(fixed, r):
    g = fixed.group('g', 'c')
    g.create('0')
    e1, e2, e3, _ = g.read(4)
    assert g.ack([e3.id, e1, '5000-0', e3, e1.id]) == [e3.id, e1.id]
    assert [p['message_id'] for p in r.xpending_range(KEY, 'g', '-', '+', 10)] == [e2.id, '3000-0']
    assert g.ack([e1, e3]) == []
    with no_io(r):
        assert g.ack([]) == []


def test_ack_across_chunks(make_client, redis_url, r):
    s = make_client(redis_url, chunk_size=2).stream('ev')
    s.publish_batch([{'n': str(i)} for i in range(5)])
    g = s.group('g', 'c')
    g.create('0')
    got = ids(g.read(5))
    assert g.ack([got[4], got[0], got[4], got[2], got[0]]) == [got[4], got[0], got[2]]
    assert [p['message_id'] for p in r.xpending_range(KEY, 'g', '-', '+', 10)] == [got[1], got[3]]


def test_ack_of_ids_in_any_order(s, r):
    # Ids whose order as numbers differs from their order as strings ('1000-10' > '1000-9', '10000-0' > '999-5').
    for entry_id in ('999-5', '1000-9', '1000-10', '10000-0'):
        r.xadd(KEY, {'id': entry_id}, id=entry_id)
    g = s.group('g', 'c')
    g.create('0')
    assert ids(g.read(4)) == ['999-5', '1000-9', '1000-10', '10000-0']
    assert g.ack(['1000-10', '10000-0', '999-5', '1000-9']) == ['1000-10', '10000-0', '999-5', '1000-9']
    assert r.xpending(KEY, 'g')['pending'] == 0


def test_ack_among_many_entries_of_other_consumers(make_client, redis_url, r):
    # Between the two ids, 40 entries are pending for another consumer: an ack takes only the ids it is given.
    s = make_client(redis_url).stream('ev')
    s.publish_batch([{'n': str(i)} for i in range(42)])
    mine, theirs = s.group('g', 'mine'), s.group('g', 'theirs')
    mine.create('0')
    first = mine.read(1)[0]
    between = theirs.read(40)
    last = mine.read(1)[0]
    assert mine.ack([last, first, last]) == [last.id, first.id]
    assert [p['message_id'] for p in r.xpending_range(KEY, 'g', '-', '+', 100)] == ids(between)
    assert theirs.ack(between[::-1]) == ids(between)[::-1]
    assert r.xpending(KEY, 'g')['pending'] == 0


def test_ack_of_a_key_that_is_not_a_stream_is_refused(client, r):
    r.set(KEY, 'not a stream')
    with pytest.raises(FerroqError) as info:
        client.stream('ev').group('g', 'c').ack(['1000-0'])
    assert getattr(info.value, 'code', None) == 'WRONGTYPE'
    assert r.get(KEY) == 'not a stream'


def test_ack_on_a_missing_group_acknowledges_nothing(fixed):
    assert fixed.group('nope', 'c').ack(['1000-0']) == []
    assert fixed.group('nope', 'c').dead_letter([]) == []


# --- pending, autoclaim, dead-letter ----------------------------------------------------------------


def test_pending_filters_and_counts(fixed):
    g1, g2 = fixed.group('g', 'c1'), fixed.group('g', 'c2')
    g1.create('0')
    g1.read(2)
    g2.read(1)
    got = g1.pending()
    assert [(p.id, p.consumer, p.deliveries) for p in got] == [
        ('1000-0', 'c1', 1),
        ('2000-0', 'c1', 1),
        ('2000-1', 'c2', 1),
    ]
    assert all(isinstance(p, PendingEntry) and 0 <= p.idle < 5 for p in got)
    assert [p.id for p in g1.pending(consumer='c2')] == ['2000-1']
    assert g1.pending(consumer='nobody') == []
    assert [p.id for p in g1.pending(2)] == ['1000-0', '2000-0']
    assert g1.pending(min_idle=3600) == []
    time.sleep(0.06)
    idle = g1.pending(min_idle=0.05, consumer='c1')
    assert [p.id for p in idle] == ['1000-0', '2000-0'] and all(p.idle >= 0.05 for p in idle)
    g2.autoclaim(0)
    assert [(p.id, p.consumer, p.deliveries) for p in g1.pending()] == [
        ('1000-0', 'c2', 2),
        ('2000-0', 'c2', 2),
        ('2000-1', 'c2', 2),
    ]


def test_autoclaim_takes_over_idle_entries(fixed, r):
    g1 = fixed.group('g', 'crashed')
    g1.create('0')
    g1.read(3)
    g2 = fixed.group('g', 'rescuer')
    assert g2.autoclaim(3600) == []  # not idle long enough
    time.sleep(0.06)
    got = g2.autoclaim(0.05, count=2)
    assert got == [StreamEntry(i, 'ev', {'id': i}, 2) for i in ('1000-0', '2000-0')]
    assert [(p.id, p.consumer) for p in g2.pending()] == [
        ('1000-0', 'rescuer'),
        ('2000-0', 'rescuer'),
        ('2000-1', 'crashed'),
    ]
    assert ids(g2.autoclaim(0)) == ['1000-0', '2000-0', '2000-1']
    assert r.exists(DEAD) == 0  # no max_deliveries: never dead-lettered


def test_autoclaim_dead_letters_at_max_deliveries(fixed, r):
    g = fixed.group('g', 'c', max_deliveries=2)
    g.create('0')
    g.read(2)
    assert [(e.id, e.deliveries) for e in g.autoclaim(0)] == [('1000-0', 2), ('2000-0', 2)]
    assert ids(g.read(1)) == ['2000-1']
    # 1000-0 and 2000-0 have had 2 deliveries: dead-lettered; 2000-1 (1 delivery) is taken again.
    assert [(e.id, e.deliveries) for e in g.autoclaim(0)] == [('2000-1', 2)]
    assert dead_records(r) == [
        {
            'id': i,
            'ferroq:source': 'ev',
            'ferroq:id': i,
            'ferroq:group': 'g',
            'ferroq:deliveries': '2',
            'ferroq:error': 'max deliveries reached',
        }
        for i in ('1000-0', '2000-0')
    ]
    assert [p.id for p in g.pending()] == ['2000-1']
    assert g.autoclaim(0, error='too slow') == []
    assert dead_records(r)[-1]['ferroq:error'] == 'too slow'
    assert g.pending() == [] and r.xlen(KEY) == 4  # the source entries stay in the stream


def test_autoclaim_to_a_named_dead_letter_stream(fixed, r):
    g = fixed.group('g', 'c', max_deliveries=1, dead_letter='graveyard')
    g.create('0')
    g.read(1)
    assert g.autoclaim(0) == []
    assert [f['ferroq:id'] for f in dead_records(r, keys.stream_key('graveyard'))] == ['1000-0']
    assert r.exists(DEAD) == 0


def test_explicit_dead_letter(fixed, r):
    g = fixed.group('g', 'c')
    g.create('0')
    e1, e2, e3 = g.read(3)
    assert g.dead_letter([e3, e1.id, '3000-0', e1], error='bad input') == [e3.id, e1.id]
    assert dead_records(r) == [
        {
            'id': i,
            'ferroq:source': 'ev',
            'ferroq:id': i,
            'ferroq:group': 'g',
            'ferroq:deliveries': '1',
            'ferroq:error': 'bad input',
        }
        for i in (e3.id, e1.id)
    ]
    assert [p.id for p in g.pending()] == [e2.id]
    assert g.dead_letter([e2]) == [e2.id]
    assert dead_records(r)[-1]['ferroq:error'] == ''
    with no_io(r):
        assert g.dead_letter([]) == []


@pytest.mark.parametrize('stream_exists', [True, False])
def test_missing_group_is_queue_not_found(client, r, stream_exists):
    s = client.stream('ev')
    if stream_exists:
        s.group('other').create()
    g = s.group('g', 'c', max_deliveries=2)
    calls = [
        lambda: g.read(),
        lambda: g.read(block=0.05),
        lambda: g.pending(),
        lambda: g.pending(min_idle=1, consumer='c'),
        lambda: g.seek('0'),
        lambda: g.autoclaim(0),
        lambda: g.dead_letter(['1-0']),
        lambda: g.info(),
    ]
    for call in calls:
        with pytest.raises(QueueNotFound) as info:
            call()
        assert all(word in str(info.value) for word in ("'ev'", "'g'", 'create()'))
    assert g.ack(['1-0']) == []
    assert g.delete() is False
    assert r.exists(DEAD) == 0


def test_group_info_and_delete(fixed, r):
    g = fixed.group('g', 'c')
    g.create('0')
    g.read(1)
    redis7 = int(r.info('server')['redis_version'].split('.')[0]) >= 7
    assert g.info() == GroupInfo('g', 1, 1, '1000-0', *((1, 3) if redis7 else (None, None)))
    assert g.delete() is True
    assert fixed.groups() == []
    assert g.delete() is False
    assert r.xlen(KEY) == 4


def test_streams_lists_every_stream_sorted(client, r):
    assert client.streams() == []
    client.stream('b').publish({'x': '1'})  # also leaves its publish token's record, a STRING under the prefix
    client.stream('a.dead').publish({'x': '1'})
    client.stream('c').group('g').create()  # MKSTREAM: an empty stream is listed too
    r.set('ferroq:stream:x', 'not a stream')
    r.xadd('ferroq:stream:bad:name', {'x': '1'})  # not a stream name: not one of ferroq's
    r.xadd('other:stream', {'x': '1'})
    assert client.streams() == ['a.dead', 'b', 'c']
