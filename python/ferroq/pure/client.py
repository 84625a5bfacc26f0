"""The synchronous pure-Python client (redis-py): the same API, keys, scripts and errors as ``ferroq.Client``.

Only the I/O lives here; every operation is a plan from :mod:`ferroq.pure._ops`.

## Behavior

- Connections come from a redis-py ``BlockingConnectionPool`` (``max(pool_size, 16)`` connections, made
  on demand, one request at a time each); a call waits up to ``command_timeout`` for a free one.
  Nothing connects before the first call.
- Blocking claims (``BLMOVE``) use a second pool of dedicated connections, and wait ``block +
  command_timeout`` for the reply.
- redis-py never retries on its own here; the retry policy is :func:`ferroq.pure._ops.send`'s.
- After ``os.fork()`` the child drops the parent's connections and opens its own.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, final

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

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

__all__ = ['Client', 'ConsumerGroup', 'RsmqQueue', 'Stream', 'Topic']

T = TypeVar('T')


@final
class Client:
    """A synchronous client. Arguments as :class:`ferroq.Client`.

    Raises:
        InvalidArgument: a bad URL or option.
        ServerUnavailable: no URL is configured and the embedded redis-server cannot start.
    """

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
            self._pool = redis.BlockingConnectionPool.from_url(
                ctx.url, max_connections=ctx.max_connections, timeout=ctx.command_timeout, **kwargs
            )
            self._blocking_pool = redis.ConnectionPool.from_url(ctx.url, **kwargs)
        except ValueError as exc:
            raise _ops.invalid_url(ctx, exc) from None
        self._redis: Any = redis.Redis(connection_pool=self._pool)  # redis-py's command methods are untyped
        for command in _ops.RAW_REPLIES:
            self._redis.response_callbacks.pop(command, None)
        self._pid = os.getpid()

    @property
    def url(self) -> str:
        """The URL in use, with any password replaced by ``***``."""
        return self._ctx.shown_url

    def __repr__(self) -> str:
        return f'Client(url={self._ctx.shown_url!r})'

    # --- I/O: run a plan ---

    def _run(self, plan: _ops.Plan[T], check: bool = True) -> T:
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

    def _run_side_by_side(self, plans: Sequence[_ops.Plan[Any]]) -> list[Any]:
        """Run independent plans together: each round sends every plan's next Call or Pipe in one pipeline.

        Returns each plan's result, or the FerroqError it raised (one missing queue does not fail the rest).
        What ``ferroq top`` and ``ferroq metrics`` read runs here: one round trip for hundreds of queues.
        """
        results: list[Any] = [None] * len(plans)
        waiting: dict[int, _ops.Request] = {}
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
            piped = [(i, r) for i, r in waiting.items() if isinstance(r, (_ops.Call, _ops.Pipe))]
            for i, request in [(i, r) for i, r in waiting.items() if not isinstance(r, (_ops.Call, _ops.Pipe))]:
                advance(i, self._execute(request, subscription))  # a Sleep while Redis loads its data
            if piped:
                for (i, _), reply in zip(piped, self._pipeline([request for _, request in piped])):
                    advance(i, reply)
        for pubsub in subscription:
            pubsub.close()
        return results

    def _pipeline(self, requests: list[_ops.Call | _ops.Pipe]) -> list[Any]:
        """The replies to several requests sent in one pipeline (a Pipe's reply is its list of replies);
        a dropped connection is every request's reply, for each plan's own retry policy to handle."""
        if self._closed:
            raise ConnectionFailed(_ops.CLOSED)
        if self._pid != os.getpid():
            self._open()
        pipe = self._redis.pipeline(transaction=False)
        for request in requests:
            for args in [request.args] if isinstance(request, _ops.Call) else request.commands:
                pipe.execute_command(*args, **_ops.options(request))
        try:
            flat = pipe.execute(raise_on_error=False)
        except (redis.RedisError, UnicodeDecodeError) as exc:
            return [exc] * len(requests)
        replies: list[Any] = []
        at = 0
        for request in requests:
            if isinstance(request, _ops.Call):
                replies.append(flat[at])
                at += 1
            else:
                replies.append(flat[at : at + len(request.commands)])
                at += len(request.commands)
        return replies

    def _check_policy(self) -> None:
        """Refuse a server that is too old; warn once when it may evict queue keys (:func:`_ops.server_checks`)."""
        self._policy_checked = True  # before the round trip: concurrent calls do not check (and warn) twice
        try:
            policy = self._run(_ops.server_checks(self._ctx), check=False)
        except UnsupportedServer:
            self._policy_checked = False  # every call is refused, not only the first
            raise
        except FerroqError:
            self._policy_checked = False  # no answer (not connected yet?): the next call checks again
            return
        message = _ops.eviction_warning(self._ctx.shown_url, policy) if policy else None
        if message:
            warnings.warn(message, RuntimeWarning, stacklevel=4)

    def _execute(self, request: _ops.Request, subscription: list[Any]) -> Any:
        """The reply to one request, or the redis-py exception it raised (the plan decides what to do)."""
        if self._closed:
            raise ConnectionFailed(_ops.CLOSED)
        if self._pid != os.getpid():
            self._open()  # a forked child: never share the parent's sockets
        try:
            if isinstance(request, _ops.Subscribe):
                pubsub = redis.client.PubSub(self._blocking_pool)
                subscription.append(pubsub)
                pubsub.subscribe(request.channel)
                # Wait for the confirmation: only then is a notification sent after it sure to reach us.
                deadline = time.monotonic() + self._ctx.command_timeout
                while (message := pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))) is None:
                    if time.monotonic() >= deadline:
                        raise redis.TimeoutError(f'no reply to SUBSCRIBE within {self._ctx.command_timeout:g} s')
                return None if message['type'] == 'subscribe' else redis.ResponseError(str(message))
            if isinstance(request, _ops.Listen):
                pubsub = subscription[0]
                heard = pubsub.get_message(timeout=request.timeout) is not None
                while heard and pubsub.get_message(timeout=0.0) is not None:
                    pass  # drain: one wake-up is enough
                return heard
            if isinstance(request, _ops.Call):
                return self._redis.execute_command(*request.args, **_ops.options(request))
            if isinstance(request, _ops.Pipe):
                pipe = self._redis.pipeline(transaction=False)
                for args in request.commands:
                    pipe.execute_command(*args, **_ops.options(request))
                return pipe.execute(raise_on_error=False)
            if isinstance(request, _ops.Block):
                return self._blocking(request.args, request.timeout)
            if isinstance(request, _ops.Watched):
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

    def _watched(self, request: _ops.Watched) -> Any:
        """Run a :class:`ferroq.pure._ops.Watched` on a pooled connection, held for its round trips."""
        pool: Any = self._pool
        conn = pool.get_connection()
        try:
            results = self._transaction(conn, request)
            if request.forget and results is not None:
                try:
                    conn.send_command('DEL', request.key)
                    conn.read_response()
                except redis.RedisError:
                    conn.disconnect()  # best effort: what came before stands, and the record expires
            return results
        except BaseException:
            conn.disconnect()  # a reply may still be on its way, or a WATCH still set: never reuse it
            raise
        finally:
            pool.release(conn)

    @staticmethod
    def _transaction(conn: Any, request: _ops.Watched) -> Any:
        """WATCH + GET, then UNWATCH ([]) or MULTI ... EXEC (its results, or None when the key changed)."""
        conn.send_packed_command(conn.pack_commands([('WATCH', request.key), ('GET', request.key)]))
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

    # --- API ---

    def topic(self, name: str) -> Topic:
        """An rfq topic. Raises InvalidName unless ``name`` matches ``[A-Za-z0-9_.-]{1,128}``."""
        return Topic(self, _ops.topic_keys(_ops.check_topic(name)))

    def topics(self) -> list[str]:
        """Every topic with a backlog or nextlog, sorted; found with SCAN, never KEYS."""
        return self._run(_ops.topics(self._ctx))

    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> RsmqQueue:
        """An RSMQ queue (smrchy/rsmq and PyRSMQ compatible). ``realtime``: PUBLISH the queue size on send."""
        return RsmqQueue(self, _rsmq.queue_ref(qname, ns, realtime))

    def rsmq_queues(self, ns: str = 'rsmq') -> list[str]:
        """The RSMQ queues of a namespace, sorted."""
        return self._run(_rsmq.queues(self._ctx, ns))

    def stream(self, name: str) -> Stream:
        """A Streams topic. Raises InvalidName unless ``name`` matches ``[A-Za-z0-9_.-]{1,128}``."""
        return Stream(self, _streams.stream_ref(name))

    def streams(self) -> list[str]:
        """Every Streams topic (dead-letter streams included), sorted; found with SCAN, never KEYS."""
        return self._run(_streams.streams(self._ctx))

    def claim(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> list[Message]:
        """Claim up to ``count`` messages across topics in priority order (the first topic first)."""
        return self._run(_ops.claim_many(self._ctx, topics, count, block, lease, owner))

    def commit(self, messages: Iterable[Message]) -> list[str]:
        """Commit messages of any topics; returns the ids committed (fenced, see Topic.commit)."""
        return self._run(_ops.commit_many(self._ctx, messages))

    def extend(self, messages: Iterable[Message], lease: float = 30.0) -> list[str]:
        """Renew leases of messages of any topics; returns the ids renewed."""
        return self._run(_ops.extend_many(self._ctx, messages, lease))

    def release(self, messages: Iterable[Message], delay: float = 0.0) -> list[str]:
        """Give messages of any topics back to their backlogs, now or after ``delay`` seconds; returns the ids released."""
        return self._run(_ops.release_many(self._ctx, messages, delay))

    def ping(self) -> bool:
        """Round trip to Redis; True when it answers."""
        return self._run(_ops.ping(self._ctx))

    def close(self) -> None:
        """Close every connection. Later calls raise ConnectionFailed."""
        if not self._closed:
            self._closed = True
            self._pool.disconnect()
            self._blocking_pool.disconnect()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@final
class Topic:
    """An rfq topic on a :class:`Client`."""

    __slots__ = ('_client', '_ctx', '_keys')

    def __init__(self, client: Client, topic_keys: _ops.TopicKeys) -> None:
        self._client = client
        self._ctx = client._ctx
        self._keys = topic_keys

    @property
    def name(self) -> str:
        return self._keys.name

    def __repr__(self) -> str:
        return f'Topic(name={self._keys.name!r}, url={self._ctx.shown_url!r})'

    def publish(self, fields: Mapping[str, str], front: bool = False) -> str:
        """Publish one message; returns its id."""
        return self._client._run(_ops.publish(self._ctx, self._keys, fields, front))

    def publish_batch(self, messages: Iterable[Mapping[str, str]], front: bool = False) -> list[str]:
        """Publish many messages (validated first, written in atomic chunks); returns their ids in input order."""
        return self._client._run(_ops.publish_batch(self._ctx, self._keys, messages, front))

    def publish_stream(self, messages: Iterable[Mapping[str, str]]) -> int:
        """Publish from an iterable of any length, ``chunk_size`` messages per atomic call; returns how many.

        Memory stays bounded: each chunk is pulled, checked and sent before the next is pulled. A bad message
        raises BatchError before its chunk is written; that error, or a failed call, carries ``published``
        (the messages of the chunks before it, which stay published). The iterable's own errors pass unchanged.
        """
        return self._client._run(_ops.publish_stream(self._ctx, self._keys, messages))

    def publish_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        id_column: str | None = None,
        value_column: str | None = None,
    ) -> tuple[int, int]:
        """Publish Arrow data (RecordBatch, Table, RecordBatchReader or an Arrow PyCapsule object), one message per
        row, ``chunk_size`` rows per atomic call; returns ``(rows, published)``. With ``dedup_key`` each chunk is
        published at most once per key (for ``dedup_ttl`` seconds). Needs pyarrow."""
        return self._client._run(
            _arrow.publish_topic(self._ctx, self._keys, data, dedup_key, dedup_ttl, id_column, value_column)
        )

    def claim(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> list[Message]:
        """Claim up to ``count`` messages, oldest first, each leased for ``lease`` seconds."""
        return self._client._run(_ops.claim(self._ctx, self._keys, count, block, lease, owner))

    def commit(self, messages: Iterable[Message | str]) -> list[str]:
        """Delete processed messages; returns the ids actually committed (a Message is fenced, a bare id not)."""
        return self._client._run(_ops.commit(self._ctx, self._keys, messages))

    def extend(self, messages: Iterable[Message | str], lease: float = 30.0) -> list[str]:
        """Renew leases to ``lease`` seconds from now; returns the ids renewed."""
        return self._client._run(_ops.extend(self._ctx, self._keys, messages, lease))

    def release(self, messages: Iterable[Message | str], delay: float = 0.0) -> list[str]:
        """Give claimed messages back to the front of the backlog, now or after ``delay`` seconds; returns the ids
        released."""
        return self._client._run(_ops.release(self._ctx, self._keys, messages, delay))

    def dead_letter(self, messages: Iterable[Message | str], error: str = '', to: str | None = None) -> list[str]:
        """Move held messages, atomically and fenced, to the backlog of ``to`` (default ``<topic>.dead``),
        recording ``error``; returns the ids moved."""
        return self._client._run(_ops.dead_letter(self._ctx, self._keys, messages, error, to))

    def resume(self, owner: str, lease: float = 30.0) -> list[Message]:
        """Claim again, with new tokens and leases, the messages that worker ``owner`` still holds."""
        return self._client._run(_ops.resume(self._ctx, self._keys, owner, lease))

    def harvest(self, all: bool = False, lease: float = 30.0) -> list[str]:
        """Requeue claims whose lease expired (``all=True``: every claim, rfq's blind harvest); returns their ids."""
        return self._client._run(_ops.harvest(self._ctx, self._keys, all, lease))

    def peek(self, id: str) -> dict[str, str] | None:
        """The fields of a message, or None if it does not exist."""
        return self._client._run(_ops.peek(self._ctx, self._keys, id))

    def fetch_arrow(self, ids: Iterable[str], fields: Iterable[str]) -> pa.RecordBatch:
        """The messages with these ids as one Arrow batch: ``_id``, ``_deliveries``, one binary column per field."""
        return self._client._run(_ops.fetch_arrow(self._ctx, self._keys, ids, fields))

    def inspect(
        self, queue: Literal['backlog', 'nextlog'] = 'backlog', start: int = 0, count: int = 100
    ) -> list[InspectEntry]:
        """A page of the backlog or nextlog in consumption order (oldest first), with claim details."""
        return self._client._run(_ops.inspect(self._ctx, self._keys, queue, start, count))

    def stats(self) -> TopicStats:
        """Backlog and nextlog lengths, leases, expired leases and the oldest message's age."""
        return self._client._run(_ops.stats(self._ctx, self._keys))

    def purge(self, queue: Literal['backlog', 'nextlog'] = 'backlog') -> int:
        """Delete every message of the backlog (or nextlog); returns how many."""
        return self._client._run(_ops.purge(self._ctx, self._keys, queue))


@final
class RsmqQueue:
    """An RSMQ queue on a :class:`Client`: the keys, units, ids and scripts of smrchy/rsmq 0.12."""

    __slots__ = ('_client', '_ctx', '_ref')

    def __init__(self, client: Client, ref: _rsmq.RsmqRef) -> None:
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
        return f'RsmqQueue(name={self._ref.name!r}, ns={self._ref.ns!r}, url={self._ctx.shown_url!r})'

    def create(
        self,
        vt: int = 30,
        delay: int = 0,
        maxsize: int = 65536,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> None:
        """Create the queue (QueueExists if it exists); ``max_receives`` with ``dead_letter`` adds a dead-letter queue."""
        self._client._run(_rsmq.create(self._ctx, self._ref, vt, delay, maxsize, max_receives, dead_letter))

    def delete_queue(self) -> None:
        """Delete the queue and all its messages (QueueNotFound if it does not exist)."""
        self._client._run(_rsmq.delete_queue(self._ctx, self._ref))

    def attributes(self) -> RsmqAttributes:
        """The queue's attributes and message counts."""
        return self._client._run(_rsmq.attributes(self._ctx, self._ref))

    def set_attributes(
        self,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> RsmqAttributes:
        """Change the given attributes (``max_receives=0`` removes the dead-letter queue); returns them all."""
        return self._client._run(
            _rsmq.set_attributes(self._ctx, self._ref, vt, delay, maxsize, max_receives, dead_letter)
        )

    def send(self, message: str, delay: float | None = None) -> str:
        """Send a message (visible after ``delay`` seconds, default the queue's); returns its id."""
        return self._client._run(_rsmq.send_one(self._ctx, self._ref, message, delay))

    def send_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        delay: float | None = None,
    ) -> tuple[int, int]:
        """Send Arrow data, one message per row (the value column, else the row as a JSON object); returns
        ``(rows, published)`` (see ``Topic.publish_arrow``)."""
        return self._client._run(
            _arrow.send_rsmq(self._ctx, self._ref, data, dedup_key, dedup_ttl, value_column, delay)
        )

    def send_batch(self, messages: Iterable[str], delay: float | None = None) -> list[str]:
        """Send many messages (validated first, chunks pipelined); returns their ids in input order."""
        return self._client._run(_rsmq.send_batch(self._ctx, self._ref, messages, delay))

    def receive(self, vt: float | None = None, block: float | None = None) -> RsmqMessage | None:
        """Receive the oldest visible message and hide it for ``vt`` seconds; ``block``: wait up to that long."""
        messages = self._client._run(_rsmq.receive(self._ctx, self._ref, 1, vt, block))
        return messages[0] if messages else None

    def receive_batch(self, count: int, vt: float | None = None, block: float | None = None) -> list[RsmqMessage]:
        """Receive up to ``count`` visible messages, oldest first."""
        return self._client._run(_rsmq.receive(self._ctx, self._ref, count, vt, block))

    def pop(self) -> RsmqMessage | None:
        """Receive and delete the oldest visible message."""
        messages = self._client._run(_rsmq.receive(self._ctx, self._ref, 1, None, None, pop=True))
        return messages[0] if messages else None

    def pop_batch(self, count: int) -> list[RsmqMessage]:
        """Receive and delete up to ``count`` visible messages, oldest first."""
        return self._client._run(_rsmq.receive(self._ctx, self._ref, count, None, None, pop=True))

    def delete(self, id: str) -> bool:
        """Delete a message; True if it was there."""
        return self._client._run(_rsmq.delete(self._ctx, self._ref, id))

    def delete_batch(self, ids: Iterable[str]) -> list[str]:
        """Delete messages; returns the ids that were there."""
        return self._client._run(_rsmq.delete_batch(self._ctx, self._ref, ids))

    def change_visibility(self, id: str, vt: float) -> bool:
        """Hide a message for ``vt`` seconds from now; True if it exists."""
        return self._client._run(_rsmq.change_visibility(self._ctx, self._ref, id, vt))


@final
class Stream:
    """A Streams topic on a :class:`Client`: a Redis stream that consumer groups read, each at its own offset."""

    __slots__ = ('_client', '_ctx', '_ref')

    def __init__(self, client: Client, ref: _streams.StreamRef) -> None:
        self._client = client
        self._ctx = client._ctx
        self._ref = ref

    @property
    def name(self) -> str:
        return self._ref.name

    def __repr__(self) -> str:
        return f'Stream(name={self._ref.name!r})'

    def group(
        self,
        name: str,
        consumer: str | None = None,
        *,
        max_deliveries: int | None = None,
        dead_letter: str | None = None,
    ) -> ConsumerGroup:
        """A consumer group of this stream (no I/O; see :meth:`ConsumerGroup.create`).

        Args:
            name: the group: 1-128 printable ASCII characters, no spaces.
            consumer: this reader's name in the group; default ``<hostname>-<pid>``, one per process.
            max_deliveries: autoclaim dead-letters an entry already delivered this many times (None: never).
            dead_letter: the stream that receives dead-lettered entries, default ``<name>.dead``.
        """
        return ConsumerGroup(self._client, _streams.group_ref(self._ref, name, consumer, max_deliveries, dead_letter))

    def publish(
        self,
        fields: Mapping[str, str],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> str:
        """Append one entry; returns its id. ``maxlen`` or ``max_age`` (seconds) trims old entries after it."""
        return self._client._run(_streams.publish(self._ctx, self._ref, fields, maxlen, max_age, approximate))

    def publish_batch(
        self,
        messages: Iterable[Mapping[str, str]],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> list[str]:
        """Append many entries (all validated first, written in atomic chunks); returns their ids in input order."""
        return self._client._run(_streams.publish_batch(self._ctx, self._ref, messages, maxlen, max_age, approximate))

    def publish_arrow(
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
        """Append Arrow data, one entry per row; returns ``(rows, published)`` (see ``Topic.publish_arrow``)."""
        return self._client._run(
            _arrow.publish_stream(
                self._ctx, self._ref, data, dedup_key, dedup_ttl, value_column, maxlen, max_age, approximate
            )
        )

    def length(self) -> int:
        """The number of entries (0 for a missing stream)."""
        return self._client._run(_streams.length(self._ctx, self._ref))

    def range(self, start: str | datetime = '-', end: str | datetime = '+', count: int = 100) -> list[StreamEntry]:
        """Up to ``count`` entries from ``start`` to ``end`` (ids, ``'('`` + id for exclusive, or aware datetimes).

        Reads outside any group: nothing is delivered, so ``deliveries`` is 0.
        """
        return self._client._run(_streams.range_(self._ctx, self._ref, start, end, count))

    def range_arrow(
        self, start: str | datetime, end: str | datetime, count: int, fields: Iterable[str]
    ) -> pa.RecordBatch:
        """What :meth:`range` returns, as one Arrow batch: ``_id``, then one binary column per field."""
        return self._client._run(_streams.range_arrow(self._ctx, self._ref, start, end, count, fields))

    def trim(self, *, maxlen: int | None = None, max_age: float | None = None, approximate: bool = True) -> int:
        """Remove old entries now, by count or age; returns how many were removed."""
        return self._client._run(_streams.trim(self._ctx, self._ref, maxlen, max_age, approximate))

    def info(self) -> StreamInfo:
        """Length, first and last ids and the number of groups (all empty for a missing stream)."""
        return self._client._run(_streams.info(self._ctx, self._ref))

    def groups(self) -> list[GroupInfo]:
        """The stream's consumer groups, in Redis's order ([] for a missing stream)."""
        return self._client._run(_streams.groups(self._ctx, self._ref))

    def delete(self) -> bool:
        """Delete the stream with all its entries and groups; True if it existed."""
        return self._client._run(_streams.delete(self._ctx, self._ref))


@final
class ConsumerGroup:
    """A consumer group of a :class:`Stream`, read as one consumer: entries stay pending until acknowledged."""

    __slots__ = ('_client', '_ctx', '_ref')

    def __init__(self, client: Client, ref: _streams.GroupRef) -> None:
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
            f'ConsumerGroup(stream={self._ref.stream.name!r}, name={self._ref.name!r}, consumer={self._ref.consumer!r})'
        )

    def create(self, start: str | datetime = '$', *, exist_ok: bool = True) -> bool:
        """Create the group (and the stream if missing), reading from ``start``: '$' only new entries, '0' all.

        Returns False if it existed (QueueExists instead when ``exist_ok`` is False).
        """
        return self._client._run(_streams.create(self._ctx, self._ref, start, exist_ok))

    def read(self, count: int = 1, block: float | None = None) -> list[StreamEntry]:
        """Up to ``count`` entries never delivered to the group; ``block``: wait up to that many seconds for one."""
        return self._client._run(_streams.read(self._ctx, self._ref, count, block))

    def ack(self, entries: Iterable[StreamEntry | str]) -> list[str]:
        """Acknowledge processed entries; returns the ids that were pending and are acknowledged now."""
        return self._client._run(_streams.ack(self._ctx, self._ref, entries))

    def pending(
        self, count: int = 100, *, consumer: str | None = None, min_idle: float | None = None
    ) -> list[PendingEntry]:
        """Delivered, unacknowledged entries, oldest first; of one consumer, or idle at least ``min_idle`` seconds."""
        return self._client._run(_streams.pending(self._ctx, self._ref, count, consumer, min_idle))

    def autoclaim(self, min_idle: float, count: int = 100, *, error: str = '') -> list[StreamEntry]:
        """Take over entries pending for ``min_idle`` seconds (a crashed consumer's); returns them.

        Entries already delivered ``max_deliveries`` times go to the dead-letter stream instead, with ``error``.
        """
        return self._client._run(_streams.autoclaim(self._ctx, self._ref, min_idle, count, error))

    def dead_letter(self, entries: Iterable[StreamEntry | str], error: str = '') -> list[str]:
        """Move pending entries to the dead-letter stream, recording ``error``; returns the ids moved."""
        return self._client._run(_streams.dead_letter(self._ctx, self._ref, entries, error))

    def seek(self, position: str | datetime) -> None:
        """Move the group's offset, to replay ('0': from the start, an id or a datetime) or skip ('$')."""
        self._client._run(_streams.seek(self._ctx, self._ref, position))

    def info(self) -> GroupInfo:
        """The group's consumers, pending count, offset and lag (QueueNotFound if it does not exist)."""
        return self._client._run(_streams.group_info(self._ctx, self._ref))

    def delete(self) -> bool:
        """Delete the group and its pending list; True if it existed."""
        return self._client._run(_streams.delete_group(self._ctx, self._ref))
