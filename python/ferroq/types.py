"""Values returned by both clients: :class:`Message`, :class:`InspectEntry`, :class:`TopicStats` (rfq),
:class:`RsmqMessage` and :class:`RsmqAttributes` (RSMQ), :class:`StreamEntry`, :class:`PendingEntry`,
:class:`GroupInfo` and :class:`StreamInfo` (Streams topics)."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = [
    'GroupInfo',
    'InspectEntry',
    'Message',
    'PendingEntry',
    'RsmqAttributes',
    'RsmqMessage',
    'StreamEntry',
    'StreamInfo',
    'TopicStats',
    'published_at',
    'rsmq_sent',
    'stream_id_time',
]

_UUID_EPOCH = datetime(1582, 10, 15, tzinfo=timezone.utc)


def published_at(msg_id: str) -> datetime | None:
    """The publish time carried by an rfq id (a uuid1 in hex), as an aware UTC datetime.

    Returns None for an id that is not a version-1 uuid (written by some other producer).
    """
    try:
        u = uuid.UUID(hex=msg_id)
    except ValueError:
        return None
    if u.version != 1:
        return None
    return _UUID_EPOCH + timedelta(microseconds=u.time // 10)


class Message:
    """A claimed rfq message.

    Attributes:
        id: the 32-hex id (rfq's uuid1 form).
        topic: the topic it was claimed from.
        fields: the message, a flat map of str to str.
        deliveries: how many times it has been claimed, this claim included (1 on the first claim).
        claim: the token of the claim that holds it (commit, extend, release and dead_letter are fenced by it),
            or None for a Message made by hand, which is fenced by ``deliveries`` (claims made before the
            batch claim layout).
    """

    # The native client makes these in bulk by setting each slot, without running __init__ (Batch in
    # src/bindings/convert): __init__ must stay plain assignments of its arguments.
    __slots__ = ('claim', 'deliveries', 'fields', 'id', 'topic')

    def __init__(self, id: str, topic: str, fields: dict[str, str], deliveries: int, claim: str | None = None) -> None:
        self.id = id
        self.topic = topic
        self.fields = fields
        self.deliveries = deliveries
        self.claim = claim

    @property
    def token(self) -> int:
        """The fencing token of this claim: commit, extend and release succeed only while it is current."""
        return self.deliveries

    @property
    def published(self) -> datetime | None:
        """When the message was published, from the time inside its id (UTC)."""
        return published_at(self.id)

    def __repr__(self) -> str:
        return f'Message(id={self.id!r}, topic={self.topic!r}, fields={self.fields!r}, deliveries={self.deliveries})'

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (self.id, self.topic, self.fields, self.deliveries) == (
            other.id,
            other.topic,
            other.fields,
            other.deliveries,
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class InspectEntry:
    """One entry of :meth:`Topic.inspect`.

    Attributes:
        id: the message id.
        fields: the message, or None when its hash is missing.
        deliveries: how many times it has been claimed (0 if never).
        claimed_at: when the current claim was made (nextlog entries claimed by ferroq), else None.
        lease_deadline: when the current lease expires, else None.
        owner: the worker whose processing list holds the current claim (``claim(owner=...)``), else None.
        error: the last error recorded when the message was dead-lettered into this topic, else None.
    """

    id: str
    fields: dict[str, str] | None
    deliveries: int
    claimed_at: datetime | None
    lease_deadline: datetime | None
    owner: str | None = None
    error: str | None = None

    @property
    def published(self) -> datetime | None:
        """When the message was published, from the time inside its id (UTC)."""
        return published_at(self.id)


@dataclass(frozen=True)
class TopicStats:
    """A snapshot of one topic, from :meth:`Topic.stats`.

    Attributes:
        topic: the topic name.
        backlog: messages waiting.
        nextlog: messages claimed and not yet committed.
        leased: claims that hold a ferroq lease.
        expired: leases past their deadline, waiting for a harvest.
        oldest_age: seconds since the oldest waiting or in-flight message was published, or None when empty.
        delayed: messages released with a delay, waiting to return to the backlog (retries after a backoff).
    """

    topic: str
    backlog: int
    nextlog: int
    leased: int
    expired: int
    oldest_age: float | None
    delayed: int = 0


_BASE36 = frozenset('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ')


def rsmq_sent(msg_id: str) -> float:
    """When an RSMQ message was sent, in epoch ms, from the base36 microseconds of its first 10 characters.

    RSMQ's ``sent`` (``parseInt(id.slice(0, 10), 36) / 1000``); NaN when those characters are not base36.
    """
    head = msg_id[:10]
    if len(head) < 10 or not _BASE36.issuperset(head):
        return math.nan
    return int(head, 36) / 1000


class RsmqMessage:
    """A message received or popped from an RSMQ queue (RSMQ's reply object).

    Attributes:
        id: the 32-character RSMQ id.
        message: the body.
        rc: how many times it has been received, this time included.
        fr: when it was first received, epoch ms.
        sent: when it was sent, epoch ms (from the id).
    """

    # The native client makes these in bulk by setting each slot, without running __init__ (Batch in
    # src/bindings/convert): __init__ must stay plain assignments of its arguments.
    __slots__ = ('fr', 'id', 'message', 'rc', 'sent')

    def __init__(self, id: str, message: str, rc: int, fr: int, sent: float) -> None:
        self.id = id
        self.message = message
        self.rc = rc
        self.fr = fr
        self.sent = sent

    def __repr__(self) -> str:
        return (
            f'RsmqMessage(id={self.id!r}, message={self.message!r:.60}, rc={self.rc}, fr={self.fr}, sent={self.sent})'
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RsmqMessage):
            return NotImplemented
        return (self.id, self.message, self.rc, self.fr) == (other.id, other.message, other.rc, other.fr)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class RsmqAttributes:
    """The attributes of an RSMQ queue (RSMQ's ``getQueueAttributes``) and ferroq's dead-letter settings.

    Attributes:
        vt: default visibility timeout, seconds.
        delay: default delay of new messages, seconds.
        maxsize: largest message in UTF-16 code units; -1 = unlimited.
        totalrecv: receives ever made.
        totalsent: messages ever sent.
        created: creation time, epoch seconds.
        modified: last attribute change, epoch seconds.
        msgs: messages in the queue.
        hiddenmsgs: messages not receivable now (in flight or delayed).
        max_receives: receives after which a message moves to ``dead_letter``, or None.
        dead_letter: the dead-letter queue (same namespace), or None.
    """

    vt: float
    delay: float
    maxsize: int
    totalrecv: int
    totalsent: int
    created: int
    modified: int
    msgs: int
    hiddenmsgs: int
    max_receives: int | None = None
    dead_letter: str | None = None


def stream_id_time(entry_id: str) -> datetime | None:
    """The time part of a Redis stream id (``<ms>-<seq>``), as an aware UTC datetime; None if not an id."""
    ms, _, _ = entry_id.partition('-')
    if not ms.isdigit():
        return None
    return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc)


class StreamEntry:
    """An entry read from a Streams topic.

    Attributes:
        id: the stream id Redis gave it (``<ms>-<seq>``).
        stream: the stream it was read from.
        fields: the message, a flat map of str to str.
        deliveries: how many times the consumer group has delivered it, this delivery included (1 on the first
            read); 0 for entries read outside a group (:meth:`Stream.range`).
    """

    # The native client makes these in bulk by setting each slot, without running __init__ (Batch in
    # src/bindings/convert): __init__ must stay plain assignments of its arguments.
    __slots__ = ('deliveries', 'fields', 'id', 'stream')

    def __init__(self, id: str, stream: str, fields: dict[str, str], deliveries: int) -> None:
        self.id = id
        self.stream = stream
        self.fields = fields
        self.deliveries = deliveries

    @property
    def published(self) -> datetime | None:
        """When the entry was appended, from the time inside its id (UTC, ms)."""
        return stream_id_time(self.id)

    def __repr__(self) -> str:
        return (
            f'StreamEntry(id={self.id!r}, stream={self.stream!r}, fields={self.fields!r}, deliveries={self.deliveries})'
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamEntry):
            return NotImplemented
        return (self.id, self.stream, self.fields, self.deliveries) == (
            other.id,
            other.stream,
            other.fields,
            other.deliveries,
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class PendingEntry:
    """An entry delivered to a consumer of a group and not acknowledged yet (:meth:`ConsumerGroup.pending`).

    Attributes:
        id: the stream id.
        consumer: the consumer that holds it.
        idle: seconds since it was last delivered.
        deliveries: how many times it has been delivered.
    """

    id: str
    consumer: str
    idle: float
    deliveries: int


@dataclass(frozen=True)
class GroupInfo:
    """One consumer group of a stream (:meth:`Stream.groups`, :meth:`ConsumerGroup.info`).

    Attributes:
        name: the group name.
        consumers: consumers the group has seen.
        pending: entries delivered and not acknowledged.
        last_delivered_id: the group's offset: the id of the last entry delivered to it.
        entries_read: entries the group has read (Redis 7.0+; None on older servers or when unknown).
        lag: entries not delivered to the group yet (Redis 7.0+; None when Redis cannot tell).
    """

    name: str
    consumers: int
    pending: int
    last_delivered_id: str
    entries_read: int | None
    lag: int | None


@dataclass(frozen=True)
class StreamInfo:
    """A snapshot of one stream (:meth:`Stream.info`).

    Attributes:
        name: the stream name.
        length: entries in the stream.
        first_id: the oldest entry's id, or None when empty.
        last_id: the newest entry's id, or None when empty.
        groups: the number of consumer groups.
    """

    name: str
    length: int
    first_id: str | None
    last_id: str | None
    groups: int
