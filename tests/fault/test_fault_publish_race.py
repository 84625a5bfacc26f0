"""A publish chunk is a watched transaction, and a publish of one message one script call (docs/protocol.md,
"publish and publish_batch"): these scenarios attack the one thing they must guarantee, that a chunk is written
at most once per record.

- A late transaction: the first attempt's MULTI ... EXEC reaches Redis only after the client gave up on that
  connection and a retry on a new one wrote the chunk; its EXEC must be aborted (the retry's SET touched the
  record it watches).
- A late single publish: the first attempt's script call arrives after the retry wrote the message and it was
  consumed; the record the retry left makes it write nothing.
- A publisher whose transaction is held while another one writes the same dedup key: its EXEC is aborted, the
  next round reads the record and writes nothing.
- Publishers of one dedup key racing from threads, with no help: every chunk is written exactly once.
- A full Redis (maxmemory, noeviction): the refused transaction writes nothing at all.

Each checks one copy of every message and no orphan message hash (a hash whose id is not in the backlog).
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
import redis
from _fault_proxy import TIMEOUT

from _adapters import KINDS, new_client
from ferroq import protocol
from ferroq.exceptions import FerroqError, OutOfMemory
from ferroq.protocol import keys

#: The MULTI that opens a chunk's transaction, as both clients send it.
MULTI = b'*1\r\n$5\r\nMULTI\r\n'
#: A call of the publish script (one message's publish), as both clients send it: EVALSHA with its hash.
PUBLISH_SCRIPT = protocol.script_hashes()['rfq/publish_one-3'].encode()
#: EXEC's reply when a watched key changed: a nil array (RESP2, the pure clients) or a null (RESP3, native).
ABORTED = (b'*-1\r\n', b'_\r\n')
ROWS = 300


def _table(n: int, tag: str = 'm') -> pa.Table:
    return pa.table({'k': [f'{tag}.{i}' for i in range(n)]})


def _assert_once(r: redis.Redis, topic: str, bodies: list[str]) -> list[str]:
    """Every body exactly once in the backlog, no orphan hash; returns the ids in publish order."""
    backlog = r.lrange(f'rfq:{topic}:backlog', 0, -1)[::-1]
    assert len(backlog) == len(set(backlog)) == len(bodies), f'{len(backlog)} ids for {len(bodies)} messages'
    prefix = f'rfq:{topic}:message:'
    hashes = {key[len(prefix) :] for key in r.scan_iter(match=f'{prefix}*', count=1000)}
    assert hashes == set(backlog), f'{len(hashes - set(backlog))} orphan message hashes'
    assert [r.hget(prefix + i, 'k') for i in backlog] == bodies
    return backlog


def _warm(t) -> None:
    """Connects (every connection the publish takes) before a fault is armed."""
    t.publish({'k': 'warm-up'})
    [warm] = t.claim()
    t.commit([warm])


@pytest.mark.parametrize('call', ['publish_batch', 'publish_arrow'])
@pytest.mark.parametrize('impl', KINDS)
def test_a_late_transaction_after_a_retry_is_aborted(impl, call, server, r, proxy, loop_thread):
    topic = 'late'
    bodies = [f'm.{i}' for i in range(ROWS)]
    client = new_client(impl, loop_thread, proxy.url, command_timeout=5.0)
    try:
        t = client.topic(topic)
        _warm(t)
        # The first attempt's transaction is held and its client side reset: the client retries on a new
        # connection, which writes the chunk; only then does the held transaction reach Redis.
        proxy.arm('hold-reset', MULTI)
        if call == 'publish_batch':
            ids = t.publish_batch([{'k': b} for b in bodies])
        else:
            assert t.publish_arrow(_table(ROWS), dedup_key='late-job') == (ROWS, ROWS)
        assert proxy.held.is_set(), 'the first attempt was never held'
        assert r.llen(f'rfq:{topic}:backlog') == ROWS  # the retry wrote the chunk
        late = proxy.release()
    finally:
        client.close()
    assert late is not None
    # The late transaction ran after the retry: every command queued (ROWS HSETs, the push, the record's SET),
    # then EXEC aborted, because the retry's SET touched the record it watched.
    queued = b'+OK\r\n' + b'+QUEUED\r\n' * (ROWS + 2)
    assert late in (queued + ABORTED[0], queued + ABORTED[1]), late[-40:]
    published = _assert_once(r, topic, bodies)
    if call == 'publish_batch':
        assert published == ids
        assert r.keys(f'rfq:{topic}:published:*') == []  # a plain publish deletes its record once written
    else:
        assert r.get(keys.rfq_published(topic, keys.dedup_token('late-job', 0))) == str(ROWS)


@pytest.mark.parametrize('impl', KINDS)
def test_a_late_single_publish_after_a_retry_writes_nothing(impl, server, r, proxy, loop_thread):
    """One message is one publish_one-3 call: the first attempt reaches Redis only after the retry wrote the
    message and a consumer claimed and committed it. The record the retry left finds it handled."""
    topic = 'late1'
    client = new_client(impl, loop_thread, proxy.url, command_timeout=5.0)
    try:
        t = client.topic(topic)
        _warm(t)
        proxy.arm('hold-reset', PUBLISH_SCRIPT, end=b'')  # the call alone: no transaction
        msg_id = t.publish({'k': 'once'})
        assert proxy.held.is_set(), 'the first attempt was never held'
        [msg] = t.claim()
        assert (msg.id, msg.fields) == (msg_id, {'k': 'once'})
        assert t.commit([msg]) == [msg_id]
        late = proxy.release()
    finally:
        client.close()
    assert late == b':0\r\n'  # the late call wrote nothing
    assert r.llen(f'rfq:{topic}:backlog') == 0 and not r.exists(f'rfq:{topic}:message:{msg_id}')
    # After a repeat the record is left to expire: the first attempt could still have arrived later.
    assert 0 < r.pttl(keys.rfq_published(topic, msg_id)) <= keys.STREAM_PUBLISH_TOKEN_MS


@pytest.mark.parametrize('impl', KINDS)
def test_a_held_publisher_writes_nothing_once_another_wrote_the_same_key(impl, server, r, proxy, loop_thread):
    topic = 'race'
    chunk = 100
    held = new_client(impl, loop_thread, proxy.url, chunk_size=chunk)
    direct = new_client(impl, loop_thread, server.url, chunk_size=chunk)
    result: dict[str, object] = {}
    try:
        _warm(held.topic(topic))
        # The held publisher read the record of its first chunk (unwritten), then its MULTI ... EXEC waits.
        proxy.arm('hold', MULTI)

        def publish() -> None:
            try:
                result['held'] = held.topic(topic).publish_arrow(_table(ROWS), dedup_key='race-job')
            except FerroqError as exc:  # reported below
                result['held'] = exc

        thread = threading.Thread(target=publish, daemon=True)
        thread.start()
        assert proxy.held.wait(TIMEOUT), 'the held publisher never sent its transaction'
        assert direct.topic(topic).publish_arrow(_table(ROWS), dedup_key='race-job') == (ROWS, ROWS)
        assert proxy.release() is None
        thread.join(3 * TIMEOUT)
        assert not thread.is_alive()
    finally:
        held.close()
        direct.close()
    # Its EXEC was aborted (the other publisher set the record it watched); the next round read that every
    # chunk was handled.
    assert result['held'] == (ROWS, 0)
    _assert_once(r, topic, [f'm.{i}' for i in range(ROWS)])
    records = [r.get(keys.rfq_published(topic, keys.dedup_token('race-job', k))) for k in range(ROWS // chunk)]
    assert records == [str(chunk)] * (ROWS // chunk)


@pytest.mark.parametrize('impl', KINDS)
def test_racing_publishers_of_one_dedup_key_write_each_chunk_once(impl, server, r, loop_thread):
    topic = 'racers'
    chunk, racers = 50, 4
    clients = [new_client(impl, loop_thread, server.url, chunk_size=chunk) for _ in range(racers)]
    start = threading.Barrier(racers, timeout=TIMEOUT)
    results: list[object] = [None] * racers

    def publish(i: int) -> None:
        try:
            start.wait()
            results[i] = clients[i].topic(topic).publish_arrow(_table(ROWS), dedup_key='racers-job')
        except (FerroqError, threading.BrokenBarrierError) as exc:  # reported below
            results[i] = exc

    try:
        threads = [threading.Thread(target=publish, args=(i,), daemon=True) for i in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(3 * TIMEOUT)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        for c in clients:
            c.close()
    assert all(isinstance(res, tuple) and res[0] == ROWS for res in results), results
    assert sum(res[1] for res in results) == ROWS, results  # type: ignore[index]
    _assert_once(r, topic, [f'm.{i}' for i in range(ROWS)])


@pytest.mark.parametrize('impl', KINDS)
def test_a_refused_transaction_writes_nothing(impl, server, r, loop_thread):
    topic = 'full'
    client = new_client(impl, loop_thread, server.url, chunk_size=100)
    try:
        t = client.topic(topic)
        _warm(t)
        before = r.dbsize()
        r.config_set('maxmemory-policy', 'noeviction')
        r.config_set('maxmemory', str(int(r.info('memory')['used_memory']) // 2))
        with pytest.raises(OutOfMemory, match='maxmemory'):
            t.publish_batch([{'k': f'm.{i}'} for i in range(ROWS)])
        with pytest.raises(OutOfMemory) as info:
            t.publish_arrow(_table(ROWS), dedup_key='full-job')
        assert info.value.published == 0
        # Nothing at all: no message hash, no backlog, no record (WATCH and GET ran, the queued writes were refused).
        assert r.dbsize() == before
        r.config_set('maxmemory', '0')
        # The connections are clean afterwards (no WATCH or MULTI left on them).
        assert t.publish_arrow(_table(ROWS), dedup_key='full-job') == (ROWS, ROWS)
    finally:
        r.config_set('maxmemory', '0')
        client.close()
    _assert_once(r, topic, [f'm.{i}' for i in range(ROWS)])
