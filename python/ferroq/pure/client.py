"""The synchronous pure-Python client (redis-py): the same API, keys, scripts and errors as ``ferroq.Client``.

Only the I/O lives here: the methods are the operations of :mod:`ferroq.pure._handles`, made blocking by
``SyncMode``; each builds a plan from ``_rfq``, ``_rsmq`` or ``_streams`` that ``Client._run`` executes.

## Behavior

- Connections come from a redis-py ``BlockingConnectionPool`` (``max(pool_size, 16)`` connections, made
  on demand, one request at a time each); a call waits up to ``command_timeout`` for a free one.
  Nothing connects before the first call.
- Blocking claims (``BLMOVE``) use a second pool of dedicated connections, and wait ``block +
  command_timeout`` for the reply.
- redis-py never retries on its own here; the retry policy is :func:`ferroq.pure._send.send`'s.
- After ``os.fork()`` the child drops the parent's connections and opens its own.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TypeVar, cast, final

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ferroq.batches import DEFAULT_COUNT, Batches, RsmqBatches
from ferroq.exceptions import ConnectionFailed, FerroqError, UnsupportedServer
from ferroq.pure import _requests, _send, _server, _settings
from ferroq.pure._handles import ClientState, GroupState, RsmqState, StreamState, SyncMode, TopicState
from ferroq.typing import (
    ClientProtocol,
    ConsumerGroupProtocol,
    RsmqQueueProtocol,
    StreamProtocol,
    TopicProtocol,
    documented_by,
)

__all__ = ['Client', 'ConsumerGroup', 'RsmqQueue', 'Stream', 'Topic']

T = TypeVar('T')


@final
@documented_by(TopicProtocol)
class Topic(TopicState, SyncMode):
    """An rfq topic on a :class:`Client`."""

    __slots__ = ()

    def batches(
        self, count: int = DEFAULT_COUNT, *, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> Batches:
        return Batches(self, count, block=block, lease=lease, owner=owner)


@final
@documented_by(RsmqQueueProtocol)
class RsmqQueue(RsmqState, SyncMode):
    """An RSMQ queue on a :class:`Client`: the keys, units, ids and scripts of smrchy/rsmq 0.12."""

    __slots__ = ()

    def batches(
        self, count: int = DEFAULT_COUNT, *, vt: float | None = None, block: float | None = None
    ) -> RsmqBatches:
        return RsmqBatches(self, count, vt=vt, block=block)


@final
@documented_by(ConsumerGroupProtocol)
class ConsumerGroup(GroupState, SyncMode):
    """A consumer group of a :class:`Stream`, read as one consumer: entries stay pending until acknowledged."""

    __slots__ = ()


@final
@documented_by(StreamProtocol)
class Stream(StreamState[ConsumerGroup], SyncMode):
    """A Streams topic on a :class:`Client`: a Redis stream that consumer groups read, each at its own offset."""

    __slots__ = ()
    _group_class = ConsumerGroup


@final
@documented_by(ClientProtocol)
class Client(ClientState[Topic, RsmqQueue, Stream], SyncMode):
    """A synchronous client. Arguments as :class:`ferroq.Client`.

    Raises:
        InvalidArgument: a bad URL or option.
        ServerUnavailable: no URL is configured and the embedded redis-server cannot start.
    """

    _topic_class = Topic
    _queue_class = RsmqQueue
    _stream_class = Stream

    def _open(self) -> None:
        ctx = self._ctx
        kwargs = {**ctx.pool_kwargs(), 'retry': Retry(NoBackoff(), 0)}
        try:
            self._pool = redis.BlockingConnectionPool.from_url(
                ctx.url, max_connections=ctx.max_connections, timeout=ctx.command_timeout, **kwargs
            )
            self._blocking_pool = redis.ConnectionPool.from_url(ctx.url, **kwargs)
        except ValueError as exc:
            raise _settings.invalid_url(ctx, exc) from None
        self._redis: Any = redis.Redis(connection_pool=self._pool)  # redis-py's command methods are untyped
        for command in _requests.RAW_REPLIES:
            self._redis.response_callbacks.pop(command, None)
        self._pid = os.getpid()

    # --- I/O: run a plan ---

    def _run(self, plan: _requests.Plan[T], check: bool = True) -> T:
        subscription: list[Any] = []  # the PubSub of a Subscribe request, closed when the plan ends
        try:
            request = next(plan)  # the plan validates its arguments before its first request
            if check and not self._policy_checked:
                self._check_policy()
            while True:
                request = plan.send(self._execute(request, subscription))
        except StopIteration as stop:
            return cast(T, stop.value)
        finally:
            for pubsub in subscription:
                pubsub.close()

    def _run_side_by_side(self, plans: Sequence[_requests.Plan[Any]]) -> list[Any]:
        """Run independent plans together: each round sends every plan's next Call or Pipe in one pipeline.

        Returns each plan's result, or the FerroqError it raised (one missing queue does not fail the rest).
        What ``ferroq top`` and ``ferroq metrics`` read runs here: one round trip for hundreds of queues.
        """
        results: list[Any] = [None] * len(plans)
        waiting: dict[int, _requests.Request] = {}
        subscription: list[Any] = []

        def advance(i: int, reply: Any, first: bool = False) -> None:
            try:
                waiting[i] = next(plans[i]) if first else plans[i].send(reply)
            except StopIteration as stop:
                results[i] = stop.value
                waiting.pop(i, None)
            except FerroqError as exc:
                results[i] = exc
                waiting.pop(i, None)

        for i in range(len(plans)):
            advance(i, None, first=True)
        for _ in range(1_000_000):  # a bound: every plan ends after a few rounds
            if not waiting:
                break
            piped = [(i, r) for i, r in waiting.items() if isinstance(r, (_requests.Call, _requests.Pipe))]
            for i, request in [
                (i, r) for i, r in waiting.items() if not isinstance(r, (_requests.Call, _requests.Pipe))
            ]:
                advance(i, self._execute(request, subscription))  # a Sleep while Redis loads its data
            if piped:
                for (i, _), reply in zip(piped, self._pipeline([request for _, request in piped])):
                    advance(i, reply)
        for pubsub in subscription:
            pubsub.close()
        return results

    def _pipeline(self, requests: list[_requests.Call | _requests.Pipe]) -> list[Any]:
        """The replies to several requests sent in one pipeline (a Pipe's reply is its list of replies);
        a dropped connection is every request's reply, for each plan's own retry policy to handle."""
        if self._closed:
            raise ConnectionFailed(_requests.CLOSED)
        if self._pid != os.getpid():
            self._open()
        pipe = self._redis.pipeline(transaction=False)
        for request in requests:
            for args in [request.args] if isinstance(request, _requests.Call) else request.commands:
                pipe.execute_command(*args, **_requests.options(request))
        try:
            flat = pipe.execute(raise_on_error=False)
        except (redis.RedisError, UnicodeDecodeError) as exc:
            return [exc] * len(requests)
        replies: list[Any] = []
        at = 0
        for request in requests:
            if isinstance(request, _requests.Call):
                replies.append(flat[at])
                at += 1
            else:
                replies.append(flat[at : at + len(request.commands)])
                at += len(request.commands)
        return replies

    def _check_policy(self) -> None:
        """Refuse a server that is too old; warn once when it may evict queue keys (:func:`_server.server_checks`)."""
        self._policy_checked = True  # before the round trip: concurrent calls do not check (and warn) twice
        try:
            policy = self._run(_server.server_checks(self._ctx), check=False)
        except UnsupportedServer:
            self._policy_checked = False  # every call is refused, not only the first
            raise
        except FerroqError:
            self._policy_checked = False  # no answer (not connected yet?): the next call checks again
            return
        message = _server.eviction_warning(self._ctx.shown_url, policy) if policy else None
        if message:
            warnings.warn(message, RuntimeWarning, stacklevel=4)

    def _execute(self, request: _requests.Request, subscription: list[Any]) -> Any:
        """The reply to one request, or the redis-py exception it raised (the plan decides what to do)."""
        if self._closed:
            raise ConnectionFailed(_requests.CLOSED)
        if self._pid != os.getpid():
            self._open()  # a forked child: never share the parent's sockets
        try:
            if isinstance(request, _requests.Subscribe):
                pubsub = redis.client.PubSub(self._blocking_pool)
                subscription.append(pubsub)
                pubsub.subscribe(request.channel)
                # Wait for the confirmation: only then is a notification sent after it sure to reach us.
                deadline = time.monotonic() + self._ctx.command_timeout
                while (message := pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))) is None:
                    if time.monotonic() >= deadline:
                        raise redis.TimeoutError(f'no reply to SUBSCRIBE within {self._ctx.command_timeout:g} s')
                return None if message['type'] == 'subscribe' else redis.ResponseError(str(message))
            if isinstance(request, _requests.Listen):
                pubsub = subscription[0]
                heard = pubsub.get_message(timeout=request.timeout) is not None
                while heard and pubsub.get_message(timeout=0.0) is not None:
                    pass  # drain: one wake-up is enough
                return heard
            if isinstance(request, _requests.Call):
                return self._redis.execute_command(*request.args, **_requests.options(request))
            if isinstance(request, _requests.Pipe):
                pipe = self._redis.pipeline(transaction=False)
                for args in request.commands:
                    pipe.execute_command(*args, **_requests.options(request))
                return pipe.execute(raise_on_error=False)
            if isinstance(request, _requests.Block):
                return self._blocking(request.args, request.timeout)
            if isinstance(request, _requests.Watched):
                return self._watched(request)
            time.sleep(request.seconds)
            return None
        except (redis.RedisError, UnicodeDecodeError) as exc:
            return exc

    def _blocking(self, args: tuple[str, ...], timeout: float) -> Any:
        pool: Any = self._blocking_pool
        conn = pool.get_connection()
        try:
            conn.send_command(*args)
            # The socket timeout is command_timeout: wait for the first byte here, for up to the block time more.
            if not conn.can_read(timeout=timeout):
                raise redis.TimeoutError(f'no reply to {args[0]} within {timeout:g} s')
            return conn.read_response()
        except BaseException:
            conn.disconnect()  # a reply may still be on its way: never reuse this connection
            raise
        finally:
            pool.release(conn)

    def _watched(self, request: _requests.Watched) -> Any:
        """Run a :class:`ferroq.pure._requests.Watched` on a pooled connection, held for its round trips."""
        pool: Any = self._pool
        conn = pool.get_connection()
        try:
            return self._transaction(conn, request)
        except BaseException:
            conn.disconnect()  # a reply may still be on its way, or a WATCH still set: never reuse it
            raise
        finally:
            pool.release(conn)

    @staticmethod
    def _transaction(conn: Any, request: _requests.Watched) -> Any:
        """WATCH + GET, then UNWATCH ([]) or MULTI ... EXEC (its results, or None when the key changed)."""
        deletes = _settings.deletes_of(request.deletes)
        conn.send_packed_command(conn.pack_commands([*deletes, ('WATCH', request.key), ('GET', request.key)]))
        for _ in deletes:
            try:
                conn.read_response()
            except redis.ResponseError:
                pass  # best effort: a key the DEL misses expires
        conn.read_response()
        commands = request.build(conn.read_response())
        if commands is None:
            conn.send_command('UNWATCH')
            conn.read_response()
            return []
        conn.send_packed_command(conn.pack_commands([('MULTI',), *commands, ('EXEC',)]))
        refused: redis.ResponseError | None = None
        for _ in range(len(commands) + 1):  # MULTI's OK, then QUEUED or the refusal of each command
            try:
                conn.read_response()
            except redis.ResponseError as exc:
                refused = refused or exc
        try:
            return conn.read_response()
        except redis.ResponseError as exc:  # EXECABORT: the refusal says why
            raise (refused or exc) from None

    def close(self) -> None:
        if not self._closed:
            # The publish records this client left for its next request go now (best effort).
            with contextlib.suppress(FerroqError):
                self._run(_send.delete_now(self._ctx), check=False)
            self._closed = True
            self._pool.disconnect()
            self._blocking_pool.disconnect()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
