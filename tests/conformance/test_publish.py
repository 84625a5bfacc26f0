"""publish / publish_batch / publish_stream: ids, rfq's key layout, FIFO and front order, chunking, streaming."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from _checks import assert_rfq_id, bodies, message_keys, queue_keys, run_in_threads
from _redis import commandstats
from ferroq._limits import MIN_DELETE_LATER
from ferroq.exceptions import BatchError, InvalidArgument, InvalidMessage


def test_publish_stores_rfq_layout(client, r):
    t = client.topic('jobs')
    msg_id = t.publish({'tile': 'T32UNE', 'band': 'B04'})
    assert_rfq_id(msg_id)
    # and the call's record, which the client's next single publish deletes (see below)
    assert set(r.keys('*')) == {'rfq:jobs:backlog', f'rfq:jobs:published:{msg_id}'} | message_keys('jobs', [msg_id])
    assert r.type('rfq:jobs:backlog') == 'list'
    assert r.type(f'rfq:jobs:message:{msg_id}') == 'hash'
    assert r.lrange('rfq:jobs:backlog', 0, -1) == [msg_id]
    assert r.hgetall(f'rfq:jobs:message:{msg_id}') == {'tile': 'T32UNE', 'band': 'B04'}


def test_publish_batch_ids_in_input_order_and_fifo(client, r):
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(10)])
    assert len(ids) == len(set(ids)) == 10
    for i, msg_id in enumerate(ids):
        assert_rfq_id(msg_id)
        assert r.hgetall(f'rfq:jobs:message:{msg_id}') == {'n': str(i)}
    # rfq's layout: LPUSH in input order, so the oldest sits at the tail, where consumers take from.
    assert r.lrange('rfq:jobs:backlog', 0, -1) == ids[::-1]
    times = [uuid.UUID(hex=i).time for i in ids]
    assert times == sorted(times)
    claimed = t.claim(count=10)
    assert [m.id for m in claimed] == ids
    assert bodies(claimed) == [str(i) for i in range(10)]


def test_publish_batch_accepts_any_iterable(client):
    t = client.topic('jobs')
    ids = t.publish_batch({'n': str(i)} for i in range(3))
    assert len(ids) == 3
    assert bodies(t.claim(count=5)) == ['0', '1', '2']


def test_publish_batch_empty_is_a_no_op(client, r):
    assert client.topic('jobs').publish_batch([]) == []
    assert r.dbsize() == 0


@pytest.mark.parametrize('call', ['publish', 'publish_batch'])
def test_one_message_is_one_script_call_and_its_record_waits_for_others(client, r, call):
    t = client.topic('jobs')
    warm = t.publish({'n': 'warm-up'})  # connects and loads the scripts
    r.config_resetstat()
    msg_id = t.publish({'n': 'a'}) if call == 'publish' else t.publish_batch([{'n': 'a'}])[0]
    stats = commandstats(r)
    # publish_one-3 (its SET NX of the record, HSET and LPUSH inside): no transaction, no read, and no DEL:
    # the warm-up's record waits, as single publishes take the records along only once MIN_DELETE_LATER wait.
    sent = {k: stats.get(k, 0) for k in ('evalsha', 'get', 'exists', 'hset', 'set', 'lpush', 'del', 'watch', 'multi')}
    assert sent == {
        'evalsha': 1,
        'get': 0,
        'exists': 0,
        'hset': 1,
        'set': 1,
        'lpush': 1,
        'del': 0,
        'watch': 0,
        'multi': 0,
    }
    record, warm_record = f'rfq:jobs:published:{msg_id}', f'rfq:jobs:published:{warm}'
    assert set(r.keys('*')) == {'rfq:jobs:backlog', warm_record, record} | message_keys('jobs', [warm, msg_id])
    assert 0 < r.pttl(record) <= 120_000  # it expires should no later request take it along
    # Two records wait: the single publish made once MIN_DELETE_LATER wait (of any topic) deletes them all.
    other = client.topic('other')
    for _ in range(MIN_DELETE_LATER - 2):
        other.publish({'n': 'b'})
    assert r.exists(warm_record, record) == 2
    assert len(r.keys('rfq:other:published:*')) == MIN_DELETE_LATER - 2
    last = other.publish({'n': 'b'})
    assert r.keys('rfq:*:published:*') == [f'rfq:other:published:{last}']


def test_any_request_but_a_single_publish_deletes_the_records_waiting(client, r):
    t = client.topic('jobs')
    ids = [t.publish({'n': str(i)}) for i in range(3)]
    assert len(r.keys('rfq:jobs:published:*')) == 3
    assert [m.id for m in t.claim(count=1)] == ids[:1]  # the claim takes them along
    assert r.keys('rfq:jobs:published:*') == []
    t.publish_batch([{'n': 'x'}, {'n': 'y'}])  # a chunk's record waits too, for the next request
    assert len(r.keys('rfq:jobs:published:*')) == 1
    client.ping()
    assert r.keys('rfq:jobs:published:*') == []


def test_close_deletes_the_record_of_a_last_single_publish(make_client, redis_url, r):
    client = make_client(redis_url)
    msg_id = client.topic('jobs').publish({'n': 'a'})
    assert r.exists(f'rfq:jobs:published:{msg_id}')
    client.close()
    assert set(r.keys('*')) == {'rfq:jobs:backlog'} | message_keys('jobs', [msg_id])


def test_close_gives_up_on_the_record_of_a_server_that_does_not_answer(make_client, redis_url, r):
    client = make_client(redis_url, command_timeout=2)
    msg_id = client.topic('jobs').publish({'n': 'a'})
    r.execute_command('CLIENT', 'PAUSE', '60000', 'WRITE')  # the record's DEL waits for the pause
    try:
        started = time.monotonic()
        client.close()  # no error: the native clients give up after a second, the pure ones at command_timeout
        elapsed = time.monotonic() - started
    finally:
        r.execute_command('CLIENT', 'UNPAUSE')
    assert elapsed < 30
    # The DEL, sent before the client gave up, may still run once the pause ends: either way the record goes.
    ttl = r.pttl(f'rfq:jobs:published:{msg_id}')
    assert ttl == -2 or 0 < ttl <= 120_000, ttl


def test_records_of_single_publishes_from_many_threads_stay_few(client, r):
    # A single publish made once MIN_DELETE_LATER records wait deletes them: however many publishes, fewer
    # than that many wait, plus at most one per thread whose call looked before another call took them.
    t = client.topic('jobs')
    threads, per_thread = 4, 100
    ids: list[str] = []
    errors = run_in_threads(lambda i: ids.extend(t.publish({'n': f'{i}.{k}'}) for k in range(per_thread)), threads)
    assert errors == []
    assert len(set(ids)) == threads * per_thread == r.llen('rfq:jobs:backlog')
    assert 1 <= len(r.keys('rfq:jobs:published:*')) < MIN_DELETE_LATER + threads < threads * per_thread


def test_publish_front_is_consumed_next(client):
    t = client.topic('jobs')
    t.publish({'n': 'a'})
    t.publish({'n': 'b'})
    t.publish({'n': 'c'}, front=True)
    assert bodies(t.claim(count=3)) == ['c', 'a', 'b']


def test_publish_batch_front_across_chunks(make_client, redis_url, r):
    client = make_client(redis_url, chunk_size=3)
    t = client.topic('jobs')
    old = t.publish_batch([{'n': f'old{i}'} for i in range(4)])
    new = t.publish_batch([{'n': f'new{i}'} for i in range(8)], front=True)
    # ids come back in input order (rfq 1.4 returns them reversed for front=True).
    assert [r.hget(f'rfq:jobs:message:{i}', 'n') for i in new] == [f'new{i}' for i in range(8)]
    claimed = t.claim(count=20)
    assert bodies(claimed) == [f'new{i}' for i in range(8)] + [f'old{i}' for i in range(4)]
    assert [m.id for m in claimed] == new + old


def test_publish_batch_back_across_chunks(make_client, redis_url, r):
    client = make_client(redis_url, chunk_size=3)
    t = client.topic('jobs')
    ids = t.publish_batch([{'n': str(i)} for i in range(10)])
    assert r.lrange('rfq:jobs:backlog', 0, -1) == ids[::-1]
    assert bodies(t.claim(count=10)) == [str(i) for i in range(10)]


def test_one_transaction_per_chunk(make_client, redis_url, r):
    client = make_client(redis_url, chunk_size=3)
    t = client.topic('jobs')
    t.publish_batch([{'n': 'warm-up'}] * 2)  # a chunk: it leaves no record for the next request to delete
    r.config_resetstat()
    t.publish_batch([{'n': str(i)} for i in range(10)])
    stats = commandstats(r)
    # ceil(10 / 3) chunks, each WATCH + GET of its record, MULTI ... EXEC, then DEL of the record; no Lua
    assert stats.get('evalsha', 0) + stats.get('eval', 0) == 0, stats
    for command in ('watch', 'get', 'multi', 'exec', 'lpush', 'set', 'del'):
        assert stats.get(command) == 4, (command, stats)
    assert stats.get('hset') == 10, stats


def test_unicode_fields_round_trip(client, r):
    t = client.topic('jobs')
    fields = {'ключ': 'значение ✓', 'emoji': '🦀🐍', 'empty': ''}
    msg_id = t.publish(fields)
    assert r.hgetall(f'rfq:jobs:message:{msg_id}') == fields
    [msg] = t.claim()
    assert msg.fields == fields
    assert t.peek(msg_id) == fields


def test_publish_ids_are_unique_across_calls(client):
    t = client.topic('jobs')
    ids = [t.publish({'n': str(i)}) for i in range(20)] + t.publish_batch([{'n': 'x'}] * 50)
    assert len(set(ids)) == 70


def test_large_chunks_and_wide_messages(make_client, redis_url, r):
    # Past Lua's unpack() limit (~8000 values): the scripts must slice their argument lists.
    client = make_client(redis_url, chunk_size=10_000)
    t = client.topic('jobs')
    ids = t.publish_batch({'n': str(i)} for i in range(10_000))
    wide = {f'f{i}': str(i) for i in range(5_000)}
    wide_id = t.publish(wide)
    assert r.llen('rfq:jobs:backlog') == 10_001
    claimed = t.claim(count=10_000) + t.claim()  # 10 000: the most one claim returns
    assert [m.id for m in claimed] == [*ids, wide_id]
    assert claimed[-1].fields == wide
    assert sorted(t.commit(claimed)) == sorted([*ids, wide_id])
    assert r.dbsize() == 0


# ---- publish_stream ------------------------------------------------------------------------------------


def test_publish_stream_fifo_across_chunks(make_client, redis_url, r):
    client = make_client(redis_url, chunk_size=3)
    t = client.topic('jobs')
    t.publish({'n': 'warm-up'})
    assert bodies(t.claim()) == ['warm-up']
    r.config_resetstat()
    assert t.publish_stream({'n': str(i), 'sq': str(i * i)} for i in range(10)) == 10
    stats = commandstats(r)
    assert stats.get('multi') == stats.get('exec') == 4, stats  # ceil(10 / 3) chunks, one transaction each
    assert r.llen('rfq:jobs:backlog') == 10
    claimed = t.claim(count=20)
    assert bodies(claimed) == [str(i) for i in range(10)]
    assert [m.fields for m in claimed] == [{'n': str(i), 'sq': str(i * i)} for i in range(10)]
    for m in claimed:
        assert_rfq_id(m.id)


def test_publish_stream_exact_chunks_and_lists(make_client, redis_url):
    t = make_client(redis_url, chunk_size=3).topic('jobs')
    assert t.publish_stream([{'n': str(i)} for i in range(6)]) == 6
    assert t.publish_stream(iter([{'n': '6'}])) == 1
    assert bodies(t.claim(count=10)) == [str(i) for i in range(7)]


def test_publish_stream_pulls_lazily(make_client, redis_url, r):
    t = make_client(redis_url, chunk_size=3).topic('jobs')
    seen: list[int] = []  # the backlog length when each message was pulled

    def messages():
        for i in range(12):
            seen.append(r.llen('rfq:jobs:backlog'))
            yield {'n': str(i)}

    assert t.publish_stream(messages()) == 12
    # At most one chunk is in flight: when a message of chunk c is pulled, chunks before c - 1 are written.
    for i, backlog in enumerate(seen):
        assert backlog >= 3 * max(0, i // 3 - 1), seen
    assert seen[-1] >= 6, seen
    assert bodies(t.claim(count=12)) == [str(i) for i in range(12)]


def test_publish_stream_bad_item_keeps_earlier_chunks(make_client, redis_url, r):
    t = make_client(redis_url, chunk_size=3).topic('jobs')
    messages = [{'n': '0'}, {'n': '1'}, {'n': '2'}, {'n': '3'}, {'n': 4}, {}, {'n': '6'}, {'n': '7'}]
    with pytest.raises(BatchError) as info:
        t.publish_stream(iter(messages))
    exc = info.value
    assert exc.published == 3
    assert [index for index, _ in exc.errors] == [4, 5]  # counted from the start of the stream
    assert all(isinstance(e, InvalidMessage) for _, e in exc.errors)
    assert 'from index 3' in str(exc)
    # The first chunk is published; nothing of the second (not even its good message 3) is written.
    assert r.llen('rfq:jobs:backlog') == 3
    assert len(queue_keys(r)) == 4  # the backlog and 3 messages (the chunk's record goes with the next request)
    assert bodies(t.claim(count=10)) == ['0', '1', '2']


def test_publish_stream_bad_first_chunk_writes_nothing(make_client, redis_url, r):
    t = make_client(redis_url, chunk_size=3).topic('jobs')
    with pytest.raises(BatchError) as info:
        t.publish_stream([{'n': '0'}, 'not a mapping'])
    assert info.value.published == 0
    assert [index for index, _ in info.value.errors] == [1]
    assert r.dbsize() == 0


def test_publish_stream_iterable_error_propagates_unchanged(make_client, redis_url, r):
    t = make_client(redis_url, chunk_size=3).topic('jobs')

    class Boom(Exception):
        pass

    def messages():
        for i in range(4):
            yield {'n': str(i)}
        raise Boom('the source failed')

    with pytest.raises(Boom, match='the source failed'):
        t.publish_stream(messages())
    assert bodies(t.claim(count=10)) == ['0', '1', '2']  # the chunk before the error; message 3 is dropped


def test_publish_stream_empty_is_a_no_op(client, r):
    r.config_resetstat()
    assert client.topic('jobs').publish_stream(iter([])) == 0
    assert client.topic('jobs').publish_stream([]) == 0
    assert r.dbsize() == 0
    stats = commandstats(r)
    assert stats.get('evalsha', 0) + stats.get('eval', 0) == 0, stats


@pytest.mark.parametrize('bad', [{'n': '1'}, 'abc', b'abc', 42, None])
def test_publish_stream_refuses_non_iterables(client, r, bad):
    with pytest.raises(InvalidArgument):
        client.topic('jobs').publish_stream(bad)
    assert r.dbsize() == 0


# The child's own peak RSS is VmHWM, its address space's high-water mark. Not ru_maxrss: Linux carries the
# peak of the process that spawned it across exec, so under a test process larger than the child's whole
# run it would show no growth at all.
_RSS_CHILD = textwrap.dedent(
    """
    import json, sys
    import ferroq

    def peak_kb():
        with open('/proc/self/status') as status:
            return next(int(line.split()[1]) for line in status if line.startswith('VmHWM:'))

    url, method, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t = ferroq.Client(url).topic('rss')
    t.publish_batch([{'payload': 'warm-up'}])  # connect and load the script before the baseline
    base = peak_kb()
    # A body of its own per message (200 digits), as real messages have: a batch holds them all at once.
    result = getattr(t, method)({'payload': f'{i:0200d}'} for i in range(n))
    count = result if isinstance(result, int) else len(result)
    print(json.dumps({'count': count, 'growth_kb': peak_kb() - base}))
    """
)


def _rss_growth_mb(redis_url: str, method: str, n: int) -> float:
    out = subprocess.run(
        [sys.executable, '-c', _RSS_CHILD, redis_url, method, str(n)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report['count'] == n
    return float(report['growth_kb']) / 1024


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason="VmHWM is in Linux's /proc/self/status")
def test_publish_stream_memory_stays_bounded(redis_url, r):
    n = 300_000
    streamed = _rss_growth_mb(redis_url, 'publish_stream', n)
    r.flushdb()
    batched = _rss_growth_mb(redis_url, 'publish_batch', n)
    # 300k messages of 200 bytes: materialising them costs well over 100 MB; a few chunks of 1000 do not.
    assert streamed < 40, (streamed, batched)
    assert batched > streamed + 60, (streamed, batched)
