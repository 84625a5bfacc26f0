"""Values returned by both clients: :class:`Message`, :class:`InspectEntry`, :class:`TopicStats`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = ['InspectEntry', 'Message', 'TopicStats', 'published_at']

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
    """

    __slots__ = ('deliveries', 'fields', 'id', 'topic')

    def __init__(self, id: str, topic: str, fields: dict[str, str], deliveries: int) -> None:
        self.id = id
        self.topic = topic
        self.fields = fields
        self.deliveries = deliveries

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
