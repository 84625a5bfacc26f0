"""The asyncio pure-Python client (redis.asyncio): the twin of :mod:`ferroq.pure.client`.

Only the I/O lives here: the methods are the operations of :mod:`ferroq.pure._handles`, made coroutines by
``AsyncMode``. Pools and timeouts behave as in the synchronous client. A client belongs to the event loop that
first uses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import warnings
from types import TracebackType
from typing import Any, TypeVar, cast, final

import redis
import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from ferroq.batches import DEFAULT_COUNT, AsyncBatches, AsyncRsmqBatches
from ferroq.exceptions import ConnectionFailed, FerroqError, UnsupportedServer
from ferroq.pure import _requests, _send, _server, _settings
from ferroq.pure._handles import AsyncMode, ClientState, GroupState, RsmqState, StreamState, TopicState
from ferroq.typing import (
    AsyncClientProtocol,
    AsyncConsumerGroupProtocol,
    AsyncRsmqQueueProtocol,
    AsyncStreamProtocol,
    AsyncTopicProtocol,
    documented_by,
)

__all__ = ['AsyncClient', 'AsyncConsumerGroup', 'AsyncRsmqQueue', 'AsyncStream', 'AsyncTopic']

T = TypeVar('T')


@final
@documented_by(AsyncTopicProtocol)
class AsyncTopic(TopicState, AsyncMode):
    """An rfq topic on an :class:`AsyncClient`; the methods of :class:`ferroq.pure.Topic`, awaitable."""

    __slots__ = ()

    def batches(
        self, count: int = DEFAULT_COUNT, *, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> AsyncBatches:
        return AsyncBatches(self, count, block=block, lease=lease, owner=owner)


@final
@documented_by(AsyncRsmqQueueProtocol)
class AsyncRsmqQueue(RsmqState, AsyncMode):
    """An RSMQ queue on an :class:`AsyncClient`: the keys, units, ids and scripts of smrchy/rsmq 0.12."""

    __slots__ = ()

    def batches(
        self, count: int = DEFAULT_COUNT, *, vt: float | None = None, block: float | None = None
    ) -> AsyncRsmqBatches:
        return AsyncRsmqBatches(self, count, vt=vt, block=block)


@final
@documented_by(AsyncConsumerGroupProtocol)
class AsyncConsumerGroup(GroupState, AsyncMode):
    """A consumer group on an :class:`AsyncClient`; the methods of :class:`ferroq.pure.ConsumerGroup`, awaitable."""

    __slots__ = ()


@final
@documented_by(AsyncStreamProtocol)
class AsyncStream(StreamState[AsyncConsumerGroup], AsyncMode):
    """A Streams topic on an :class:`AsyncClient`; the methods of :class:`ferroq.pure.Stream`, awaitable."""

    __slots__ = ()
    _group_class = AsyncConsumerGroup


@final
@documented_by(AsyncClientProtocol)
class AsyncClient(ClientState[AsyncTopic, AsyncRsmqQueue, AsyncStream], AsyncMode):
    """The asyncio twin of :class:`ferroq.pure.Client`: same arguments, same methods, awaitable."""

    _topic_class = AsyncTopic
    _queue_class = AsyncRsmqQueue
    _stream_class = AsyncStream

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
            raise _settings.invalid_url(ctx, exc) from None
        self._redis: Any = aredis.Redis(connection_pool=self._pool)  # redis-py's command methods are untyped
        for command in _requests.RAW_REPLIES:
            self._redis.response_callbacks.pop(command, None)
        self._pid = os.getpid()

    # --- I/O: run a plan ---

    async def _run(self, plan: _requests.Plan[T], check: bool = True) -> T:
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
        """Refuse a server that is too old; warn once when it may evict queue keys (:func:`_server.server_checks`)."""
        self._policy_checked = True  # before the round trip: concurrent calls do not check (and warn) twice
        try:
            policy = await self._run(_server.server_checks(self._ctx), check=False)
        except UnsupportedServer:
            self._policy_checked = False  # every call is refused, not only the first
            raise
        except FerroqError:
            self._policy_checked = False  # no answer (not connected yet?): the next call checks again
            return
        message = _server.eviction_warning(self._ctx.shown_url, policy) if policy else None
        if message:
            warnings.warn(message, RuntimeWarning, stacklevel=4)

    async def _execute(self, request: _requests.Request, subscription: list[Any]) -> Any:
        """The reply to one request, or the redis-py exception it raised (the plan decides what to do)."""
        if self._closed:
            raise ConnectionFailed(_requests.CLOSED)
        if self._pid != os.getpid():
            self._open()  # a forked child: never share the parent's sockets
        # One turn of the event loop before taking a connection: redis-py's health check before reuse sees that
        # the server closed an idle pooled connection only once the loop has handled that EOF. When the loop
        # does not run between calls (run_until_complete per call, a handler blocking it), the command would go
        # out on the dead socket and fail, and a call that is never resent (ack, read) would reach the caller.
        await asyncio.sleep(0)
        try:
            if isinstance(request, _requests.Subscribe):
                pubsub = aredis.client.PubSub(self._blocking_pool)
                subscription.append(pubsub)
                await pubsub.subscribe(request.channel)
                # Wait for the confirmation: only then is a notification sent after it sure to reach us.
                try:
                    message = await asyncio.wait_for(self._next_message(pubsub, None), self._ctx.command_timeout)
                except asyncio.TimeoutError:
                    raise redis.TimeoutError(f'no reply to SUBSCRIBE within {self._ctx.command_timeout:g} s') from None
                return None if message['type'] == 'subscribe' else redis.ResponseError(str(message))
            if isinstance(request, _requests.Listen):
                pubsub = subscription[0]
                heard = await pubsub.get_message(timeout=request.timeout) is not None
                while heard and await pubsub.get_message(timeout=0.0) is not None:
                    pass  # drain: one wake-up is enough
                return heard
            if isinstance(request, _requests.Call):
                return await self._redis.execute_command(*request.args, **_requests.options(request))
            if isinstance(request, _requests.Pipe):
                pipe = self._redis.pipeline(transaction=False)
                for args in request.commands:
                    pipe.execute_command(*args, **_requests.options(request))
                return await pipe.execute(raise_on_error=False)
            if isinstance(request, _requests.Block):
                return await self._blocking(request.args, request.timeout)
            if isinstance(request, _requests.Watched):
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

    async def _watched(self, request: _requests.Watched) -> Any:
        """Run a :class:`ferroq.pure._requests.Watched` on a pooled connection, held for its round trips."""
        pool: Any = self._pool
        conn = await pool.get_connection()
        try:
            return await self._transaction(conn, request)
        except BaseException:
            await conn.disconnect()  # a reply may still be on its way, or a WATCH still set: never reuse it
            raise
        finally:
            await pool.release(conn)

    @staticmethod
    async def _transaction(conn: Any, request: _requests.Watched) -> Any:
        """WATCH + GET, then UNWATCH ([]) or MULTI ... EXEC (its results, or None when the key changed)."""
        deletes = _settings.deletes_of(request.deletes)
        await conn.send_packed_command(conn.pack_commands([*deletes, ('WATCH', request.key), ('GET', request.key)]))
        for _ in deletes:
            try:
                await conn.read_response()
            except redis.ResponseError:
                pass  # best effort: a key the DEL misses expires
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

    async def close(self) -> None:
        if not self._closed:
            # The publish records this client left for its next request go now (best effort).
            with contextlib.suppress(FerroqError):
                await self._run(_send.delete_now(self._ctx), check=False)
            self._closed = True
            await self._pool.disconnect()
            await self._blocking_pool.disconnect()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
