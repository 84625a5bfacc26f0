"""Connections killed mid-batch: ``CLIENT KILL`` under load, and the fault proxy around single batches.

What they prove: a publish or commit whose connection breaks before, during or after the server ran it
is retried once and leaves each message exactly once (a publish chunk is guarded by its record, commit is fenced);
another client never sees part of a batch; under repeated CLIENT KILL nothing is lost or committed twice; a
claim whose connection breaks is never made twice.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
import redis
from _fault_history import body, delivery
from _fault_proxy import KINDS as FAULTS

import ferroq
from _adapters import KINDS, new_client
from conftest import pending, wait_for
from ferroq import protocol

LEASE = 1.5
CONSUMER = {'count': 10, 'lease': LEASE, 'harvest_every': 0.5, 'work': 0.01}
BATCH = 500


@pytest.mark.parametrize('impl', KINDS)
def test_client_kill_under_load(impl, server, r, procs, report):
    topic = 'ck'
    producers, _ = procs.load(impl, server.url, topic, {'batches': 40, 'batch': 25, 'pace': 0.03}, CONSUMER)
    wait_for('the drivers to connect', lambda: len(r.client_list(_type='normal')) > 4, timeout=20)
    kills, killed = procs.client_kills(r, random.Random(f'client-kill-{impl}'))
    counts = procs.settle(r, server.url, topic, producers, LEASE)
    report(f'client-kill[{impl}]', counts)
    counts.assert_targets({'unrecorded', 'expired'})
    assert killed >= kills  # every round cut live connections


def _script_sha(name: str) -> bytes:
    return protocol.script_hashes()[name].encode()


class Observer:
    """Polls LLEN of a list from another connection while a batch is written; keeps every length seen."""

    def __init__(self, port: int, key: str) -> None:
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._conn = redis.Redis(port=port, socket_timeout=5)
        self._thread = threading.Thread(target=self._poll, args=(key,), daemon=True)
        self._thread.start()

    def _poll(self, key: str) -> None:
        for _ in range(1_000_000):
            if self._stop.is_set():
                break
            self.seen.add(int(self._conn.llen(key)))

    def stop(self) -> set[int]:
        self._stop.set()
        self._thread.join(10)
        self._conn.close()
        return self.seen


@pytest.mark.parametrize('fault', FAULTS)
@pytest.mark.parametrize('impl', KINDS)
def test_batch_through_a_broken_connection(impl, fault, server, r, proxy, loop_thread, procs, report):
    """One publish_batch and one commit of BATCH messages, each hit by ``fault`` once."""
    topic = 'mid'
    client = new_client(impl, loop_thread, proxy.url, command_timeout=5.0)
    try:
        t = client.topic(topic)
        t.publish({'k': 'warm-up'})  # connects (and loads the script) before the fault is armed
        [warm] = t.claim()
        t.commit([warm])
        keys = [f'b.{i}' for i in range(BATCH)]
        observer = Observer(server.port, f'rfq:{topic}:backlog')
        proxy.arm(fault, b'*1\r\n$5\r\nMULTI\r\n')  # the chunk's transaction (docs/protocol.md)
        ids = t.publish_batch([body(k) for k in keys])
        procs.record('pub', keys=keys, ids=ids)
        seen = observer.stop()
        assert proxy.pending() == 0, 'the fault was never triggered'
        assert seen <= {0, BATCH}, f'another client saw part of the batch: {sorted(seen)[:10]}'
        assert r.llen(f'rfq:{topic}:backlog') == BATCH
        assert sorted(r.lrange(f'rfq:{topic}:backlog', 0, -1)) == sorted(ids)
        assert sorted(r.hget(f'rfq:{topic}:message:{i}', 'k') for i in ids) == sorted(keys)

        t0 = time.monotonic()
        msgs = t.claim(count=BATCH, lease=60.0)
        procs.record('claim', t0=t0, msgs=[delivery(m) for m in msgs])
        assert len(msgs) == BATCH
        proxy.arm(fault, _script_sha('rfq/commit-6n'))
        t0 = time.monotonic()
        done = t.commit(msgs)
        procs.record('commit', t0=t0, ids=[m.id for m in msgs], done=list(done))
        assert proxy.pending() == 0
        gone = sum(1 for i in ids if not r.exists(f'rfq:{topic}:message:{i}'))
        assert gone == BATCH, f'{gone} of {BATCH} committed: a partial commit or a lost retry'
        # A commit whose first reply was lost is retried, and the retry finds nothing left to commit:
        # the messages are gone either way, but only what the retry committed is reported.
        assert sorted(done) in (sorted(ids), []), done
        if fault == 'drop-request':
            assert sorted(done) == sorted(ids)
        assert t.claim(count=BATCH) == [] and pending(r, topic) == 0
        assert not r.exists(f'rfq:{topic}:leases', f'rfq:{topic}:claims', f'rfq:{topic}:inflight')
    finally:
        client.close()
    counts = procs.drained(r, server.url, topic, 60.0)
    report(f'mid-batch-{fault}[{impl}]', counts)
    counts.assert_targets(set())
    assert counts.duplicated == 0 and counts.published == BATCH


@pytest.mark.parametrize('fault', FAULTS)
@pytest.mark.parametrize('impl', KINDS)
def test_claim_through_a_broken_connection(impl, fault, server, r, proxy, loop_thread):
    """A claim hit by ``fault`` returns the message, or fails with ConnectionFailed and leaves it to come back
    once its lease ends (claimed once more, its deliveries counted): never lost, never held by two claims. A
    claim is not repeated after a drop, except a native sync claim that its blocking connection lost before
    it ran (its record shows it was not made): that one returns the message."""
    topic = 'claim-fault'
    client = new_client(impl, loop_thread, proxy.url, command_timeout=5.0)
    try:
        t = client.topic(topic)
        t.publish({'k': 'warm-up'})  # connects and loads the scripts before the fault is armed
        [warm] = t.claim()
        t.commit([warm])
        [mid] = t.publish_batch([{'k': 'v'}])
        proxy.arm(fault, _script_sha('rfq/claim-8n'), end=b'')
        try:
            got = t.claim(lease=LEASE)
        except ferroq.ConnectionFailed:
            got = None
        assert proxy.pending() == 0, 'the fault was never triggered'
        if fault == 'drop-reply':
            assert got is None  # the claim was made: making it again would hold the message for nobody
        if fault == 'drop-request' and impl == 'native':
            assert got is not None  # the claim was not made: it is made again
        if got is None:
            # Claimed at once when the failed claim was not made, else once its lease ends (10x its length to
            # come back), then counted as a second delivery.
            deadline = time.monotonic() + 10 * LEASE
            while not got and time.monotonic() < deadline:
                time.sleep(0.05)
                t.harvest()
                got = t.claim()
            assert got, 'the message never came back'
            made = {'drop-request': [1], 'drop-reply': [2], 'reset': [1, 2]}[fault]
            assert got[0].deliveries in made
        else:
            assert got[0].deliveries == 1
        assert [m.id for m in got] == [mid]
        assert t.commit(got) == [mid]
        assert t.claim() == [] and pending(r, topic) == 0
        assert not r.exists(f'rfq:{topic}:leases', f'rfq:{topic}:claims', f'rfq:{topic}:inflight')
    finally:
        client.close()


@pytest.mark.parametrize('impl', ['native-async', 'pure-async'])
def test_idle_connection_closed_while_the_loop_is_stopped(impl, server, r):
    """The server closes the client's idle pooled connections while its event loop does not run (one
    run_until_complete per call, as a program that is not async elsewhere does): the next call must take a
    fresh connection, not fail on the dead one; ack is never resent, so a failure would reach the caller."""
    import asyncio

    from _adapters import client_class

    loop = asyncio.new_event_loop()

    def run(fn, *args):
        async def call():  # the native async client makes its future inside the running loop
            return await fn(*args)

        return loop.run_until_complete(call())

    try:
        client = run(_make, client_class(impl), server.url)
        stream = client.stream('idle')
        group = stream.group('g', 'c1')
        run(group.create, '0')
        run(stream.publish_batch, [{'n': str(i)} for i in range(4)])
        entries = run(group.read, 4)
        acked = []
        for entry in entries:
            assert r.client_kill_filter(_type='normal', skipme=True) >= 1
            time.sleep(0.05)  # the FIN arrives while the loop is stopped
            acked += run(group.ack, [entry])
        assert acked == [e.id for e in entries] and len(acked) == 4
        run(client.close)
    finally:
        loop.close()


async def _make(cls, url):
    return cls(url)
