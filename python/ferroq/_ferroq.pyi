"""The native core of ferroq (Rust: redis-rs on tokio), built by maturin.

Use it through :mod:`ferroq` (``ferroq.Client``, ``ferroq.AsyncClient``). Every round trip releases the
GIL. Errors are the classes of :mod:`ferroq.exceptions`.
"""

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Generic, Literal, TypeVar, final

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]  # stubtest runs without the overrides

from ferroq.batches import AsyncBatches, AsyncRsmqBatches, Batches, RsmqBatches
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

__all__ = [
    'LIMITS',
    'AsyncClient',
    'AsyncConsumerGroup',
    'AsyncRsmqQueue',
    'AsyncStream',
    'AsyncTopic',
    'ClaimAhead',
    'Client',
    'ConsumerGroup',
    'DeferredBatch',
    'ReceiveAhead',
    'RsmqQueue',
    'Stream',
    'Topic',
    '__version__',
    'bench_round_trips',
    'dedup_token',
    'new_message_id',
    'rfq_keys',
    'rfq_published_key',
    'rsmq_keys',
    'rsmq_published_key',
    'script_hashes',
    'stream_keys',
    'stream_published_key',
]

__version__: str

LIMITS: Mapping[str, int | float]
"""Every limit the native core checks, by name (read-only; the pure client and the worker read the same).

``MAX_POOL_SIZE`` (64), ``MAX_CHUNK_SIZE`` (10000), ``MAX_COUNT`` (10000), ``MAX_SECONDS`` (604800.0: the
longest lease, block, delay, timeout or min_idle), ``MIN_LEASE`` (0.001), ``MAX_NAME_LENGTH`` (128: topic and
stream names), ``MAX_ID_LENGTH`` (128: message ids and owners), ``MAX_GROUP_NAME_LENGTH`` (128: group and consumer
names), ``MAX_FIELDS`` (1000: fields of a stream message), ``MAX_DELIVERIES`` (1000000), ``MAX_DEDUP_KEY``
(200 characters), ``MAX_DEDUP_TTL`` (2592000.0 seconds), ``MAX_RSMQ_QNAME_LENGTH`` (160), ``MAX_RSMQ_NS_LENGTH``
(64), ``MAX_RSMQ_SECONDS`` (9999999), ``MIN_RSMQ_MAXSIZE`` (1024), ``MAX_RSMQ_MAXSIZE`` (65536),
``MAX_PREFETCH`` (10000: a worker's prefetch), ``MAX_ERROR_CHARS`` (4096: the error text a worker records),
``MAX_CONCURRENCY`` (10000: a worker's handler threads or tasks). ``ferroq._limits`` reads them by name.
"""

def script_hashes() -> dict[str, str]:
    """SHA1 of every embedded Lua script, by ``<protocol>/<op>-<numkeys>`` name."""

def rfq_keys(topic: str) -> list[str]:
    """The per-topic keys (backlog, nextlog, leases, deliveries, message prefix, claims, claim leases, in-flight
    set), for parity tests."""

def new_message_id() -> str:
    """A new rfq message id: uuid1 hex with a random node, as rfq 1.2+ makes them."""

def rsmq_keys(ns: str, qname: str) -> list[str]:
    """The keys of an RSMQ queue (QUEUES set, queue ZSET, queue HASH, realtime channel), for parity tests.

    Raises InvalidName for a bad namespace or queue name, as :meth:`Client.rsmq` does.
    """

def stream_keys(name: str) -> list[str]:
    """The keys of a stream (``[ferroq:stream:<name>]``), for parity tests.

    Raises InvalidName for a bad stream name, as :meth:`Client.stream` does.
    """

def stream_published_key(name: str, token: str) -> str:
    """The key recording the ids one publish call (identified by ``token``) appended to stream ``name``."""

def rfq_published_key(topic: str, token: str) -> str:
    """The record key of one publish chunk (``token``) of ``topic``, for parity tests. Raises InvalidName."""

def rsmq_published_key(ns: str, qname: str, token: str) -> str:
    """The record key of one send chunk (``token``) of an RSMQ queue, for parity tests. Raises InvalidName."""

def dedup_token(dedup_key: str, chunk: int) -> str:
    """The record token of chunk ``chunk`` of a publish_arrow call with ``dedup_key``: sha1 of
    ``<dedup_key>:<chunk>``, 32 hex digits."""

def bench_round_trips(url: str, commands: list[list[str]], n: int) -> float:
    """The benchmark's baseline of calls made one per round trip: ``n`` calls, each sending the ``commands`` in
    turn, each command once the previous reply was read, through redis-rs alone (a multiplexed connection on a
    current-thread runtime driven by the calling thread, as the native sync client drives its calls), the GIL
    released. Every ``__rand_int__`` in an argument becomes a new random 12-digit number per call (the same
    within a call). Returns the seconds the calls took (connecting is not timed); an error reply raises."""

@final
class Client:
    """A synchronous client.

    Args:
        url: ``redis://``, ``rediss://`` or ``unix://`` URL. None: ``FERROQ_URL``, then
            ``RFQ_REDIS_HOST``/``RFQ_REDIS_PORT``, then the embedded local redis-server.
        pool_size: multiplexed connections shared by all calls (each pipelines many requests).
        connect_timeout: seconds to wait for a connection.
        command_timeout: seconds to wait for a reply (blocking claims add their block time).
        max_message_bytes: largest message accepted (sum of UTF-8 field and value lengths).
        chunk_size: messages per atomic chunk (one round trip) in publish_batch and publish_stream.
        client_name: ``CLIENT SETNAME`` of every connection.
        username, password, password_file: credentials when the URL has none (else ``FERROQ_USERNAME``,
            ``FERROQ_PASSWORD``, ``FERROQ_PASSWORD_FILE``); see :mod:`ferroq.connection`.
        tls_ca_file, tls_cert_file, tls_key_file: PEM files for a ``rediss://`` URL: the CA that signed the
            server's certificate (default: the system's roots) and the client certificate and key for
            mTLS (also as URL query parameters and ``FERROQ_TLS_*`` variables).
        tls_insecure_skip_verify: do not check the server's certificate or host name (a warning says so).

    Raises:
        InvalidArgument: a bad URL or option, an unreadable file.
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
    ) -> None: ...
    @property
    def url(self) -> str:
        """The URL in use, with any password replaced by ``***``."""
    def topic(self, name: str) -> Topic:
        """An rfq topic. Raises InvalidName unless ``name`` matches ``[A-Za-z0-9_.-]{1,128}``."""
    def topics(self) -> list[str]:
        """Every topic with a backlog or nextlog, sorted; found with SCAN, never KEYS."""
    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> RsmqQueue:
        """An RSMQ queue (keys, units, ids and replies of smrchy/rsmq and PyRSMQ). No I/O.

        ``realtime=True``: every send also PUBLISHes the queue size on ``{ns}:rt:{qname}``.

        Raises:
            InvalidName: ``qname`` does not match ``[A-Za-z0-9_-]{1,160}`` or ``ns`` ``[A-Za-z0-9_.:-]{1,64}``.
        """
    def rsmq_queues(self, ns: str = 'rsmq') -> list[str]:
        """The RSMQ queues of a namespace (``SMEMBERS {ns}:QUEUES``), sorted."""
    def stream(self, name: str) -> Stream:
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
    def _claim_deferred(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> DeferredBatch[Message]:
        """:meth:`claim`, its messages not yet made into Python objects (see :class:`DeferredBatch`)."""
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
    def __enter__(self) -> Client: ...
    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

@final
class Topic:
    """An rfq topic on a :class:`Client`."""

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
    def _claim_deferred(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> DeferredBatch[Message]:
        """:meth:`claim`, its messages not yet made into Python objects (see :class:`DeferredBatch`)."""
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

_M = TypeVar('_M')

@final
class DeferredBatch(Generic[_M]):
    """A claim's (or a receive's) messages before they are made into Python objects (``_claim_deferred``,
    ``_receive_batch_deferred``): a loop that calls ahead sends its next call first, then makes them (used by
    ferroq.batches and the worker)."""

    def __len__(self) -> int: ...
    def messages(self) -> list[_M]:
        """The messages, made once; a second call raises RuntimeError."""

@final
class ClaimAhead:
    """The claims of :class:`ferroq.Batches` over a native :class:`Topic`, one ahead, each a task of the native
    runtime that is sent before the batch before it becomes Python objects (used by ferroq.batches)."""

    def __init__(
        self,
        topic: Topic,
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> None: ...
    def next(self) -> list[Message]:
        """The claim in flight's messages (sent now on the first call), after sending the next claim when it found
        messages; an empty list ends the iteration."""
    def close(self) -> list[Message]:
        """Stop claiming: the claim in flight's messages, to give back (none if it failed)."""

@final
class ReceiveAhead:
    """The receives of :class:`ferroq.RsmqBatches` over a native :class:`RsmqQueue`, one ahead, each a task of the
    native runtime that is sent before the batch before it becomes Python objects (used by ferroq.batches)."""

    def __init__(self, queue: RsmqQueue, count: int, vt: float | None = None, block: float | None = None) -> None: ...
    def next(self) -> list[RsmqMessage]:
        """The receive in flight's messages (sent now on the first call), after sending the next receive when it
        found messages; an empty list ends the iteration."""
    def close(self) -> list[RsmqMessage]:
        """Stop receiving: the receive in flight's messages, to make visible again (none if it failed)."""

@final
class AsyncClient:
    """The asyncio twin of :class:`Client`: same arguments, same methods, awaitable."""

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
    ) -> None: ...
    @property
    def url(self) -> str: ...
    def topic(self, name: str) -> AsyncTopic: ...
    async def topics(self) -> list[str]: ...
    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> AsyncRsmqQueue: ...
    async def rsmq_queues(self, ns: str = 'rsmq') -> list[str]: ...
    def stream(self, name: str) -> AsyncStream: ...
    async def streams(self) -> list[str]: ...
    async def claim(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> list[Message]: ...
    async def _claim_deferred(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> DeferredBatch[Message]: ...
    async def commit(self, messages: Iterable[Message]) -> list[str]: ...
    async def extend(self, messages: Iterable[Message], lease: float = 30.0) -> list[str]: ...
    async def release(self, messages: Iterable[Message], delay: float = 0.0) -> list[str]: ...
    async def ping(self) -> bool: ...
    async def close(self) -> None: ...
    async def __aenter__(self) -> AsyncClient: ...
    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

@final
class AsyncTopic:
    """An rfq topic on an :class:`AsyncClient`; the methods of :class:`Topic`, awaitable."""

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
    async def _claim_deferred(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> DeferredBatch[Message]: ...
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

@final
class RsmqQueue:
    """An RSMQ queue on a :class:`Client`. vt and delay are seconds; message ids are RSMQ's 32 characters."""

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
    def _receive_batch_deferred(
        self, count: int, vt: float | None = None, block: float | None = None
    ) -> DeferredBatch[RsmqMessage]:
        """:meth:`receive_batch`, its messages not yet made into Python objects (see :class:`DeferredBatch`)."""
    def batches(self, count: int = 100, *, vt: float | None = None, block: float | None = None) -> RsmqBatches:
        """A receive+delete loop's batches, the next received while the current one is handled (see
        ferroq.typing.RsmqQueueProtocol.batches)."""
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

@final
class AsyncRsmqQueue:
    """An RSMQ queue on an :class:`AsyncClient`; the methods of :class:`RsmqQueue`, awaitable."""

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
    async def _receive_batch_deferred(
        self, count: int, vt: float | None = None, block: float | None = None
    ) -> DeferredBatch[RsmqMessage]: ...
    def batches(self, count: int = 100, *, vt: float | None = None, block: float | None = None) -> AsyncRsmqBatches: ...
    async def pop(self) -> RsmqMessage | None: ...
    async def pop_batch(self, count: int) -> list[RsmqMessage]: ...
    async def delete(self, id: str) -> bool: ...
    async def delete_batch(self, ids: Iterable[str]) -> list[str]: ...
    async def change_visibility(self, id: str, vt: float) -> bool: ...

@final
class Stream:
    """A Streams topic on a :class:`Client`: an append-only log read by consumer groups.

    Positions and range bounds are stream ids (``'<ms>-<seq>'`` or ``'<ms>'``) or aware datetimes (``<ms>-0``).
    Retention: ``maxlen`` keeps about the newest entries, ``max_age`` (seconds, the client's clock) those
    younger than that; ``approximate=True`` lets Redis trim whole macro-nodes only (cheap), False trims exactly.
    """

    @property
    def name(self) -> str: ...
    def group(
        self,
        name: str,
        consumer: str | None = None,
        *,
        max_deliveries: int | None = None,
        dead_letter: str | None = None,
    ) -> ConsumerGroup:
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

@final
class ConsumerGroup:
    """A consumer group of a :class:`Stream`, read as one consumer (``consumer``).

    Every entry is delivered to one consumer of the group and stays pending until acknowledged. Missing
    groups raise QueueNotFound (call :meth:`create`).
    """

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

@final
class AsyncStream:
    """A Streams topic on an :class:`AsyncClient`; the methods of :class:`Stream`, awaitable."""

    @property
    def name(self) -> str: ...
    def group(
        self,
        name: str,
        consumer: str | None = None,
        *,
        max_deliveries: int | None = None,
        dead_letter: str | None = None,
    ) -> AsyncConsumerGroup: ...
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

@final
class AsyncConsumerGroup:
    """A consumer group of an :class:`AsyncStream`; the methods of :class:`ConsumerGroup`, awaitable."""

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
