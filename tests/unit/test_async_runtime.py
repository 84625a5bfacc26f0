"""How the asyncio client hands results to event loops: per loop, on loops that cannot watch a socket, cancelled."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import ferroq
from _checks import run_in_threads


class _NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop that cannot watch a socket, like Windows' proactor loop."""

    refused = 0

    def add_reader(self, *args: Any) -> None:
        self.refused += 1
        raise NotImplementedError


async def _round_trips(c: ferroq.AsyncClient, topic: str, n: int) -> None:
    t = c.topic(topic)
    for i in range(n):
        await t.publish({'i': str(i)})
        [m] = await t.claim()
        assert m.fields == {'i': str(i)}
        assert await t.commit([m]) == [m.id]


def test_loop_that_cannot_watch_a_socket(redis_url, r):
    async def main() -> None:
        c = ferroq.AsyncClient(redis_url)
        try:
            await _round_trips(c, 'proactor', 20)
            with pytest.raises(ferroq.exceptions.InvalidArgument):
                await c.topic('proactor').claim(count=0)
        finally:
            await c.close()

    loop = _NoReaderLoop()
    try:
        loop.run_until_complete(asyncio.wait_for(main(), 60))
    finally:
        loop.close()
    assert loop.refused == 1  # asked once, then every result came through call_soon_threadsafe
    assert r.dbsize() == 0


def test_one_client_on_loops_in_several_threads(redis_url, r):
    """Each result reaches the loop that made the call."""
    c = ferroq.AsyncClient(redis_url)
    errors = run_in_threads(lambda n: asyncio.run(asyncio.wait_for(_round_trips(c, f'loop-{n}', 50), 60)), 3, 90)
    assert errors == []
    assert r.dbsize() == 0


def test_cancelled_blocking_claim_lets_go_of_the_server(redis_url, r):
    """Cancelling ``claim(block=60)`` aborts its BLMOVE: a message published next goes to the next claim."""

    async def main() -> None:
        c = ferroq.AsyncClient(redis_url)
        try:
            t = c.topic('cancel')
            await t.claim()  # connected
            waiting = asyncio.ensure_future(t.claim(block=60))
            deadline = time.monotonic() + 10
            while not r.info('clients')['blocked_clients'] and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert r.info('clients')['blocked_clients'] == 1
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            while r.info('clients')['blocked_clients'] and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert r.info('clients')['blocked_clients'] == 0
            await t.publish({'n': '1'})
            [m] = await t.claim()
            assert await t.commit([m]) == [m.id]
        finally:
            await c.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert r.dbsize() == 0


def test_a_deferred_claim_makes_its_messages_when_asked(redis_url, r):
    """_claim_deferred (native clients, used by AsyncBatches and the worker): the same claim as claim(), its
    messages made by messages(), once; an empty claim is an empty, falsy batch."""
    sync = ferroq.Client(redis_url)
    try:
        sync.topic('deferred').publish_batch([{'i': str(i)} for i in range(5)])
        sync.topic('deferred.2').publish({'i': 'other'})

        async def main() -> None:
            c = ferroq.AsyncClient(redis_url)
            try:
                t = c.topic('deferred')
                batch = await t._claim_deferred(count=2, lease=60)
                assert isinstance(batch, ferroq._ferroq.DeferredBatch)
                assert len(batch) == 2 and repr(batch) == 'DeferredBatch(len=2)'
                first = batch.messages()
                assert [m.fields for m in first] == [{'i': '0'}, {'i': '1'}]
                assert {m.topic for m in first} == {'deferred'} and {m.deliveries for m in first} == {1}
                with pytest.raises(RuntimeError, match='already taken'):
                    batch.messages()
                across = await c._claim_deferred(['deferred.2', 'deferred'], count=3, owner='w1')
                made = across.messages()
                assert [(m.topic, m.fields) for m in made] == [
                    ('deferred.2', {'i': 'other'}),
                    ('deferred', {'i': '2'}),
                    ('deferred', {'i': '3'}),
                ]
                assert sorted(await c.commit(first + made)) == sorted(m.id for m in first + made)
                with pytest.raises(ferroq.exceptions.InvalidArgument):
                    await t._claim_deferred(count=0)
            finally:
                await c.close()

        asyncio.run(asyncio.wait_for(main(), 60))
        last = sync.topic('deferred')._claim_deferred(count=10)
        assert len(last) == 1
        [m] = last.messages()
        assert m.fields == {'i': '4'}
        empty = sync._claim_deferred(['deferred'], count=10)
        assert not empty and len(empty) == 0 and empty.messages() == []
        assert sync.commit([m]) == [m.id]
        assert r.llen('rfq:deferred:backlog') == r.llen('rfq:deferred:nextlog') == 0
    finally:
        sync.close()


def test_a_deferred_receive_makes_its_messages_when_asked(redis_url, r):
    """_receive_batch_deferred (native RSMQ queues, used by AsyncRsmqBatches): the same receive as receive_batch(),
    its messages made by messages(), once."""
    sync = ferroq.Client(redis_url)
    try:
        q = sync.rsmq('deferred')
        q.create()
        sent = q.send_batch(['a', 'b', 'c'])

        async def main() -> None:
            c = ferroq.AsyncClient(redis_url)
            try:
                batch = await c.rsmq('deferred')._receive_batch_deferred(2, vt=60)
                assert isinstance(batch, ferroq._ferroq.DeferredBatch) and len(batch) == 2
                got = batch.messages()
                assert [(m.id, m.message, m.rc) for m in got] == [(sent[0], 'a', 1), (sent[1], 'b', 1)]
                with pytest.raises(RuntimeError, match='already taken'):
                    batch.messages()
                assert await c.rsmq('deferred').delete_batch([m.id for m in got]) == [m.id for m in got]
                with pytest.raises(ferroq.exceptions.InvalidArgument):
                    await c.rsmq('deferred')._receive_batch_deferred(0)
            finally:
                await c.close()

        asyncio.run(asyncio.wait_for(main(), 60))
        last = q._receive_batch_deferred(10)
        assert len(last) == 1
        [m] = last.messages()
        assert (m.id, m.message) == (sent[2], 'c')
        assert len(q._receive_batch_deferred(10)) == 0  # the last one is hidden for its vt
        assert q.delete(m.id)
        assert r.zcard('rsmq:deferred') == 0
    finally:
        sync.close()
