"""The registered operations and implementations: ferroq's four clients, raw redis-py, PyRSMQ and rfq 1.4.0.

To benchmark a new client or operation, write a session class (``setup``/``step``/``close``, see
``_registry``) and add it to an :class:`Impl` here; the matrix, the table, the JSON, the targets and
``benches/`` pick it up. ferroq's four clients (``native``, ``native-async``, ``pure``, ``pure-async``)
register four kinds of session: rfq topics (publish, claim+commit), RSMQ queues over ``client.rsmq(name)``
(send, receive+delete), Streams topics over ``client.stream(name)`` (publish, read+ack in group 'g') and
the worker: ``ferroq.Worker`` (``AsyncWorker`` on the async clients) with a no-op handler, run in burst
mode over the prefilled topic, so one step drains it (``Operation.drains``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from ferroq.bench._common import LEASE, Admin, Config, Progress, Row, Sample, payload
from ferroq.bench._registry import OPERATIONS, Context, Impl, Operation, register, register_operation
from ferroq.bench._wire import (
    RFQ_CLAIM_BATCH,
    RFQ_COMMIT_BATCH,
    RSMQ_RECEIVE,
    rfq_ids,
    rfq_keys,
    rsmq_ids,
    rsmq_keys,
    stream_key,
)

if TYPE_CHECKING:
    from ferroq.batches import AsyncBatches, AsyncRsmqBatches, Batches, RsmqBatches
    from ferroq.typing import AsyncClientProtocol, ClientProtocol

__all__ = [
    'CLAIM',
    'CLAIM_COMMIT',
    'PUBLISH',
    'RSMQ_RECV_DELETE',
    'RSMQ_SEND',
    'STREAM_PUBLISH',
    'STREAM_READ_ACK',
    'WORKER',
]

PUBLISH = register_operation(Operation('publish', 'rfq', 'rfq publish', 'rfq publish (batch 1) / publish_batch')).name
CLAIM_COMMIT = register_operation(
    Operation(
        'claim+commit',
        'rfq',
        'rfq claim+commit',
        'claim a batch, then commit it (ferroq clients: Topic.batches(count=batch), the next claim in flight)',
    )
).name
# One message per call, uncommitted: what a single claim of a client costs (batch 1 only; the single claim target
# measures it against its calls made through redis-rs alone).
CLAIM = register_operation(
    Operation('claim', 'rfq', None, 'a single claim: Topic.claim() of one message, not committed (batch 1)')
).name
RSMQ_SEND = register_operation(Operation('rsmq send', 'rsmq', 'rsmq send', 'RSMQ sendMessage / send_batch')).name
RSMQ_RECV_DELETE = register_operation(
    Operation(
        'rsmq receive+delete',
        'rsmq',
        'rsmq receive+delete',
        'RSMQ receiveMessage + deleteMessage (batched; ferroq clients: RsmqQueue.batches(count=batch), the next '
        'receive in flight)',
    )
).name
STREAM_PUBLISH = register_operation(
    Operation('stream publish', 'stream', 'stream publish', 'Stream publish / publish_batch (XADD per message)')
).name
STREAM_READ_ACK = register_operation(
    Operation('stream read+ack', 'stream', 'stream read+ack', 'XREADGROUP COUNT batch, then XACK of those ids')
).name
# A worker with a no-op handler (claim, handle, commit, on an rfq topic); the batch is its prefetch.
WORKER = register_operation(
    Operation(
        'worker',
        'rfq',
        'rfq claim+commit',
        'Worker / AsyncWorker, no-op handler, concurrency 1, claims of batch (prefetch 2 x batch), burst mode over the prefill',
        drains=True,
    )
).name

_FIELD = 'payload'


# --- prefill and clean-up of each family's keys (untimed) --------------------------------------------------


_native_clients: dict[str, ClientProtocol] = {}


def _writer(url: str) -> ClientProtocol:
    """A client to prefill rfq topics with: the native one when it is built, else the pure one."""
    if url not in _native_clients:
        try:
            import ferroq

            _native_clients[url] = ferroq.Client(url)
        except ImportError:
            import ferroq.pure

            _native_clients[url] = ferroq.pure.Client(url)
    return _native_clients[url]


def close_writers() -> None:
    for client in _native_clients.values():
        with contextlib.suppress(Exception):
            client.close()
    _native_clients.clear()


def prefill(ctx: Context, family: str, n: int) -> None:
    """Make ``n`` messages of ``ctx.cfg.size`` bytes ready in the queue ``ctx.name`` of ``family``."""
    body = payload(ctx.cfg.size)
    if family == 'rfq':
        topic = _writer(ctx.cfg.url).topic(ctx.name)
        for i in range(0, n, 1000):
            topic.publish_batch([{_FIELD: body}] * min(1000, n - i))
    elif family == 'rsmq':
        rsmq_create(ctx.admin.r, ctx.name)
        zset, q = rsmq_keys(ctx.name)
        for i in range(0, n, 1000):
            ids = rsmq_ids(min(1000, n - i))
            now = int(time.time() * 1000)
            with ctx.admin.r.pipeline(transaction=True) as p:
                p.zadd(zset, dict.fromkeys(ids, now))
                p.hset(q, mapping=dict.fromkeys(ids, body))
                p.hincrby(q, 'totalsent', len(ids))
                p.execute()
    elif family == 'stream':
        key = stream_key(ctx.name)
        for i in range(0, n, 1000):
            with ctx.admin.r.pipeline(transaction=False) as p:
                for _ in range(min(1000, n - i)):
                    p.xadd(key, {_FIELD: body})
                p.execute()


def rsmq_create(r: redis.Redis, qname: str) -> None:
    """createQueue as RSMQ does it (vt 30 s, delay 0, maxsize 65536), so PyRSMQ sees a real queue."""
    _, q = rsmq_keys(qname)
    sec = int(r.time()[0])
    r.hset(q, mapping={'vt': 30, 'delay': 0, 'maxsize': 65536, 'created': sec, 'modified': sec})
    r.sadd('rsmq:QUEUES', qname)


def sweep_topic(url: str, admin: Admin, name: str) -> None:
    """Delete an rfq topic of the run: purge (server-side, in slices) its queued messages, then sweep the rest."""
    topic = _writer(url).topic(name)
    for queue in ('backlog', 'nextlog'):
        topic.purge(queue)
    admin.sweep(f'rfq:{name}:*')


def cleanup(ctx: Context, family: str) -> None:
    if family == 'rfq':
        sweep_topic(ctx.cfg.url, ctx.admin, ctx.name)
    elif family == 'rsmq':
        ctx.admin.r.unlink(*rsmq_keys(ctx.name))
        ctx.admin.r.srem('rsmq:QUEUES', ctx.name)
        ctx.admin.sweep(f'rsmq:{ctx.name}:published:*')  # the send tokens' records
    elif family == 'stream':
        ctx.admin.r.unlink(stream_key(ctx.name))
        ctx.admin.sweep(stream_key(ctx.name) + ':*')  # the publish tokens' records


# --- ferroq's clients ------------------------------------------------------------------------------------


class _TopicSession:
    """publish / claim+commit on one rfq topic with a ferroq client (native or pure, sync)."""

    def __init__(self, ctx: Context, client: ClientProtocol) -> None:
        self.ctx, self.client, self.op = ctx, client, ctx.op
        self.topic = client.topic(ctx.name)
        self.msgs = [{_FIELD: payload(ctx.cfg.size)}] * ctx.batch
        self.batches: Batches | None = None  # claim+commit's loop, made by setup

    def setup(self, n: int) -> None:
        # one small cycle first: opens the connections and loads the scripts
        self.topic.publish_batch(self.msgs[:10])
        self.topic.commit(self.topic.claim(count=10, lease=LEASE))
        if self.op in (CLAIM, CLAIM_COMMIT):
            prefill(self.ctx, 'rfq', n)
        if self.op == CLAIM_COMMIT:
            # The loop a user writes: each batch committed while the next one is claimed. The prefill is
            # exactly n messages, so the batches end with it.
            self.batches = self.topic.batches(self.ctx.batch, lease=LEASE)

    def step(self, k: int) -> int:
        if self.op == PUBLISH:
            if self.ctx.batch == 1:
                self.topic.publish(self.msgs[0])
                return 1
            return len(self.topic.publish_batch(self.msgs[:k]))
        if self.op == CLAIM:
            return len(self.topic.claim(lease=LEASE))
        assert self.batches is not None
        batch = next(self.batches, None)
        return 0 if batch is None else len(self.topic.commit(batch))

    def close(self) -> None:
        try:
            if self.batches is not None:
                self.batches.close()
            self.client.close()
        finally:
            cleanup(self.ctx, 'rfq')


class _AsyncTopicSession:
    """The same with a ferroq asyncio client."""

    def __init__(self, ctx: Context, client: AsyncClientProtocol) -> None:
        self.ctx, self.client, self.op = ctx, client, ctx.op
        self.topic = client.topic(ctx.name)
        self.msgs = [{_FIELD: payload(ctx.cfg.size)}] * ctx.batch
        self.batches: AsyncBatches | None = None  # claim+commit's loop, made by setup

    async def setup(self, n: int) -> None:
        await self.topic.publish_batch(self.msgs[:10])
        await self.topic.commit(await self.topic.claim(count=10, lease=LEASE))
        if self.op in (CLAIM, CLAIM_COMMIT):
            prefill(self.ctx, 'rfq', n)
        if self.op == CLAIM_COMMIT:
            self.batches = self.topic.batches(self.ctx.batch, lease=LEASE)

    async def step(self, k: int) -> int:
        if self.op == PUBLISH:
            if self.ctx.batch == 1:
                await self.topic.publish(self.msgs[0])
                return 1
            return len(await self.topic.publish_batch(self.msgs[:k]))
        if self.op == CLAIM:
            return len(await self.topic.claim(lease=LEASE))
        assert self.batches is not None
        try:
            batch = await self.batches.__anext__()  # anext() is Python 3.10+
        except StopAsyncIteration:
            return 0
        return len(await self.topic.commit(batch))

    async def close(self) -> None:
        try:
            if self.batches is not None:
                await self.batches.close()
            await self.client.close()
        finally:
            cleanup(self.ctx, 'rfq')


class _RsmqSession:
    """send / receive+delete on one RSMQ queue with a ferroq client (native or pure, sync)."""

    def __init__(self, ctx: Context, client: ClientProtocol) -> None:
        self.ctx, self.client, self.op = ctx, client, ctx.op
        self.queue = client.rsmq(ctx.name)
        self.msgs = [payload(ctx.cfg.size)] * ctx.batch
        self.batches: RsmqBatches | None = None  # receive+delete's loop (batches > 1), made by setup

    def setup(self, n: int) -> None:
        if self.op == RSMQ_RECV_DELETE:
            prefill(self.ctx, 'rsmq', n)  # creates the queue the way RSMQ does
        else:
            self.queue.create(maxsize=-1)
        # one small cycle of each call first (net zero messages): opens the connections and loads the scripts
        self.queue.send_batch(self.msgs[:1])
        self.queue.send(self.msgs[0])
        self.queue.delete_batch([m.id for m in self.queue.receive_batch(1)])
        received = self.queue.receive()
        if received is not None:  # it is: the send above made it visible
            self.queue.delete(received.id)
        if self.op == RSMQ_RECV_DELETE and self.ctx.batch > 1:
            # The loop a user writes: each batch deleted while the next one is received. The queue holds
            # exactly n messages, so the batches end with it.
            self.batches = self.queue.batches(self.ctx.batch)

    def step(self, k: int) -> int:
        if self.op == RSMQ_SEND:
            if self.ctx.batch == 1:
                self.queue.send(self.msgs[0])
                return 1
            return len(self.queue.send_batch(self.msgs[:k]))
        if self.ctx.batch == 1:
            msg = self.queue.receive()
            return 0 if msg is None else int(self.queue.delete(msg.id))
        assert self.batches is not None
        batch = next(self.batches, None)
        return 0 if batch is None else len(self.queue.delete_batch([m.id for m in batch]))

    def close(self) -> None:
        try:
            if self.batches is not None:
                self.batches.close()
            self.client.close()
        finally:
            cleanup(self.ctx, 'rsmq')


class _AsyncRsmqSession:
    """The same with a ferroq asyncio client."""

    def __init__(self, ctx: Context, client: AsyncClientProtocol) -> None:
        self.ctx, self.client, self.op = ctx, client, ctx.op
        self.queue = client.rsmq(ctx.name)
        self.msgs = [payload(ctx.cfg.size)] * ctx.batch
        self.batches: AsyncRsmqBatches | None = None  # receive+delete's loop (batches > 1), made by setup

    async def setup(self, n: int) -> None:
        if self.op == RSMQ_RECV_DELETE:
            prefill(self.ctx, 'rsmq', n)
        else:
            await self.queue.create(maxsize=-1)
        await self.queue.send_batch(self.msgs[:1])
        await self.queue.send(self.msgs[0])
        await self.queue.delete_batch([m.id for m in await self.queue.receive_batch(1)])
        received = await self.queue.receive()
        if received is not None:  # it is: the send above made it visible
            await self.queue.delete(received.id)
        if self.op == RSMQ_RECV_DELETE and self.ctx.batch > 1:
            self.batches = self.queue.batches(self.ctx.batch)

    async def step(self, k: int) -> int:
        if self.op == RSMQ_SEND:
            if self.ctx.batch == 1:
                await self.queue.send(self.msgs[0])
                return 1
            return len(await self.queue.send_batch(self.msgs[:k]))
        if self.ctx.batch == 1:
            msg = await self.queue.receive()
            return 0 if msg is None else int(await self.queue.delete(msg.id))
        assert self.batches is not None
        try:
            batch = await self.batches.__anext__()  # anext() is Python 3.10+
        except StopAsyncIteration:
            return 0
        return len(await self.queue.delete_batch([m.id for m in batch]))

    async def close(self) -> None:
        try:
            if self.batches is not None:
                await self.batches.close()
            await self.client.close()
        finally:
            cleanup(self.ctx, 'rsmq')


class _StreamSession:
    """publish / read+ack on one Streams topic with a ferroq client (native or pure, sync), group 'g'."""

    def __init__(self, ctx: Context, client: ClientProtocol) -> None:
        self.ctx, self.client, self.op = ctx, client, ctx.op
        self.stream = client.stream(ctx.name)
        self.group = self.stream.group('g', 'c')
        self.msgs = [{_FIELD: payload(ctx.cfg.size)}] * ctx.batch

    def setup(self, n: int) -> None:
        # the group reads what is added after it (the warm-up, then the prefill); exist_ok: setup may run again
        self.group.create('$')
        # one small cycle first: opens the connections and loads the scripts
        self.group.ack(self.group.read(len(self.stream.publish_batch(self.msgs[:10]))))
        if self.op == STREAM_READ_ACK:
            prefill(self.ctx, 'stream', n)

    def step(self, k: int) -> int:
        if self.op == STREAM_PUBLISH:
            if self.ctx.batch == 1:
                self.stream.publish(self.msgs[0])
                return 1
            return len(self.stream.publish_batch(self.msgs[:k]))
        return len(self.group.ack(self.group.read(k)))

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            cleanup(self.ctx, 'stream')


class _AsyncStreamSession:
    """The same with a ferroq asyncio client."""

    def __init__(self, ctx: Context, client: AsyncClientProtocol) -> None:
        self.ctx, self.client, self.op = ctx, client, ctx.op
        self.stream = client.stream(ctx.name)
        self.group = self.stream.group('g', 'c')
        self.msgs = [{_FIELD: payload(ctx.cfg.size)}] * ctx.batch

    async def setup(self, n: int) -> None:
        await self.group.create('$')
        published = await self.stream.publish_batch(self.msgs[:10])
        await self.group.ack(await self.group.read(len(published)))
        if self.op == STREAM_READ_ACK:
            prefill(self.ctx, 'stream', n)

    async def step(self, k: int) -> int:
        if self.op == STREAM_PUBLISH:
            if self.ctx.batch == 1:
                await self.stream.publish(self.msgs[0])
                return 1
            return len(await self.stream.publish_batch(self.msgs[:k]))
        return len(await self.group.ack(await self.group.read(k)))

    async def close(self) -> None:
        try:
            await self.client.close()
        finally:
            cleanup(self.ctx, 'stream')


def _noop(msg: Any) -> None:
    pass


async def _async_noop(msg: Any) -> None:
    pass


def _worker_options(ctx: Context) -> dict[str, Any]:
    # concurrency 1 as BullMQ's reference figure; the batch is how many messages one claim may take: a claim
    # takes up to half the prefetch, so the worker holds at most two batches, as the claim+commit loop does
    # (the batch it handles and the next one, claimed ahead); a short poll, so the burst ends soon after the
    # topic is empty; no harvester (nothing is left to requeue)
    return {
        'concurrency': 1,
        'prefetch': 2 * ctx.batch,
        'lease': LEASE,
        'poll': 0.01,
        'harvest_interval': None,
        'burst': True,
        'handle_signals': False,
    }


class _WorkerSession:
    """``ferroq.Worker`` with a no-op handler: ``step`` runs one in burst mode until the topic is empty."""

    def __init__(self, ctx: Context, client: ClientProtocol) -> None:
        self.ctx, self.client, self.warm = ctx, client, False

    def setup(self, n: int) -> None:
        if not self.warm:  # one small run first: opens the connections and loads the scripts
            prefill(self.ctx, 'rfq', 10)
            self.step(10)
            self.warm = True
        prefill(self.ctx, 'rfq', n)

    def step(self, k: int) -> int:
        import ferroq

        return ferroq.Worker(self.client, self.ctx.name, _noop, **_worker_options(self.ctx)).run().committed

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            cleanup(self.ctx, 'rfq')


class _AsyncWorkerSession:
    """``ferroq.AsyncWorker`` with an ``async def`` no-op handler, the same way."""

    def __init__(self, ctx: Context, client: AsyncClientProtocol) -> None:
        self.ctx, self.client, self.warm = ctx, client, False

    async def setup(self, n: int) -> None:
        if not self.warm:
            prefill(self.ctx, 'rfq', 10)
            await self.step(10)
            self.warm = True
        prefill(self.ctx, 'rfq', n)

    async def step(self, k: int) -> int:
        import ferroq

        worker = ferroq.AsyncWorker(self.client, self.ctx.name, _async_noop, **_worker_options(self.ctx))
        return (await worker.run()).committed

    async def close(self) -> None:
        try:
            await self.client.close()
        finally:
            cleanup(self.ctx, 'rfq')


def _native_missing(cfg: Config) -> str | None:
    return None if importlib.util.find_spec('ferroq._ferroq') else 'the native module ferroq._ferroq is not built'


def _new_client(kind: str, url: str) -> ClientProtocol:
    if kind == 'native':
        import ferroq

        return ferroq.Client(url)
    import ferroq.pure

    return ferroq.pure.Client(url)


def _new_async_client(kind: str, url: str) -> AsyncClientProtocol:
    if kind == 'native':
        import ferroq

        return ferroq.AsyncClient(url)
    import ferroq.pure

    return ferroq.pure.AsyncClient(url)


def _sync_factory(kind: str, session: Any) -> Any:
    def make(ctx: Context) -> Any:
        return session(ctx, _new_client(kind, ctx.cfg.url))

    return make


def _async_factory(kind: str, session: Any) -> Any:
    async def make(ctx: Context) -> Any:  # the asyncio clients are made inside the running loop
        return session(ctx, _new_async_client(kind, ctx.cfg.url))

    return make


_SESSIONS = {  # operation: (sync session, async session) of ferroq's clients
    PUBLISH: (_TopicSession, _AsyncTopicSession),
    CLAIM: (_TopicSession, _AsyncTopicSession),
    CLAIM_COMMIT: (_TopicSession, _AsyncTopicSession),
    RSMQ_SEND: (_RsmqSession, _AsyncRsmqSession),
    RSMQ_RECV_DELETE: (_RsmqSession, _AsyncRsmqSession),
    STREAM_PUBLISH: (_StreamSession, _AsyncStreamSession),
    STREAM_READ_ACK: (_StreamSession, _AsyncStreamSession),
    WORKER: (_WorkerSession, _AsyncWorkerSession),
}

for _kind, _pure in (('native', False), ('pure', True)):
    register(
        Impl(
            _kind,
            pure_python=_pure,
            doc=f'ferroq.{"Client" if _kind == "native" else "pure.Client"}',
            sessions={op: _sync_factory(_kind, s) for op, (s, _) in _SESSIONS.items()},
            batches={CLAIM: (1,)},
            available=_native_missing if _kind == 'native' else lambda cfg: None,
        )
    )
    register(
        Impl(
            f'{_kind}-async',
            pure_python=_pure,
            doc=f'ferroq.{"AsyncClient" if _kind == "native" else "pure.AsyncClient"}, --concurrency tasks',
            sessions={op: _async_factory(_kind, a) for op, (_, a) in _SESSIONS.items()},
            batches={CLAIM: (1,)},
            is_async=True,
            available=_native_missing if _kind == 'native' else lambda cfg: None,
        )
    )


# --- raw redis-py: each protocol command by command, pipelined per batch ------------------------------------


class _RawSession:
    """The protocols' own commands from redis-py (hiredis when installed), one pipeline per batch step.

    rfq: HSET + LPUSH per message; claim is LMOVE×k, then HGETALL×k, then LREM -1 + DEL per message (three
    round trips per batch). RSMQ: one MULTI per batch of ZADD + HSET per message and one HINCRBY; receive is
    EVALSHA×k, then one MULTI of ZREM + HDEL per message. Streams: XADD×k; XREADGROUP COUNT k, then XACK.
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx, self.op = ctx, ctx.op
        self.family = OPERATIONS[self.op].family
        self.r = redis.Redis.from_url(ctx.cfg.url, decode_responses=True)
        self.body = payload(ctx.cfg.size)
        self.sha = ''

    def setup(self, n: int) -> None:
        self.r.ping()
        if self.op in (CLAIM_COMMIT, RSMQ_RECV_DELETE, STREAM_READ_ACK):
            prefill(self.ctx, self.family, n)
        if self.op == RSMQ_SEND:
            rsmq_create(self.r, self.ctx.name)
        if self.op == RSMQ_RECV_DELETE:
            self.sha = str(self.r.script_load(RSMQ_RECEIVE))
        if self.op == STREAM_READ_ACK:
            self.r.xgroup_create(stream_key(self.ctx.name), 'g', id='0', mkstream=True)

    def step(self, k: int) -> int:
        return int(getattr(self, '_' + self.op.replace(' ', '_').replace('+', '_'))(k))

    def _publish(self, k: int) -> int:
        backlog, _, prefix = rfq_keys(self.ctx.name)
        with self.r.pipeline(transaction=False) as p:
            for i in rfq_ids(k):
                p.hset(prefix + i, _FIELD, self.body)
                p.lpush(backlog, i)
            p.execute()
        return k

    def _claim_commit(self, k: int) -> int:
        backlog, nextlog, prefix = rfq_keys(self.ctx.name)
        with self.r.pipeline(transaction=False) as p:
            for _ in range(k):
                p.lmove(backlog, nextlog, 'RIGHT', 'LEFT')
            ids = [i for i in p.execute() if i]
            for i in ids:
                p.hgetall(prefix + i)
            p.execute()
            for i in ids:
                p.lrem(nextlog, -1, i)
                p.delete(prefix + i)
            p.execute()
        return len(ids)

    def _rsmq_send(self, k: int) -> int:
        zset, q = rsmq_keys(self.ctx.name)
        now = int(time.time() * 1000)
        with self.r.pipeline(transaction=True) as p:
            for i in rsmq_ids(k):
                p.zadd(zset, {i: now})
                p.hset(q, i, self.body)
            p.hincrby(q, 'totalsent', k)
            p.execute()
        return k

    def _rsmq_receive_delete(self, k: int) -> int:
        zset, q = rsmq_keys(self.ctx.name)
        now = int(time.time() * 1000)
        with self.r.pipeline(transaction=False) as p:
            for _ in range(k):
                p.evalsha(self.sha, 3, zset, now, now + 30_000)
            got = [m[0] for m in p.execute() if m]
        with self.r.pipeline(transaction=True) as p:
            for i in got:
                p.zrem(zset, i)
                p.hdel(q, i, f'{i}:rc', f'{i}:fr')
            p.execute()
        return len(got)

    def _stream_publish(self, k: int) -> int:
        key = stream_key(self.ctx.name)
        with self.r.pipeline(transaction=False) as p:
            for _ in range(k):
                p.xadd(key, {_FIELD: self.body})
            p.execute()
        return k

    def _stream_read_ack(self, k: int) -> int:
        key = stream_key(self.ctx.name)
        reply = self.r.xreadgroup('g', 'c', {key: '>'}, count=k)
        entries = _stream_entries(reply, key)
        if entries:
            self.r.xack(key, 'g', *(e[0] for e in entries))
        return len(entries)

    def close(self) -> None:
        try:
            self.r.close()
        finally:
            cleanup(self.ctx, self.family)


def _stream_entries(reply: Any, key: str) -> list[Any]:
    """The entries of an XREADGROUP reply: RESP2 ``[[key, entries]]`` or RESP3 ``{key: [entries]}``."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return list((reply.get(key) or [[]])[0])
    return list(reply[0][1])


register(
    Impl(
        'redis-py',
        pure_python=True,
        doc='raw redis-py pipeline of the protocol commands (the best a hand-written pure-Python client does)',
        sessions={
            op: _RawSession
            for op in (PUBLISH, CLAIM_COMMIT, RSMQ_SEND, RSMQ_RECV_DELETE, STREAM_PUBLISH, STREAM_READ_ACK)
        },
    )
)


# --- redis-py with Lua: the strongest rfq client a user could write in Python -------------------------------


class _LuaBatchSession:
    """rfq as a careful user writes it in pure Python: no leases, no fencing, no delivery counts.

    Publish: one pipeline per batch of HSET per message and a single LPUSH of the batch's ids. Claim+commit:
    two Lua scripts per batch (LMOVE + HGETALL per message; LREM -1 + DEL per message), two round trips.
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx, self.op = ctx, ctx.op
        self.r = redis.Redis.from_url(ctx.cfg.url, decode_responses=True)
        self.body = payload(ctx.cfg.size)
        self.claim = self.r.register_script(RFQ_CLAIM_BATCH)
        self.commit = self.r.register_script(RFQ_COMMIT_BATCH)

    def setup(self, n: int) -> None:
        self.r.ping()
        if self.op == CLAIM_COMMIT:
            prefill(self.ctx, 'rfq', n)

    def step(self, k: int) -> int:
        backlog, nextlog, prefix = rfq_keys(self.ctx.name)
        if self.op == PUBLISH:
            ids = rfq_ids(k)
            with self.r.pipeline(transaction=False) as p:
                for i in ids:
                    p.hset(prefix + i, _FIELD, self.body)
                p.lpush(backlog, *ids)
                p.execute()
            return k
        flat = self.claim(keys=[backlog, nextlog], args=[k, prefix])
        ids, at = [], 0
        while at < len(flat):  # id, nfields, then the fields: decoded as a client would, to a dict
            n = int(flat[at + 1])
            ids.append(flat[at])
            dict(zip(flat[at + 2 : at + 2 + 2 * n : 2], flat[at + 3 : at + 3 + 2 * n : 2]))
            at += 2 + 2 * n
        if ids:
            self.commit(keys=[nextlog, *(prefix + i for i in ids)], args=ids)
        return len(ids)

    def close(self) -> None:
        try:
            self.r.close()
        finally:
            cleanup(self.ctx, 'rfq')


register(
    Impl(
        'redis-py+lua',
        pure_python=True,
        doc='redis-py, rfq batched by hand: HSETs + one LPUSH per batch; claim and commit as one Lua script each',
        sessions={PUBLISH: _LuaBatchSession, CLAIM_COMMIT: _LuaBatchSession},
    )
)


# --- PyRSMQ 0.6.1 (in process; one message per call, it has no batch API) ------------------------------------


class _PyRsmqSession:
    def __init__(self, ctx: Context) -> None:
        from rsmq import RedisSMQ  # type: ignore[import-untyped,unused-ignore]

        self.ctx, self.op = ctx, ctx.op
        self.r = redis.Redis.from_url(ctx.cfg.url, decode_responses=True)
        self.q = RedisSMQ(client=self.r, qname=ctx.name)
        self.body = payload(ctx.cfg.size)

    def setup(self, n: int) -> None:
        self.q.createQueue().execute()
        if self.op == RSMQ_RECV_DELETE:
            self.r.unlink(rsmq_keys(self.ctx.name)[1])  # prefill recreates the queue hash
            prefill(self.ctx, 'rsmq', n)

    def step(self, k: int) -> int:
        if self.op == RSMQ_SEND:
            for _ in range(k):
                self.q.sendMessage(message=self.body).execute()
            return k
        from rsmq.cmd.exceptions import NoMessageInQueue  # type: ignore[import-untyped,unused-ignore]

        done = 0
        for _ in range(k):
            try:
                msg = self.q.receiveMessage().execute()
            except NoMessageInQueue:
                break
            self.q.deleteMessage(id=msg['id']).execute()
            done += 1
        return done

    def close(self) -> None:
        try:
            self.r.close()
        finally:
            cleanup(self.ctx, 'rsmq')


def _pyrsmq_missing(cfg: Config) -> str | None:
    return None if importlib.util.find_spec('rsmq') else 'PyRSMQ is not installed (pip install "ferroq[bench]")'


register(
    Impl(
        'pyrsmq',
        pure_python=True,
        doc='PyRSMQ 0.6 (sendMessage, receiveMessage + deleteMessage)',
        sessions={RSMQ_SEND: _PyRsmqSession, RSMQ_RECV_DELETE: _PyRsmqSession},
        batches={RSMQ_SEND: (1,), RSMQ_RECV_DELETE: (1,)},
        caps={RSMQ_SEND: 3000, RSMQ_RECV_DELETE: 3000},
        available=_pyrsmq_missing,
    )
)


# --- rfq 1.4.0 in its own venv (it pins redis<4): a subprocess that times itself ------------------------------

RFQ_RUNNER = Path(__file__).with_name('_rfq_runner.py')


def rfq_python(cfg: Config) -> str | None:
    """The interpreter that has rfq 1.4.0: --rfq-python, FERROQ_BENCH_RFQ_PYTHON, else ./.venv-rfq."""
    for candidate in (cfg.rfq_python, os.environ.get('FERROQ_BENCH_RFQ_PYTHON'), '.venv-rfq/bin/python'):
        if candidate and (shutil.which(candidate) or Path(candidate).is_file()):
            return candidate
    return None


def _rfq_missing(cfg: Config) -> str | None:
    exe = rfq_python(cfg)
    if exe is None:
        return 'no interpreter with rfq 1.4.0 (make setup creates .venv-rfq; or --rfq-python PATH)'
    probe = subprocess.run([exe, '-c', 'import rfq.rfq'], capture_output=True, text=True, timeout=60, check=False)
    return None if probe.returncode == 0 else f'{exe} cannot import rfq: {probe.stderr.strip()[-200:]}'


def _out_of_process(ctx: Context) -> Any:
    raise RuntimeError(f'{ctx.op} of this implementation runs in another interpreter: use Impl.measure')


class _RfqImpl(Impl):
    def measure(self, ctx: Context, op: str, n: int, progress: Progress) -> Row:
        exe = rfq_python(ctx.cfg)
        assert exe is not None  # checked by available()
        try:
            if op == CLAIM_COMMIT:
                prefill(ctx, 'rfq', n)
            job = {
                'url': ctx.cfg.url,
                'topic': ctx.name,
                'op': op,
                'batch': ctx.batch,
                'n': n,
                'size': ctx.cfg.size,
                'time_limit': ctx.cfg.time_limit,
            }
            proc = subprocess.run(
                [exe, str(RFQ_RUNNER)],
                input=json.dumps(job),
                capture_output=True,
                text=True,
                timeout=ctx.cfg.time_limit + 60,
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f'rfq runner failed: {proc.stderr.strip()[-300:]}')
            out = json.loads(proc.stdout)
        finally:
            cleanup(ctx, 'rfq')
        sample = Sample(out['messages'], out['seconds'], out['cpu'], out['server_cpu'], out['machine_cpu'])
        return sample.row(op, ctx.batch, self.name, n)


register(
    _RfqImpl(
        'rfq',
        pure_python=True,
        doc='rfq 1.4.0 as shipped (redis-py 3.5), in its own venv: publish / publish_batch, consume + Task.done',
        sessions=dict.fromkeys((PUBLISH, CLAIM_COMMIT), _out_of_process),
        batches={CLAIM_COMMIT: (1,)},  # rfq has no batch consume
        caps={CLAIM_COMMIT: 3000},
        available=_rfq_missing,
        out_of_process=True,
    )
)
