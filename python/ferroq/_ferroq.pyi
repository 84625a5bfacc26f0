"""The native core of ferroq (Rust: redis-rs on tokio), built by maturin.

Use it through :mod:`ferroq` (``ferroq.Client``, ``ferroq.AsyncClient``). Every round trip releases the
GIL. Errors are the classes of :mod:`ferroq.exceptions`.
"""

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Literal, final

from ferroq.types import InspectEntry, Message, RsmqAttributes, RsmqMessage, TopicStats

__all__ = [
    'AsyncClient',
    'AsyncRsmqQueue',
    'AsyncTopic',
    'Client',
    'RsmqQueue',
    'Topic',
    '__version__',
    'new_message_id',
    'rfq_keys',
    'rsmq_keys',
    'script_hashes',
]

__version__: str

def script_hashes() -> dict[str, str]:
    """SHA1 of every embedded Lua script, by ``<protocol>/<op>-<numkeys>`` name."""

def rfq_keys(topic: str) -> list[str]:
    """The per-topic keys (backlog, nextlog, leases, deliveries, message prefix), for parity tests."""

def new_message_id() -> str:
    """A new rfq message id: uuid1 hex with a random node, as rfq 1.2+ makes them."""

def rsmq_keys(ns: str, qname: str) -> list[str]:
    """The keys of an RSMQ queue (QUEUES set, queue ZSET, queue HASH, realtime channel), for parity tests.

    Raises InvalidName for a bad namespace or queue name, as :meth:`Client.rsmq` does.
    """

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
    def claim(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> list[Message]:
        """Claim up to ``count`` messages, oldest first, each leased for ``lease`` seconds.

        ``block=None`` (or 0) returns at once; ``block=seconds`` waits up to that long for the first message.
        Delayed releases that are due return to the backlog first. ``owner`` (a worker name) records the
        claims in that worker's processing list (see :meth:`resume`).
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
    def inspect(
        self, queue: Literal['backlog', 'nextlog'] = 'backlog', start: int = 0, count: int = 100
    ) -> list[InspectEntry]:
        """A page of the backlog or nextlog in consumption order (oldest first), with claim details."""
    def stats(self) -> TopicStats:
        """Backlog and nextlog lengths, leases, expired leases and the oldest message's age."""
    def purge(self, queue: Literal['backlog', 'nextlog'] = 'backlog') -> int:
        """Delete every message of the backlog (or nextlog); returns how many."""

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
    ) -> None: ...
    @property
    def url(self) -> str: ...
    def topic(self, name: str) -> AsyncTopic: ...
    async def topics(self) -> list[str]: ...
    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> AsyncRsmqQueue: ...
    async def rsmq_queues(self, ns: str = 'rsmq') -> list[str]: ...
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
    async def claim(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> list[Message]: ...
    async def commit(self, messages: Iterable[Message | str]) -> list[str]: ...
    async def extend(self, messages: Iterable[Message | str], lease: float = 30.0) -> list[str]: ...
    async def release(self, messages: Iterable[Message | str], delay: float = 0.0) -> list[str]: ...
    async def dead_letter(
        self, messages: Iterable[Message | str], error: str = '', to: str | None = None
    ) -> list[str]: ...
    async def resume(self, owner: str, lease: float = 30.0) -> list[Message]: ...
    async def harvest(self, all: bool = False, lease: float = 30.0) -> list[str]: ...
    async def peek(self, id: str) -> dict[str, str] | None: ...
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
    async def send_batch(self, messages: Iterable[str], delay: float | None = None) -> list[str]: ...
    async def receive(self, vt: float | None = None, block: float | None = None) -> RsmqMessage | None: ...
    async def receive_batch(
        self, count: int, vt: float | None = None, block: float | None = None
    ) -> list[RsmqMessage]: ...
    async def pop(self) -> RsmqMessage | None: ...
    async def pop_batch(self, count: int) -> list[RsmqMessage]: ...
    async def delete(self, id: str) -> bool: ...
    async def delete_batch(self, ids: Iterable[str]) -> list[str]: ...
    async def change_visibility(self, id: str, vt: float) -> bool: ...
