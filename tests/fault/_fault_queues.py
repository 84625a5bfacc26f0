"""What a scenario publishes to and consumes from: an rfq topic or a Streams consumer group, behind one interface.

A :class:`Target` names it (the drivers get it in their JSON config); :meth:`Target.consumer` gives the three
operations the consumer loop and the final drain use, the same for both:

- ``harvest(lease)``: rfq requeues expired leases (and returns nothing, the next claim gets them); a group
  autoclaims the entries pending for ``lease`` seconds and returns them (those already delivered
  ``max_deliveries`` times go to the dead-letter stream instead);
- ``claim(count, block, lease)``: rfq claims; a group reads new entries (``lease`` unused);
- ``commit(msgs)``: rfq commits (fenced); a group acknowledges. Both return the ids they report done.

:meth:`Target.waiting` and :meth:`Target.leftover` look at Redis directly, with redis-py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from _fault_history import FIELD_KEY, intact

from ferroq.protocol import keys

Call = Callable[..., Any]


@dataclass(frozen=True)
class Target:
    name: str
    #: The consumer group of a Streams topic; None: an rfq topic.
    group: str | None = None
    #: The group's dead-lettering (Streams only): entries delivered this many times go to ``<name>.dead``.
    max_deliveries: int | None = None

    @staticmethod
    def of(target: str | Target) -> Target:
        """A bare name is an rfq topic."""
        return Target(target) if isinstance(target, str) else target

    @property
    def stream_key(self) -> str:
        return keys.stream_key(self.name)

    def cfg(self) -> dict[str, Any]:
        """The driver's config entries (``topic`` is the name, as the Worker role reads it)."""
        return {'topic': self.name, 'group': self.group, 'max_deliveries': self.max_deliveries}

    @staticmethod
    def from_cfg(cfg: dict[str, Any]) -> Target:
        return Target(cfg['topic'], cfg.get('group'), cfg.get('max_deliveries'))

    def create(self, r: Any) -> None:
        """A Streams topic: its group, reading from the start (before anything is published or read)."""
        if self.group is not None:
            r.xgroup_create(self.stream_key, self.group, id='0', mkstream=True)

    def publisher(self, client: Any, call: Call) -> Any:
        """The object whose ``publish_batch`` the producers call."""
        return call(client.topic if self.group is None else client.stream, self.name)

    def consumer(self, client: Any, call: Call, name: str) -> TopicQueue | GroupQueue:
        if self.group is None:
            return TopicQueue(call, call(client.topic, self.name))
        stream = call(client.stream, self.name)
        return GroupQueue(call, call(stream.group, self.group, name, max_deliveries=self.max_deliveries))

    def waiting(self, r: Any) -> int:
        """What the consumers still have to do: rfq's backlog + nextlog; a group's pending and undelivered entries."""
        if self.group is None:
            return int(r.llen(f'rfq:{self.name}:backlog')) + int(r.llen(f'rfq:{self.name}:nextlog'))
        group = self.group_info(r)
        # Counted rather than XINFO's lag, which Redis 6.2 does not report.
        undelivered = len(r.xrange(self.stream_key, f'({group["last-delivered-id"]}', '+'))
        return int(group['pending']) + undelivered

    def group_info(self, r: Any) -> dict[str, Any]:
        """The group's row of XINFO GROUPS."""
        [group] = [g for g in r.xinfo_groups(self.stream_key) if g['name'] == self.group]
        return dict(group)

    def leftover(self, r: Any) -> int:
        """What is left after the drain: every key of an rfq topic (message hashes, lists, claims, in-flight
        ids, leases); for a group what is waiting (the entries themselves stay in the stream: it is a log)."""
        if self.group is not None:
            return self.waiting(r)
        hashes = sum(1 for _ in r.scan_iter(match=f'rfq:{self.name}:message:*', count=1000))
        side = int(r.hlen(f'rfq:{self.name}:claims')) + int(r.scard(f'rfq:{self.name}:inflight'))
        return hashes + self.waiting(r) + side + int(r.zcard(f'rfq:{self.name}:leases'))

    def entry_keys(self, r: Any) -> Counter[str]:
        """How many times each producer key is in the stream."""
        return Counter(fields.get(FIELD_KEY, '') for _, fields in r.xrange(self.stream_key))

    def dead_letters(self, r: Any) -> dict[str, tuple[str, bool]] | None:
        """The dead-letter stream: producer key -> (the entry's id in the stream, intact); None without one."""
        if self.max_deliveries is None:
            return None
        dead: dict[str, tuple[str, bool]] = {}
        for _, fields in r.xrange(keys.stream_key(f'{self.name}.dead')):
            key = fields.get(FIELD_KEY, '')
            # A key dead-lettered twice keeps a wrong id, so the checker counts it as unexpected.
            dead[key] = ('twice', False) if key in dead else (fields.get('ferroq:id', ''), intact(fields))
        return dead


class TopicQueue:
    def __init__(self, call: Call, topic: Any) -> None:
        self.call, self.topic = call, topic

    def harvest(self, lease: float) -> list[Any]:
        self.call(self.topic.harvest, lease=lease)
        return []

    def claim(self, count: int, block: float | None, lease: float) -> list[Any]:
        return list(self.call(self.topic.claim, count=count, block=block, lease=lease))

    def commit(self, msgs: list[Any]) -> list[str]:
        return list(self.call(self.topic.commit, msgs))


class GroupQueue:
    def __init__(self, call: Call, group: Any) -> None:
        self.call, self.group = call, group

    def harvest(self, lease: float) -> list[Any]:
        return list(self.call(self.group.autoclaim, min_idle=lease, count=100))

    def claim(self, count: int, block: float | None, lease: float) -> list[Any]:
        return list(self.call(self.group.read, count=count, block=block))

    def commit(self, msgs: list[Any]) -> list[str]:
        return list(self.call(self.group.ack, msgs))
