"""The contract every client kind satisfies: one :class:`typing.Protocol` per handle, sync and asyncio.

``ferroq.Client`` (native) and ``ferroq.pure.Client`` (redis-py) both satisfy :class:`ClientProtocol`, their
topics :class:`TopicProtocol`, and so on; the asyncio clients satisfy the ``Async*`` protocols. Code that works
with any client (the worker, the CLI, the benchmark, the Spark source, your own) annotates with these instead
of a union of classes, and mypy checks every implementation against them:

>>> from ferroq.typing import ClientProtocol
>>> def backlog(client: ClientProtocol, topic: str) -> int:
...     return client.topic(topic).stats().backlog

The protocols hold the documentation of each method; the pure client takes its docstrings from them. They are
``runtime_checkable``: ``isinstance(obj, TopicProtocol)`` checks that the methods are there (not their
signatures: ``tests/unit/test_typing.py`` checks those, against the native stub).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, Union, runtime_checkable

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
    from typing_extensions import Self  # typing.Self from Python 3.11

    from ferroq.batches import AsyncBatches, AsyncRsmqBatches, Batches, RsmqBatches

__all__ = [
    'AnyClient',
    'AsyncClientProtocol',
    'AsyncConsumerGroupProtocol',
    'AsyncRsmqQueueProtocol',
    'AsyncStreamProtocol',
    'AsyncTopicProtocol',
    'ClientProtocol',
    'ConsumerGroupProtocol',
    'RsmqQueueProtocol',
    'StreamProtocol',
    'TopicProtocol',
]


C = TypeVar('C', bound=type)


def documented_by(protocol: type) -> Callable[[C], C]:
    """A class decorator: each method or property of the API without a docstring takes the protocol's, so the
    documentation of an operation is written once for every implementation (the asyncio protocols and the pure
    clients take it from the sync protocols); a method the class itself defines also takes its qualified name
    (the pure clients' methods are made from shared plans)."""

    def document(cls: C) -> C:
        for klass in cls.__mro__:
            if klass.__module__ in ('builtins', 'typing'):
                continue
            for name, member in list(vars(klass).items()):
                if name.startswith('_') and name not in ('__enter__', '__exit__', '__aenter__', '__aexit__'):
                    continue
                source = inspect.getattr_static(protocol, name, None)
                if isinstance(source, property):
                    source = source.fget
                doc = getattr(source, '__doc__', None)
                if isinstance(member, property):
                    if doc and not member.__doc__:
                        setattr(klass, name, property(member.fget, member.fset, member.fdel, doc))
                elif inspect.isfunction(member):
                    if klass is cls:
                        member.__qualname__ = f'{cls.__qualname__}.{name}'
                    if doc and not member.__doc__:
                        member.__doc__ = doc
        return cls

    return document


@runtime_checkable
class ClientProtocol(Protocol):
    """What any client offers: ``ferroq.Client`` and ``ferroq.pure.Client`` satisfy it."""

    @property
    def url(self) -> str:
        """The URL in use, with any password replaced by ``***``."""

    def topic(self, name: str) -> TopicProtocol:
        """An rfq topic. Raises InvalidName unless ``name`` matches ``[A-Za-z0-9_.-]{1,128}``."""

    def topics(self) -> list[str]:
        """Every topic with a backlog or nextlog, sorted; found with SCAN, never KEYS."""

    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> RsmqQueueProtocol:
        """An RSMQ queue (keys, units, ids and replies of smrchy/rsmq and PyRSMQ). No I/O.

        ``realtime=True``: every send also PUBLISHes the queue size on ``{ns}:rt:{qname}``.

        Raises:
            InvalidName: ``qname`` does not match ``[A-Za-z0-9_-]{1,160}`` or ``ns`` ``[A-Za-z0-9_.:-]{1,64}``.
        """

    def rsmq_queues(self, ns: str = 'rsmq') -> list[str]:
        """The RSMQ queues of a namespace (``SMEMBERS {ns}:QUEUES``), sorted."""

    def stream(self, name: str) -> StreamProtocol:
        """A Streams topic (the Redis STREAM ``ferroq:stream:<name>``). No I/O.

        Raises:
            InvalidName: ``name`` does not match ``[A-Za-z0-9_.-]{1,128}``.
        """

    def streams(self) -> list[str]:
        """Every Streams topic (a STREAM under ``ferroq:stream:``, dead-letter streams included), sorted; SCAN."""

    def claim(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> list[Message]:
        """Claim up to ``count`` messages across topics in priority order (the first topic first).

        ``owner`` (a worker name) records the claims in that worker's processing list (see Topic.resume).
        """

    def commit(self, messages: Iterable[Message]) -> list[str]:
        """Commit messages of any topics; returns the ids committed (fenced, see Topic.commit)."""

    def extend(self, messages: Iterable[Message], lease: float = 30.0) -> list[str]:
        """Renew leases of messages of any topics; returns the ids renewed."""

    def release(self, messages: Iterable[Message], delay: float = 0.0) -> list[str]:
        """Give messages of any topics back to their backlogs, now or after ``delay`` seconds; returns the ids
        released."""

    def ping(self) -> bool:
        """Round trip to Redis; True when it answers."""

    def close(self) -> None:
        """Close every connection. Later calls raise ConnectionFailed."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
@documented_by(ClientProtocol)
class AsyncClientProtocol(Protocol):
    """What any asyncio client offers: ``ferroq.AsyncClient`` and ``ferroq.pure.AsyncClient`` satisfy it."""

    @property
    def url(self) -> str: ...

    def topic(self, name: str) -> AsyncTopicProtocol: ...

    async def topics(self) -> list[str]: ...

    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> AsyncRsmqQueueProtocol: ...

    async def rsmq_queues(self, ns: str = 'rsmq') -> list[str]: ...

    def stream(self, name: str) -> AsyncStreamProtocol: ...

    async def streams(self) -> list[str]: ...

    async def claim(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> list[Message]: ...

    async def commit(self, messages: Iterable[Message]) -> list[str]: ...

    async def extend(self, messages: Iterable[Message], lease: float = 30.0) -> list[str]: ...

    async def release(self, messages: Iterable[Message], delay: float = 0.0) -> list[str]: ...

    async def ping(self) -> bool: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class TopicProtocol(Protocol):
    """What any rfq topic offers: ``ferroq.Topic`` and ``ferroq.pure.Topic`` satisfy it."""

    @property
    def name(self) -> str: ...

    def publish(self, fields: Mapping[str, str], front: bool = False) -> str:
        """Publish one message; returns its id.

        Raises:
            InvalidMessage: ``fields`` is not a non-empty flat map of str to str.
            MessageTooLarge: it is larger than ``max_message_bytes``.
        """

    def publish_batch(self, messages: Iterable[Mapping[str, str]], front: bool = False) -> list[str]:
        """Publish many messages; returns their ids in input order.

        One round trip and one atomic script per chunk of ``chunk_size``. Every message is validated
        before anything is sent: one bad item raises BatchError and nothing is written.
        ``front=True`` puts the batch before everything waiting, still consumed in input order.
        """

    def publish_stream(self, messages: Iterable[Mapping[str, str]]) -> int:
        """Publish the messages of an iterable of any length (a generator); returns how many were published.

        Pulls ``chunk_size`` messages at a time, checks them as publish_batch does and sends them as one
        atomic script call, the GIL released; the next chunk is read while one is in flight (never more),
        so memory stays bounded. Nothing is kept per message: use publish_batch for the ids.

        Each chunk is atomic; chunks before an error stay published. A bad message raises BatchError
        (indexes counted from the start of the stream) before its chunk is written; that error, or a failed
        call (ConnectionFailed: the outcome of the chunk in flight is unknown), has ``published``: how many
        messages the chunks before it held. An exception of the iterable itself propagates unchanged.
        """

    def publish_arrow(
        self,
        data: object,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        id_column: str | None = None,
        value_column: str | None = None,
    ) -> tuple[int, int]:
        """Publish Arrow data, one message per row; returns ``(rows, published)``.

        ``data``: a pyarrow RecordBatch, Table or RecordBatchReader, or any object with ``__arrow_c_stream__``
        / ``__arrow_c_array__`` (the Arrow PyCapsule interface), taken through the Arrow C Data Interface.
        Every column becomes a field named after it holding the value's string form (docs/protocol.md,
        "Arrow rows"); a null leaves the field out. ``value_column``: one field with that (string or binary,
        raw) column only. ``id_column``: that column is the message id (insert-if-absent), not a field.

        Rows are cut into chunks of ``chunk_size`` by their index in the whole data, one atomic script call
        each, converted and sent with the GIL released, the next chunk converted while one is in flight.
        ``dedup_key`` (e.g. job and partition): each chunk is written at most once per key within
        ``dedup_ttl`` seconds, even if its messages were consumed meanwhile; ``published`` does not count the
        rows of chunks skipped so. Arguments and the schema are checked before anything is written; a bad row
        (InvalidMessage, MessageTooLarge, naming the row) is raised before its chunk is sent, with
        ``published`` (the messages written before it) on the error.
        """

    def claim(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> list[Message]:
        """Claim up to ``count`` messages, oldest first, each leased for ``lease`` seconds.

        ``block=None`` (or 0) returns at once; ``block=seconds`` waits up to that long for the first message.
        Delayed releases that are due return to the backlog first. ``owner`` (a worker name) records the
        claims in that worker's processing list (see :meth:`resume`).
        """

    def batches(
        self, count: int = 100, *, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> Batches:
        """A claim+commit loop's batches, the next claimed while the current one is handled (see ferroq.batches).

        Each batch is ``claim(count, block, lease, owner)``; the iteration ends at the first claim that finds
        nothing. The caller commits (or releases) each batch. The batch claimed ahead is leased from its claim
        on; ``close()`` or leaving the ``with`` block gives it back to the front of the backlog. Arguments are
        checked here, before anything is claimed.
        """

    def commit(self, messages: Iterable[Message | str]) -> list[str]:
        """Delete processed messages; returns the ids actually committed.

        Fenced: a Message is committed only while its claim is current (its lease was not taken over).
        A bare id is committed without fencing, whoever holds it.
        """

    def extend(self, messages: Iterable[Message | str], lease: float = 30.0) -> list[str]:
        """Renew leases to ``lease`` seconds from now; returns the ids renewed."""

    def release(self, messages: Iterable[Message | str], delay: float = 0.0) -> list[str]:
        """Give claimed messages back to the front of the backlog; returns the ids released.

        ``delay`` (seconds, up to 7 days) holds them in the topic's delayed set until then (Redis clock);
        the next claim or harvest after that returns them to the front of the backlog. Fenced like commit;
        delivery counts are kept.
        """

    def dead_letter(self, messages: Iterable[Message | str], error: str = '', to: str | None = None) -> list[str]:
        """Move held messages to the backlog of the topic ``to`` (default ``<topic>.dead``); returns the ids moved.

        One atomic, fenced step per chunk: the message leaves this topic (nextlog, lease, delivery count)
        and becomes an ordinary message of the dead topic, fields unchanged. ``error`` is recorded there
        and shown by ``inspect`` (``InspectEntry.error``).
        """

    def resume(self, owner: str, lease: float = 30.0) -> list[Message]:
        """Claim again the messages worker ``owner`` still holds (its processing list), with new tokens.

        For a worker that restarts under the same name: its unfinished claims come back before new work.
        Reads the whole nextlog, so call it once at start.
        """

    def harvest(self, all: bool = False, lease: float = 30.0) -> list[str]:
        """Requeue claims whose lease expired; returns their ids.

        Nextlog entries without a lease (claimed by plain rfq consumers) get ``lease`` at first sight.
        ``all=True`` is rfq's blind harvest: it requeues every claim, unsafe while consumers run.
        """

    def peek(self, id: str) -> dict[str, str] | None:
        """The fields of a message, or None if it does not exist."""

    def fetch_arrow(self, ids: Iterable[str], fields: Iterable[str], *, held: bool = False) -> pa.RecordBatch:
        """The messages with these ids as one Arrow batch (needs pyarrow), in the order of ``ids``.

        Columns: ``_id`` (utf8), ``_deliveries`` (int64: the delivery count, 0 if never claimed), then one
        binary column per name in ``fields`` (null where a message lacks the field). Ids whose message is gone
        (committed) are left out. Read in rounds of ``chunk_size`` ids (one round trip each); nothing is
        claimed. Only the fields asked for are read.

        ``held=True`` says the caller's claim holds every one of these messages (a reader of its own claims):
        each counts that claim as a delivery without asking the in-flight set, which saves the server a lookup
        per message.
        """

    def inspect(
        self, queue: Literal['backlog', 'nextlog'] = 'backlog', start: int = 0, count: int = 100
    ) -> list[InspectEntry]:
        """A page of the backlog or nextlog in consumption order (oldest first), with claim details."""

    def stats(self) -> TopicStats:
        """Backlog and nextlog lengths, leases, expired leases and the oldest message's age."""

    def purge(self, queue: Literal['backlog', 'nextlog'] = 'backlog') -> int:
        """Delete every message of the backlog (or nextlog); returns how many."""


@runtime_checkable
@documented_by(TopicProtocol)
class AsyncTopicProtocol(Protocol):
    """What any asyncio rfq topic offers: ``ferroq.AsyncTopic`` and ``ferroq.pure.AsyncTopic`` satisfy it."""

    @property
    def name(self) -> str: ...

    async def publish(self, fields: Mapping[str, str], front: bool = False) -> str: ...

    async def publish_batch(self, messages: Iterable[Mapping[str, str]], front: bool = False) -> list[str]: ...

    async def publish_stream(self, messages: Iterable[Mapping[str, str]]) -> int: ...

    async def publish_arrow(
        self,
        data: object,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        id_column: str | None = None,
        value_column: str | None = None,
    ) -> tuple[int, int]: ...

    async def claim(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> list[Message]: ...

    def batches(
        self, count: int = 100, *, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> AsyncBatches: ...

    async def commit(self, messages: Iterable[Message | str]) -> list[str]: ...

    async def extend(self, messages: Iterable[Message | str], lease: float = 30.0) -> list[str]: ...

    async def release(self, messages: Iterable[Message | str], delay: float = 0.0) -> list[str]: ...

    async def dead_letter(
        self, messages: Iterable[Message | str], error: str = '', to: str | None = None
    ) -> list[str]: ...

    async def resume(self, owner: str, lease: float = 30.0) -> list[Message]: ...

    async def harvest(self, all: bool = False, lease: float = 30.0) -> list[str]: ...

    async def peek(self, id: str) -> dict[str, str] | None: ...

    async def fetch_arrow(self, ids: Iterable[str], fields: Iterable[str], *, held: bool = False) -> pa.RecordBatch: ...

    async def inspect(
        self, queue: Literal['backlog', 'nextlog'] = 'backlog', start: int = 0, count: int = 100
    ) -> list[InspectEntry]: ...

    async def stats(self) -> TopicStats: ...

    async def purge(self, queue: Literal['backlog', 'nextlog'] = 'backlog') -> int: ...


@runtime_checkable
class RsmqQueueProtocol(Protocol):
    """What any RSMQ queue offers: ``ferroq.RsmqQueue`` and ``ferroq.pure.RsmqQueue`` satisfy it."""

    @property
    def name(self) -> str: ...

    @property
    def ns(self) -> str: ...

    @property
    def realtime(self) -> bool: ...

    def create(
        self,
        vt: int = 30,
        delay: int = 0,
        maxsize: int = 65536,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> None:
        """Create the queue (RSMQ createQueue).

        ``max_receives`` and ``dead_letter`` (given together): a message received that many times moves to
        the dead-letter queue (same namespace, must exist) at its next receive.

        Raises:
            QueueExists: a queue of that name exists.
            QueueNotFound: the dead-letter queue does not exist.
        """

    def delete_queue(self) -> None:
        """Delete the queue and every message in it. Raises QueueNotFound."""

    def attributes(self) -> RsmqAttributes:
        """The queue attributes (RSMQ getQueueAttributes) and the dead-letter settings."""

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

    def send(self, message: str, delay: float | None = None) -> str:
        """Send one message; returns its id. ``delay`` (seconds) overrides the queue's.

        Raises:
            MessageTooLarge: longer than the queue's maxsize (UTF-16 code units) or max_message_bytes.
        """

    def send_arrow(
        self,
        data: object,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        delay: float | None = None,
    ) -> tuple[int, int]:
        """Send Arrow data, one message per row; returns ``(rows, published)`` (see ``Topic.publish_arrow``).

        The body is the ``value_column`` (a string column), else the JSON object of the row's fields (their
        string forms as JSON strings, in column order, nulls left out).
        """

    def send_batch(self, messages: Iterable[str], delay: float | None = None) -> list[str]:
        """Send many messages; returns their ids in input order.

        One script per chunk of ``chunk_size``, pipelined in one round trip. Every message is checked before
        anything is written: bad items raise BatchError.
        """

    def receive(self, vt: float | None = None, block: float | None = None) -> RsmqMessage | None:
        """Receive the oldest visible message and hide it for ``vt`` seconds (default: the queue's vt).

        ``block=seconds`` waits up to that long for one, woken by realtime notifications.
        """

    def receive_batch(self, count: int, vt: float | None = None, block: float | None = None) -> list[RsmqMessage]:
        """Receive up to ``count`` messages, oldest first (see :meth:`receive`)."""

    def batches(self, count: int = 100, *, vt: float | None = None, block: float | None = None) -> RsmqBatches:
        """A receive+delete loop's batches, the next received while the current one is handled (see
        ferroq.batches).

        Each batch is ``receive_batch(count, vt, block)``; the iteration ends at the first receive that finds
        nothing. The caller deletes each batch. The batch received ahead is hidden for ``vt`` from its receive
        on; ``close()`` or leaving the ``with`` block makes it visible again at once. Arguments are checked
        here, before anything is received.
        """

    def pop(self) -> RsmqMessage | None:
        """Receive and delete the oldest visible message (RSMQ popMessage)."""

    def pop_batch(self, count: int) -> list[RsmqMessage]:
        """Receive and delete up to ``count`` messages, oldest first."""

    def delete(self, id: str) -> bool:
        """Delete a message; True if it existed."""

    def delete_batch(self, ids: Iterable[str]) -> list[str]:
        """Delete messages; returns the ids deleted, in input order."""

    def change_visibility(self, id: str, vt: float) -> bool:
        """Hide a message for ``vt`` seconds from now; False when there is no such message."""


@runtime_checkable
@documented_by(RsmqQueueProtocol)
class AsyncRsmqQueueProtocol(Protocol):
    """What any asyncio RSMQ queue offers: ``ferroq.AsyncRsmqQueue`` and ``ferroq.pure.AsyncRsmqQueue`` satisfy it."""

    @property
    def name(self) -> str: ...

    @property
    def ns(self) -> str: ...

    @property
    def realtime(self) -> bool: ...

    async def create(
        self,
        vt: int = 30,
        delay: int = 0,
        maxsize: int = 65536,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> None: ...

    async def delete_queue(self) -> None: ...

    async def attributes(self) -> RsmqAttributes: ...

    async def set_attributes(
        self,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> RsmqAttributes: ...

    async def send(self, message: str, delay: float | None = None) -> str: ...

    async def send_arrow(
        self,
        data: object,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        delay: float | None = None,
    ) -> tuple[int, int]: ...

    async def send_batch(self, messages: Iterable[str], delay: float | None = None) -> list[str]: ...

    async def receive(self, vt: float | None = None, block: float | None = None) -> RsmqMessage | None: ...

    async def receive_batch(
        self, count: int, vt: float | None = None, block: float | None = None
    ) -> list[RsmqMessage]: ...

    def batches(self, count: int = 100, *, vt: float | None = None, block: float | None = None) -> AsyncRsmqBatches: ...

    async def pop(self) -> RsmqMessage | None: ...

    async def pop_batch(self, count: int) -> list[RsmqMessage]: ...

    async def delete(self, id: str) -> bool: ...

    async def delete_batch(self, ids: Iterable[str]) -> list[str]: ...

    async def change_visibility(self, id: str, vt: float) -> bool: ...


@runtime_checkable
class StreamProtocol(Protocol):
    """What any Streams topic offers: ``ferroq.Stream`` and ``ferroq.pure.Stream`` satisfy it."""

    @property
    def name(self) -> str: ...

    def group(
        self,
        name: str,
        consumer: str | None = None,
        *,
        max_deliveries: int | None = None,
        dead_letter: str | None = None,
    ) -> ConsumerGroupProtocol:
        """A consumer group of this stream (no I/O; :meth:`ConsumerGroup.create` makes it in Redis).

        ``consumer`` defaults to ``<hostname>-<pid>``. ``max_deliveries``: entries delivered that many times go
        to the dead-letter stream ``dead_letter`` (default ``<name>.dead``) at the next autoclaim.

        Raises:
            InvalidName: a bad group, consumer or dead-letter stream name.
            InvalidArgument: a bad ``max_deliveries``, or a dead-letter stream that is the stream itself.
        """

    def publish(
        self,
        fields: Mapping[str, str],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> str:
        """Append one message (a flat map of str to str, at most 1000 fields); returns its entry id.

        A retry after a dropped connection resends the call's token, so the message is appended once.

        Raises:
            InvalidMessage: ``fields`` is not a non-empty flat map of str to str, or has too many fields.
            MessageTooLarge: it is larger than ``max_message_bytes``.
        """

    def publish_batch(
        self,
        messages: Iterable[Mapping[str, str]],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> list[str]:
        """Append many messages; returns their entry ids in input order.

        One atomic script per chunk of ``chunk_size``, each with its own token (appended once, even when
        retried). Every message is validated before anything is sent: bad items raise BatchError.
        """

    def publish_arrow(
        self,
        data: object,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> tuple[int, int]:
        """Append Arrow data, one entry per row; returns ``(rows, published)`` (see ``Topic.publish_arrow``)."""

    def length(self) -> int:
        """Entries in the stream (XLEN; 0 for a missing stream)."""

    def range(self, start: str | datetime = '-', end: str | datetime = '+', count: int = 100) -> list[StreamEntry]:
        """Up to ``count`` entries from ``start`` to ``end`` (inclusive; ``'('`` before an id excludes it), oldest
        first, outside any group (``deliveries`` 0)."""

    def range_arrow(
        self, start: str | datetime, end: str | datetime, count: int, fields: Iterable[str]
    ) -> pa.RecordBatch:
        """What :meth:`range` returns, as one Arrow batch (needs pyarrow): ``_id`` (utf8), then one binary
        column per name in ``fields`` (null where an entry lacks the field)."""

    def trim(self, *, maxlen: int | None = None, max_age: float | None = None, approximate: bool = True) -> int:
        """Apply a retention now (``maxlen`` or ``max_age``); returns how many entries were removed."""

    def info(self) -> StreamInfo:
        """Length, first and last entry ids and the number of groups (a missing stream is empty)."""

    def groups(self) -> list[GroupInfo]:
        """The consumer groups of the stream, in Redis's order ([] for a missing stream)."""

    def delete(self) -> bool:
        """Delete the stream and all its groups; True if it existed."""


@runtime_checkable
@documented_by(StreamProtocol)
class AsyncStreamProtocol(Protocol):
    """What any asyncio Streams topic offers: ``ferroq.AsyncStream`` and ``ferroq.pure.AsyncStream`` satisfy it."""

    @property
    def name(self) -> str: ...

    def group(
        self,
        name: str,
        consumer: str | None = None,
        *,
        max_deliveries: int | None = None,
        dead_letter: str | None = None,
    ) -> AsyncConsumerGroupProtocol: ...

    async def publish(
        self,
        fields: Mapping[str, str],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> str: ...

    async def publish_batch(
        self,
        messages: Iterable[Mapping[str, str]],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> list[str]: ...

    async def publish_arrow(
        self,
        data: object,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> tuple[int, int]: ...

    async def length(self) -> int: ...

    async def range(
        self, start: str | datetime = '-', end: str | datetime = '+', count: int = 100
    ) -> list[StreamEntry]: ...

    async def range_arrow(
        self, start: str | datetime, end: str | datetime, count: int, fields: Iterable[str]
    ) -> pa.RecordBatch: ...

    async def trim(
        self, *, maxlen: int | None = None, max_age: float | None = None, approximate: bool = True
    ) -> int: ...

    async def info(self) -> StreamInfo: ...

    async def groups(self) -> list[GroupInfo]: ...

    async def delete(self) -> bool: ...


@runtime_checkable
class ConsumerGroupProtocol(Protocol):
    """What any consumer group offers: ``ferroq.ConsumerGroup`` and ``ferroq.pure.ConsumerGroup`` satisfy it."""

    @property
    def name(self) -> str: ...

    @property
    def consumer(self) -> str: ...

    @property
    def stream(self) -> str:
        """The stream's name."""

    @property
    def max_deliveries(self) -> int | None: ...

    @property
    def dead_letter_stream(self) -> str:
        """The name of the dead-letter stream."""

    def create(self, start: str | datetime = '$', *, exist_ok: bool = True) -> bool:
        """Create the group (and the stream if missing) reading from ``start``: ``'$'`` new entries only,
        ``'0'`` everything, an id or a datetime. Returns False if it existed and ``exist_ok``.

        Raises:
            QueueExists: it exists and ``exist_ok`` is False.
        """

    def read(self, count: int = 1, block: float | None = None) -> list[StreamEntry]:
        """Up to ``count`` entries never delivered to the group (``deliveries`` 1); they stay pending until acked.

        ``block=seconds`` waits up to that long for the first (on a dedicated connection); None or 0: no wait.
        """

    def ack(self, entries: Iterable[StreamEntry | str]) -> list[str]:
        """Acknowledge entries (StreamEntry objects or ``'<ms>-<seq>'`` ids); returns the ids acknowledged now,
        in input order, once each."""

    def pending(
        self, count: int = 100, *, consumer: str | None = None, min_idle: float | None = None
    ) -> list[PendingEntry]:
        """Entries delivered and not acknowledged, oldest first; of one consumer, idle at least ``min_idle`` s."""

    def autoclaim(self, min_idle: float, count: int = 100, *, error: str = '') -> list[StreamEntry]:
        """Take over entries pending for at least ``min_idle`` seconds (a crashed consumer's); returns them with
        their new delivery counts. With ``max_deliveries``, entries delivered that many times go to the
        dead-letter stream instead, recording ``error`` (default 'max deliveries reached')."""

    def dead_letter(self, entries: Iterable[StreamEntry | str], error: str = '') -> list[str]:
        """Move pending entries to the dead-letter stream (acknowledging them here); returns the ids moved."""

    def seek(self, position: str | datetime) -> None:
        """Set the group's offset: ``'0'`` replays everything, ``'$'`` only new entries, an id or a datetime
        replays what follows it."""

    def info(self) -> GroupInfo:
        """The group's consumers, pending entries, offset and lag."""

    def delete(self) -> bool:
        """Delete the group (its pending entries and offset); True if it existed."""


@runtime_checkable
@documented_by(ConsumerGroupProtocol)
class AsyncConsumerGroupProtocol(Protocol):
    """What any asyncio consumer group offers: ``ferroq.AsyncConsumerGroup`` and ``ferroq.pure.AsyncConsumerGroup`` satisfy it."""

    @property
    def name(self) -> str: ...

    @property
    def consumer(self) -> str: ...

    @property
    def stream(self) -> str: ...

    @property
    def max_deliveries(self) -> int | None: ...

    @property
    def dead_letter_stream(self) -> str: ...

    async def create(self, start: str | datetime = '$', *, exist_ok: bool = True) -> bool: ...

    async def read(self, count: int = 1, block: float | None = None) -> list[StreamEntry]: ...

    async def ack(self, entries: Iterable[StreamEntry | str]) -> list[str]: ...

    async def pending(
        self, count: int = 100, *, consumer: str | None = None, min_idle: float | None = None
    ) -> list[PendingEntry]: ...

    async def autoclaim(self, min_idle: float, count: int = 100, *, error: str = '') -> list[StreamEntry]: ...

    async def dead_letter(self, entries: Iterable[StreamEntry | str], error: str = '') -> list[str]: ...

    async def seek(self, position: str | datetime) -> None: ...

    async def info(self) -> GroupInfo: ...

    async def delete(self) -> bool: ...


#: A client of either kind: what code that runs both (the worker, ``ferroq bench``) takes.
AnyClient = Union[ClientProtocol, AsyncClientProtocol]
