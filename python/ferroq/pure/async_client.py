"""The asyncio pure-Python client (redis.asyncio): the twin of :mod:`ferroq.pure.client`.

Only the I/O lives here; every operation is a plan from :mod:`ferroq.pure._ops`. Pools and timeouts
behave as in the synchronous client. A client belongs to the event loop that first uses it.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, final

import redis
import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from ferroq.exceptions import ConnectionFailed, FerroqError, UnsupportedServer
from ferroq.pure import _arrow, _ops, _rsmq, _streams
from ferroq.types import (
    GroupInfo,
    InspectEntry,
    Message,
    PendingEntry,
    RsmqAttributes,
    RsmqMessage,
    StreamEntry,
    StreamInfo,
    TopicStats,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ['AsyncClient', 'AsyncConsumerGroup', 'AsyncRsmqQueue', 'AsyncStream', 'AsyncTopic']

T = TypeVar('T')


@final
class AsyncClient:
    """The asyncio twin of :class:`ferroq.pure.Client`: same arguments, same methods, awaitable."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool_size: int = 2,
        connect_timeout: float = 5.0,
        command_timeout: float = 10.0,
        max_message_bytes: int = 1048576,
        chunk_size: int = 1000,
        client_name: str | None = None,
        username: str | None = None,
        password: str | None = None,
        password_file: str | os.PathLike[str] | None = None,
        tls_ca_file: str | os.PathLike[str] | None = None,
        tls_cert_file: str | os.PathLike[str] | None = None,
        tls_key_file: str | os.PathLike[str] | None = None,
        tls_insecure_skip_verify: bool = False,
    ) -> None:
        self._ctx = _ops.settings(
            url,
            pool_size=pool_size,
            connect_timeout=connect_timeout,
            command_timeout=command_timeout,
            max_message_bytes=max_message_bytes,
            chunk_size=chunk_size,
            client_name=client_name,
            username=username,
            password=password,
            password_file=password_file,
            tls_ca_file=tls_ca_file,
            tls_cert_file=tls_cert_file,
            tls_key_file=tls_key_file,
            tls_insecure_skip_verify=tls_insecure_skip_verify,
        )
        self._closed = False
        self._policy_checked = False
        self._open()

    def _open(self) -> None:
        ctx = self._ctx
        kwargs = {**ctx.pool_kwargs(), 'retry': Retry(NoBackoff(), 0)}
        try:
            self._pool = aredis.BlockingConnectionPool.from_url(
                ctx.url, max_connections=ctx.max_connections, timeout=ctx.command_timeout, **kwargs
            )
            # No socket timeout on blocking claims: _blocking bounds the wait with asyncio.
            self._blocking_pool = aredis.ConnectionPool.from_url(ctx.url, **{**kwargs, 'socket_timeout': None})
        except ValueError as exc:
            raise _ops.invalid_url(ctx, exc) from None
        self._redis: Any = aredis.Redis(connection_pool=self._pool)  # redis-py's command methods are untyped
        for command in _ops.RAW_REPLIES:
            self._redis.response_callbacks.pop(command, None)
        self._pid = os.getpid()

    @property
    def url(self) -> str:
        """The URL in use, with any password replaced by ``***``."""
        return self._ctx.shown_url

    def __repr__(self) -> str:
        return f'AsyncClient(url={self._ctx.shown_url!r})'

    # --- I/O: run a plan ---

    async def _run(self, plan: _ops.Plan[T], check: bool = True) -> T:
        subscription: list[Any] = []  # the PubSub of a Subscribe request, closed when the plan ends
        try:
            request = next(plan)  # the plan validates its arguments before its first request
            if check and not self._policy_checked:
                await self._check_policy()
            while True:
                request = plan.send(await self._execute(request, subscription))
        except StopIteration as stop:
            return cast(T, stop.value)
        finally:
            for pubsub in subscription:
                await pubsub.aclose()

    async def _check_policy(self) -> None:
        """Refuse a server that is too old; warn once when it may evict queue keys (:func:`_ops.server_checks`)."""
        self._policy_checked = True  # before the round trip: concurrent calls do not check (and warn) twice
        try:
            policy = await self._run(_ops.server_checks(self._ctx), check=False)
        except UnsupportedServer:
            self._policy_checked = False  # every call is refused, not only the first
            raise
        except FerroqError:
            self._policy_checked = False  # no answer (not connected yet?): the next call checks again
            return
        message = _ops.eviction_warning(self._ctx.shown_url, policy) if policy else None
        if message:
            warnings.warn(message, RuntimeWarning, stacklevel=4)

    async def _execute(self, request: _ops.Request, subscription: list[Any]) -> Any:
        """The reply to one request, or the redis-py exception it raised (the plan decides what to do)."""
        if self._closed:
            raise ConnectionFailed(_ops.CLOSED)
        if self._pid != os.getpid():
            self._open()  # a forked child: never share the parent's sockets
        # One turn of the event loop before taking a connection: redis-py's health check before reuse sees that
        # the server closed an idle pooled connection only once the loop has handled that EOF. When the loop
        # does not run between calls (run_until_complete per call, a handler blocking it), the command would go
        # out on the dead socket and fail, and a call that is never resent (ack, read) would reach the caller.
        await asyncio.sleep(0)
        try:
            if isinstance(request, _ops.Subscribe):
                pubsub = aredis.client.PubSub(self._blocking_pool)
                subscription.append(pubsub)
                await pubsub.subscribe(request.channel)
                # Wait for the confirmation: only then is a notification sent after it sure to reach us.
                try:
                    message = await asyncio.wait_for(self._next_message(pubsub, None), self._ctx.command_timeout)
                except asyncio.TimeoutError:
                    raise redis.TimeoutError(f'no reply to SUBSCRIBE within {self._ctx.command_timeout:g} s') from None
                return None if message['type'] == 'subscribe' else redis.ResponseError(str(message))
            if isinstance(request, _ops.Listen):
                pubsub = subscription[0]
                heard = await pubsub.get_message(timeout=request.timeout) is not None
                while heard and await pubsub.get_message(timeout=0.0) is not None:
                    pass  # drain: one wake-up is enough
                return heard
            if isinstance(request, _ops.Call):
                return await self._redis.execute_command(*request.args, **_ops.options(request))
            if isinstance(request, _ops.Pipe):
                pipe = self._redis.pipeline(transaction=False)
                for args in request.commands:
                    pipe.execute_command(*args, **_ops.options(request))
                return await pipe.execute(raise_on_error=False)
            if isinstance(request, _ops.Block):
                return await self._blocking(request.args, request.timeout)
            if isinstance(request, _ops.Watched):
                return await self._watched(request)
            await asyncio.sleep(request.seconds)
            return None
        except (redis.RedisError, UnicodeDecodeError) as exc:
            return exc

    @staticmethod
    async def _next_message(pubsub: Any, timeout: float | None) -> Any:
        while True:
            message = await pubsub.get_message(timeout=timeout)
            if message is not None:
                return message

    async def _blocking(self, args: tuple[str, ...], timeout: float) -> Any:
        pool: Any = self._blocking_pool
        conn = await pool.get_connection()
        try:
            await conn.send_command(*args)
            try:
                return await asyncio.wait_for(conn.read_response(), timeout)
            except asyncio.TimeoutError:
                raise redis.TimeoutError(f'no reply to {args[0]} within {timeout:g} s') from None
        except BaseException:
            await conn.disconnect()  # a reply may still be on its way: never reuse this connection
            raise
        finally:
            await pool.release(conn)

    async def _watched(self, request: _ops.Watched) -> Any:
        """Run a :class:`ferroq.pure._ops.Watched` on a pooled connection, held for its round trips."""
        pool: Any = self._pool
        conn = await pool.get_connection()
        try:
            results = await self._transaction(conn, request)
            if request.forget and results is not None:
                try:
                    await conn.send_command('DEL', request.key)
                    await conn.read_response()
                except redis.RedisError:
                    await conn.disconnect()  # best effort: what came before stands, and the record expires
            return results
        except BaseException:
            await conn.disconnect()  # a reply may still be on its way, or a WATCH still set: never reuse it
            raise
        finally:
            await pool.release(conn)

    @staticmethod
    async def _transaction(conn: Any, request: _ops.Watched) -> Any:
        """WATCH + GET, then UNWATCH ([]) or MULTI ... EXEC (its results, or None when the key changed)."""
        await conn.send_packed_command(conn.pack_commands([('WATCH', request.key), ('GET', request.key)]))
        await conn.read_response()
        commands = request.build(await conn.read_response())
        if commands is None:
            await conn.send_command('UNWATCH')
            await conn.read_response()
            return []
        await conn.send_packed_command(conn.pack_commands([('MULTI',), *commands, ('EXEC',)]))
        refused: redis.ResponseError | None = None
        for _ in range(len(commands) + 1):  # MULTI's OK, then QUEUED or the refusal of each command
            try:
                await conn.read_response()
            except redis.ResponseError as exc:
                refused = refused or exc
        try:
            return await conn.read_response()
        except redis.ResponseError as exc:  # EXECABORT: the refusal says why
            raise (refused or exc) from None

    # --- API ---

    def topic(self, name: str) -> AsyncTopic:
        """An rfq topic. Raises InvalidName unless ``name`` matches ``[A-Za-z0-9_.-]{1,128}``."""
        return AsyncTopic(self, _ops.topic_keys(_ops.check_topic(name)))

    async def topics(self) -> list[str]:
        return await self._run(_ops.topics(self._ctx))

    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> AsyncRsmqQueue:
        """An RSMQ queue (smrchy/rsmq and PyRSMQ compatible). ``realtime``: PUBLISH the queue size on send."""
        return AsyncRsmqQueue(self, _rsmq.queue_ref(qname, ns, realtime))

    async def rsmq_queues(self, ns: str = 'rsmq') -> list[str]:
        return await self._run(_rsmq.queues(self._ctx, ns))

    def stream(self, name: str) -> AsyncStream:
        """A Streams topic. Raises InvalidName unless ``name`` matches ``[A-Za-z0-9_.-]{1,128}``."""
        return AsyncStream(self, _streams.stream_ref(name))

    async def streams(self) -> list[str]:
        return await self._run(_streams.streams(self._ctx))

    async def claim(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> list[Message]:
        return await self._run(_ops.claim_many(self._ctx, topics, count, block, lease, owner))

    async def commit(self, messages: Iterable[Message]) -> list[str]:
        return await self._run(_ops.commit_many(self._ctx, messages))

    async def extend(self, messages: Iterable[Message], lease: float = 30.0) -> list[str]:
        return await self._run(_ops.extend_many(self._ctx, messages, lease))

    async def release(self, messages: Iterable[Message], delay: float = 0.0) -> list[str]:
        return await self._run(_ops.release_many(self._ctx, messages, delay))

    async def ping(self) -> bool:
        return await self._run(_ops.ping(self._ctx))

    async def close(self) -> None:
        """Close every connection. Later calls raise ConnectionFailed."""
        if not self._closed:
            self._closed = True
            await self._pool.disconnect()
            await self._blocking_pool.disconnect()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


@final
class AsyncTopic:
    """An rfq topic on an :class:`AsyncClient`; the methods of :class:`ferroq.pure.Topic`, awaitable."""

    __slots__ = ('_client', '_ctx', '_keys')

    def __init__(self, client: AsyncClient, topic_keys: _ops.TopicKeys) -> None:
        self._client = client
        self._ctx = client._ctx
        self._keys = topic_keys

    @property
    def name(self) -> str:
        return self._keys.name

    def __repr__(self) -> str:
        return f'AsyncTopic(name={self._keys.name!r}, url={self._ctx.shown_url!r})'

    async def publish(self, fields: Mapping[str, str], front: bool = False) -> str:
        return await self._client._run(_ops.publish(self._ctx, self._keys, fields, front))

    async def publish_batch(self, messages: Iterable[Mapping[str, str]], front: bool = False) -> list[str]:
        return await self._client._run(_ops.publish_batch(self._ctx, self._keys, messages, front))

    async def publish_stream(self, messages: Iterable[Mapping[str, str]]) -> int:
        """Publish from a (sync) iterable chunk by chunk; returns how many (see ``Topic.publish_stream``)."""
        return await self._client._run(_ops.publish_stream(self._ctx, self._keys, messages))

    async def publish_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        id_column: str | None = None,
        value_column: str | None = None,
    ) -> tuple[int, int]:
        return await self._client._run(
            _arrow.publish_topic(self._ctx, self._keys, data, dedup_key, dedup_ttl, id_column, value_column)
        )

    async def claim(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> list[Message]:
        return await self._client._run(_ops.claim(self._ctx, self._keys, count, block, lease, owner))

    async def commit(self, messages: Iterable[Message | str]) -> list[str]:
        return await self._client._run(_ops.commit(self._ctx, self._keys, messages))

    async def extend(self, messages: Iterable[Message | str], lease: float = 30.0) -> list[str]:
        return await self._client._run(_ops.extend(self._ctx, self._keys, messages, lease))

    async def release(self, messages: Iterable[Message | str], delay: float = 0.0) -> list[str]:
        return await self._client._run(_ops.release(self._ctx, self._keys, messages, delay))

    async def dead_letter(self, messages: Iterable[Message | str], error: str = '', to: str | None = None) -> list[str]:
        return await self._client._run(_ops.dead_letter(self._ctx, self._keys, messages, error, to))

    async def resume(self, owner: str, lease: float = 30.0) -> list[Message]:
        return await self._client._run(_ops.resume(self._ctx, self._keys, owner, lease))

    async def harvest(self, all: bool = False, lease: float = 30.0) -> list[str]:
        return await self._client._run(_ops.harvest(self._ctx, self._keys, all, lease))

    async def peek(self, id: str) -> dict[str, str] | None:
        return await self._client._run(_ops.peek(self._ctx, self._keys, id))

    async def fetch_arrow(self, ids: Iterable[str], fields: Iterable[str]) -> pa.RecordBatch:
        return await self._client._run(_ops.fetch_arrow(self._ctx, self._keys, ids, fields))

    async def inspect(
        self, queue: Literal['backlog', 'nextlog'] = 'backlog', start: int = 0, count: int = 100
    ) -> list[InspectEntry]:
        return await self._client._run(_ops.inspect(self._ctx, self._keys, queue, start, count))

    async def stats(self) -> TopicStats:
        return await self._client._run(_ops.stats(self._ctx, self._keys))

    async def purge(self, queue: Literal['backlog', 'nextlog'] = 'backlog') -> int:
        return await self._client._run(_ops.purge(self._ctx, self._keys, queue))


@final
class AsyncRsmqQueue:
    """An RSMQ queue on an :class:`AsyncClient`: the keys, units, ids and scripts of smrchy/rsmq 0.12."""

    __slots__ = ('_client', '_ctx', '_ref')

    def __init__(self, client: AsyncClient, ref: _rsmq.RsmqRef) -> None:
        self._client = client
        self._ctx = client._ctx
        self._ref = ref

    @property
    def name(self) -> str:
        return self._ref.name

    @property
    def ns(self) -> str:
        return self._ref.ns

    @property
    def realtime(self) -> bool:
        return self._ref.realtime

    def __repr__(self) -> str:
        return f'AsyncRsmqQueue(name={self._ref.name!r}, ns={self._ref.ns!r}, url={self._ctx.shown_url!r})'

    async def create(
        self,
        vt: int = 30,
        delay: int = 0,
        maxsize: int = 65536,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> None:
        """Create the queue (QueueExists if it exists); ``max_receives`` with ``dead_letter`` adds a dead-letter queue."""
        await self._client._run(_rsmq.create(self._ctx, self._ref, vt, delay, maxsize, max_receives, dead_letter))

    async def delete_queue(self) -> None:
        """Delete the queue and all its messages (QueueNotFound if it does not exist)."""
        await self._client._run(_rsmq.delete_queue(self._ctx, self._ref))

    async def attributes(self) -> RsmqAttributes:
        """The queue's attributes and message counts."""
        return await self._client._run(_rsmq.attributes(self._ctx, self._ref))

    async def set_attributes(
        self,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> RsmqAttributes:
        """Change the given attributes (``max_receives=0`` removes the dead-letter queue); returns them all."""
        return await self._client._run(
            _rsmq.set_attributes(self._ctx, self._ref, vt, delay, maxsize, max_receives, dead_letter)
        )

    async def send(self, message: str, delay: float | None = None) -> str:
        """Send a message (visible after ``delay`` seconds, default the queue's); returns its id."""
        return await self._client._run(_rsmq.send_one(self._ctx, self._ref, message, delay))

    async def send_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        delay: float | None = None,
    ) -> tuple[int, int]:
        return await self._client._run(
            _arrow.send_rsmq(self._ctx, self._ref, data, dedup_key, dedup_ttl, value_column, delay)
        )

    async def send_batch(self, messages: Iterable[str], delay: float | None = None) -> list[str]:
        """Send many messages (validated first, chunks pipelined); returns their ids in input order."""
        return await self._client._run(_rsmq.send_batch(self._ctx, self._ref, messages, delay))

    async def receive(self, vt: float | None = None, block: float | None = None) -> RsmqMessage | None:
        """Receive the oldest visible message and hide it for ``vt`` seconds; ``block``: wait up to that long."""
        messages = await self._client._run(_rsmq.receive(self._ctx, self._ref, 1, vt, block))
        return messages[0] if messages else None

    async def receive_batch(self, count: int, vt: float | None = None, block: float | None = None) -> list[RsmqMessage]:
        """Receive up to ``count`` visible messages, oldest first."""
        return await self._client._run(_rsmq.receive(self._ctx, self._ref, count, vt, block))

    async def pop(self) -> RsmqMessage | None:
        """Receive and delete the oldest visible message."""
        messages = await self._client._run(_rsmq.receive(self._ctx, self._ref, 1, None, None, pop=True))
        return messages[0] if messages else None

    async def pop_batch(self, count: int) -> list[RsmqMessage]:
        """Receive and delete up to ``count`` visible messages, oldest first."""
        return await self._client._run(_rsmq.receive(self._ctx, self._ref, count, None, None, pop=True))

    async def delete(self, id: str) -> bool:
        """Delete a message; True if it was there."""
        return await self._client._run(_rsmq.delete(self._ctx, self._ref, id))

    async def delete_batch(self, ids: Iterable[str]) -> list[str]:
        """Delete messages; returns the ids that were there."""
        return await self._client._run(_rsmq.delete_batch(self._ctx, self._ref, ids))

    async def change_visibility(self, id: str, vt: float) -> bool:
        """Hide a message for ``vt`` seconds from now; True if it exists."""
        return await self._client._run(_rsmq.change_visibility(self._ctx, self._ref, id, vt))


@final
class AsyncStream:
    """A Streams topic on an :class:`AsyncClient`; the methods of :class:`ferroq.pure.Stream`, awaitable."""

    __slots__ = ('_client', '_ctx', '_ref')

    def __init__(self, client: AsyncClient, ref: _streams.StreamRef) -> None:
        self._client = client
        self._ctx = client._ctx
        self._ref = ref

    @property
    def name(self) -> str:
        return self._ref.name

    def __repr__(self) -> str:
        return f'AsyncStream(name={self._ref.name!r})'

    def group(
        self,
        name: str,
        consumer: str | None = None,
        *,
        max_deliveries: int | None = None,
        dead_letter: str | None = None,
    ) -> AsyncConsumerGroup:
        """A consumer group of this stream (no I/O; see :meth:`ferroq.pure.Stream.group`)."""
        ref = _streams.group_ref(self._ref, name, consumer, max_deliveries, dead_letter)
        return AsyncConsumerGroup(self._client, ref)

    async def publish(
        self,
        fields: Mapping[str, str],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> str:
        return await self._client._run(_streams.publish(self._ctx, self._ref, fields, maxlen, max_age, approximate))

    async def publish_batch(
        self,
        messages: Iterable[Mapping[str, str]],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> list[str]:
        return await self._client._run(
            _streams.publish_batch(self._ctx, self._ref, messages, maxlen, max_age, approximate)
        )

    async def publish_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> tuple[int, int]:
        return await self._client._run(
            _arrow.publish_stream(
                self._ctx, self._ref, data, dedup_key, dedup_ttl, value_column, maxlen, max_age, approximate
            )
        )

    async def length(self) -> int:
        return await self._client._run(_streams.length(self._ctx, self._ref))

    async def range(
        self, start: str | datetime = '-', end: str | datetime = '+', count: int = 100
    ) -> list[StreamEntry]:
        return await self._client._run(_streams.range_(self._ctx, self._ref, start, end, count))

    async def range_arrow(
        self, start: str | datetime, end: str | datetime, count: int, fields: Iterable[str]
    ) -> pa.RecordBatch:
        return await self._client._run(_streams.range_arrow(self._ctx, self._ref, start, end, count, fields))

    async def trim(self, *, maxlen: int | None = None, max_age: float | None = None, approximate: bool = True) -> int:
        return await self._client._run(_streams.trim(self._ctx, self._ref, maxlen, max_age, approximate))

    async def info(self) -> StreamInfo:
        return await self._client._run(_streams.info(self._ctx, self._ref))

    async def groups(self) -> list[GroupInfo]:
        return await self._client._run(_streams.groups(self._ctx, self._ref))

    async def delete(self) -> bool:
        return await self._client._run(_streams.delete(self._ctx, self._ref))


@final
class AsyncConsumerGroup:
    """A consumer group on an :class:`AsyncClient`; the methods of :class:`ferroq.pure.ConsumerGroup`, awaitable."""

    __slots__ = ('_client', '_ctx', '_ref')

    def __init__(self, client: AsyncClient, ref: _streams.GroupRef) -> None:
        self._client = client
        self._ctx = client._ctx
        self._ref = ref

    @property
    def name(self) -> str:
        return self._ref.name

    @property
    def consumer(self) -> str:
        return self._ref.consumer

    @property
    def stream(self) -> str:
        return self._ref.stream.name

    @property
    def max_deliveries(self) -> int | None:
        return self._ref.max_deliveries

    @property
    def dead_letter_stream(self) -> str:
        """The dead-letter stream's name (``dead_letter`` is the method that moves entries there)."""
        return self._ref.dead.name

    def __repr__(self) -> str:
        return (
            f'AsyncConsumerGroup(stream={self._ref.stream.name!r}, name={self._ref.name!r}, '
            f'consumer={self._ref.consumer!r})'
        )

    async def create(self, start: str | datetime = '$', *, exist_ok: bool = True) -> bool:
        return await self._client._run(_streams.create(self._ctx, self._ref, start, exist_ok))

    async def read(self, count: int = 1, block: float | None = None) -> list[StreamEntry]:
        return await self._client._run(_streams.read(self._ctx, self._ref, count, block))

    async def ack(self, entries: Iterable[StreamEntry | str]) -> list[str]:
        return await self._client._run(_streams.ack(self._ctx, self._ref, entries))

    async def pending(
        self, count: int = 100, *, consumer: str | None = None, min_idle: float | None = None
    ) -> list[PendingEntry]:
        return await self._client._run(_streams.pending(self._ctx, self._ref, count, consumer, min_idle))

    async def autoclaim(self, min_idle: float, count: int = 100, *, error: str = '') -> list[StreamEntry]:
        return await self._client._run(_streams.autoclaim(self._ctx, self._ref, min_idle, count, error))

    async def dead_letter(self, entries: Iterable[StreamEntry | str], error: str = '') -> list[str]:
        return await self._client._run(_streams.dead_letter(self._ctx, self._ref, entries, error))

    async def seek(self, position: str | datetime) -> None:
        await self._client._run(_streams.seek(self._ctx, self._ref, position))

    async def info(self) -> GroupInfo:
        return await self._client._run(_streams.group_info(self._ctx, self._ref))

    async def delete(self) -> bool:
        return await self._client._run(_streams.delete_group(self._ctx, self._ref))
