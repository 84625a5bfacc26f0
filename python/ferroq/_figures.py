"""What ``ferroq top`` shows and ``ferroq metrics`` serves: the figures of every rfq topic, RSMQ queue and
stream (with its consumer groups), read in a few pipelined round trips.

The reads are the clients' own operations (``stats`` of a topic, ``attributes`` of an RSMQ queue, ``groups`` of a
stream, the SCANs of ``topics()`` / ``streams()``), run side by side through the pure client
(:meth:`ferroq.pure.Client._run_side_by_side`): every round of every operation goes in one pipeline. Key names
come from :mod:`ferroq.protocol.keys`.

## Behavior

- Finding the queues is a SCAN of the whole keyspace (MATCH + TYPE, COUNT 1000, never KEYS). The first
  :meth:`Sampler.read` scans to the end; later reads advance the scans by at most ``scan_rounds`` round trips
  each, so a refresh stays cheap on a large keyspace (a new queue shows up once a pass reaches it; a
  deleted one goes when the pass that no longer finds it ends).
- Rates are per second over the time between two reads of one :class:`Sampler` (None on the first read):
  - RSMQ: publish from ``totalsent``; commit from what left the queue (``totalsent`` growth minus ``msgs``
    growth: deletes, pops and dead-letter moves).
  - streams: publish from XINFO STREAM ``entries-added``; per group, commit (acknowledged) from
    ``entries-read`` growth minus ``pending`` growth.
  - rfq topics keep no counters (rfq's layout has none): publish is how far the previous newest backlog id
    moved from the head (LPOS, at most :data:`LPOS_BOUND` entries; exact while that id is still waiting, a
    lower bound once it was claimed), commit is that minus the growth of backlog + nextlog + delayed.
- Dead letters: an rfq topic's are the messages of ``<topic>.dead`` (the worker's default dead-letter
  topic), a stream's the entries of ``<stream>.dead``, an RSMQ queue's those of its ``dead_letter`` queue.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

from ferroq.exceptions import FerroqError, QueueNotFound, ServerError
from ferroq.protocol import keys
from ferroq.pure import _errors, _rfq, _rsmq, _send, _settings, _streams, _validation
from ferroq.pure.client import Client as PureClient
from ferroq.types import GroupInfo, RsmqAttributes, TopicStats, rsmq_sent, stream_id_time

__all__ = ['GroupFigures', 'QueueFigures', 'Sampler', 'Snapshot']

#: Keys one SCAN call asks for.
SCAN_COUNT = 1000
#: SCAN round trips a refresh after the first may spend finding queues.
SCAN_ROUNDS = 20
#: Most backlog entries one LPOS walks to find where the previous newest id went.
LPOS_BOUND = 100_000
_RSMQ_NAME = re.compile(keys.RSMQ_QNAME_PATTERN)
#: The suffix of the dead-letter topic or stream the worker and consumer groups use by default.
DEAD_SUFFIX = '.dead'


@dataclass(frozen=True)
class GroupFigures:
    """A consumer group of a stream."""

    name: str
    consumers: int
    pending: int
    lag: int | None
    entries_read: int | None
    commit_rate: float | None = None


@dataclass(frozen=True)
class QueueFigures:
    """One rfq topic (``kind='topic'``), RSMQ queue (``'rsmq'``, ``name`` is ``<ns>:<queue>``) or stream.

    ``depth``: messages waiting (backlog; visible RSMQ messages; stream entries kept); ``in_flight``: claimed
    and not committed (nextlog; hidden RSMQ messages, which include delayed ones; pending entries of every
    group); ``expired``: claims whose lease ran out (rfq only); ``delayed``: released with a delay (rfq only);
    ``dead_letters``: see the module doc; ``oldest_age``: seconds since the oldest waiting or claimed message
    was published (RSMQ: the next one to be received; stream: the first entry kept); ``lag``: the largest lag
    of its groups (streams). None where a figure does not apply.
    """

    kind: str
    name: str
    depth: int
    in_flight: int | None
    expired: int | None
    delayed: int | None
    dead_letters: int | None
    oldest_age: float | None
    lag: int | None = None
    published_total: int | None = None
    publish_rate: float | None = None
    commit_rate: float | None = None
    groups: tuple[GroupFigures, ...] = ()
    #: False when the rates are lower bounds (an rfq topic whose backlog drained between the two reads).
    rates_exact: bool = True
    # What the next read needs to derive rates (rfq's newest backlog id; the messages held: rfq's backlog +
    # nextlog + delayed, RSMQ's msgs) and an RSMQ queue's dead-letter queue (``<ns>:<queue>``).
    _head: str | None = field(default=None, repr=False, compare=False)
    _total: int = field(default=0, repr=False, compare=False)
    _dead: str | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.name)


@dataclass(frozen=True)
class Snapshot:
    """Every queue's figures at ``taken`` (epoch seconds): topics, RSMQ queues, streams, each sorted by name."""

    taken: float
    queues: list[QueueFigures]


Plan = Generator[Any, Any, Any]


class _Scan:
    """One SCAN pattern walked across reads: the names of the last full pass plus those found since."""

    def __init__(self, pattern: str, kind: str) -> None:
        self.pattern, self.kind = pattern, kind
        self.cursor = '0'
        self.found: set[str] = set()
        self.known: set[str] = set()
        self.passes = 0

    def plan(self, ctx: _settings.Settings) -> Plan:
        command = ('SCAN', self.cursor, 'MATCH', self.pattern, 'COUNT', str(SCAN_COUNT), 'TYPE', self.kind)
        return _send.send(ctx, [command], retry_drop=True)

    def take(self, ctx: _settings.Settings, reply: Any) -> None:
        if isinstance(reply, FerroqError):
            raise reply
        try:
            cursor, found = str(reply[0][0]), [str(key) for key in reply[0][1]]
        except (TypeError, IndexError, KeyError):
            raise _errors.reply_error(ctx, 'SCAN', reply) from None
        self.found.update(found)
        self.cursor = cursor
        if cursor == '0':
            self.known, self.found = self.found, set()
            self.passes += 1

    def names(self) -> set[str]:
        return self.known | self.found


def _strip(key: str, prefix: str, suffix: str) -> str | None:
    if key.startswith(prefix) and key.endswith(suffix) and len(key) > len(prefix) + len(suffix):
        return key[len(prefix) : len(key) - len(suffix)]
    return None


def _age(now: float, published: float | None) -> float | None:
    # ids are stamped by the producer's clock: never report a negative age
    return None if published is None else max(0.0, now - published)


def _rate(delta: float | None, seconds: float | None) -> float | None:
    if delta is None or not seconds or seconds <= 0:
        return None
    return max(0.0, delta) / seconds


class Sampler:
    """Reads the figures of everything on one Redis; keeps the previous read to derive rates.

    Args:
        url: the Redis URL (None: as the clients resolve it).
        scan_rounds: SCAN round trips per read after the first (see the module doc).
    """

    def __init__(self, url: str | None = None, *, scan_rounds: int = SCAN_ROUNDS) -> None:
        self._client = PureClient(url, command_timeout=30.0)
        self._ctx = self._client._ctx
        self._scan_rounds = scan_rounds
        self._scans = {
            'backlog': _Scan(keys.rfq_backlog('*'), 'list'),
            'nextlog': _Scan(keys.rfq_nextlog('*'), 'list'),
            'rsmq': _Scan(keys.rsmq_queues('*'), 'set'),
            'stream': _Scan(keys.stream_key('*'), 'stream'),
        }
        self._previous: dict[tuple[str, str], QueueFigures] = {}
        self._previous_at: float | None = None

    @property
    def url(self) -> str:
        """The URL read, with any password replaced by ``***``."""
        return self._client.url

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Sampler:  # noqa: PYI034 (final in spirit; Self needs Python 3.11)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- finding the queues ---

    def _discover(self) -> None:
        """Advance the SCANs: to the end of a pass on the first read, else by at most ``scan_rounds`` each."""
        first = all(scan.passes == 0 for scan in self._scans.values())
        rounds = 10_000_000 if first else self._scan_rounds  # the first bound only stops a runaway cursor
        for _ in range(rounds):
            active = [s for s in self._scans.values() if not (first and s.passes > 0)]
            replies = self._client._run_side_by_side([s.plan(self._ctx) for s in active])
            for scan, reply in zip(active, replies):
                scan.take(self._ctx, reply)
            if first and all(s.passes > 0 for s in self._scans.values()):
                return

    def _names(self) -> tuple[list[str], list[tuple[str, str]], list[str]]:
        topics: set[str] = set()
        for which in ('backlog', 'nextlog'):
            for key in self._scans[which].names():
                name = _strip(key, keys.RFQ_PREFIX, f':{which}')
                if name is not None and _validation.TOPIC_RE.fullmatch(name):
                    topics.add(name)
        spaces = sorted(
            ns for ns in (_strip(k, '', ':QUEUES') for k in self._scans['rsmq'].names()) if ns and _rsmq_ns_ok(ns)
        )
        members = self._client._run_side_by_side([_rsmq.queues(self._ctx, ns) for ns in spaces])
        queues = [
            (ns, q)
            for ns, names in zip(spaces, members)
            if isinstance(names, list)
            for q in names
            if _RSMQ_NAME.fullmatch(q)  # a name RSMQ would refuse was not made by an RSMQ client
        ]
        streams = sorted(
            name
            for name in (_strip(k, keys.STREAM_PREFIX, '') for k in self._scans['stream'].names())
            if name is not None and _validation.TOPIC_RE.fullmatch(name)
        )
        return sorted(topics), queues, streams

    # --- reading ---

    def read(self) -> Snapshot:
        """Every queue's figures now. Raises FerroqError when Redis cannot be read."""
        self._discover()
        topics, queues, streams = self._names()
        ctx = self._ctx
        plans: list[Plan] = []
        for name in topics:
            t = _rfq.topic_keys(name)
            head = self._previous.get(('topic', name))
            commands: list[tuple[str, ...]] = [('LINDEX', t.backlog, '0')]
            if head is not None and head._head is not None:
                commands.append(('LPOS', t.backlog, head._head, 'MAXLEN', str(LPOS_BOUND)))
            plans += [_rfq.stats(ctx, t), _send.send(ctx, commands, retry_drop=True)]
        for ns, q in queues:
            queue = _rsmq.queue_ref(q, ns, False)
            plans += [
                _rsmq.attributes(ctx, queue),
                _send.send(ctx, [('ZRANGE', queue.zset, '0', '0')], retry_drop=True),
            ]
        for name in streams:
            stream = _streams.stream_ref(name)
            plans += [_send.send(ctx, [('XINFO', 'STREAM', stream.key)], retry_drop=True), _streams.groups(ctx, stream)]
        replies = iter(self._client._run_side_by_side(plans))
        now = time.time()
        read: list[QueueFigures | None] = []
        for name in topics:
            read.append(self._topic(name, next(replies), next(replies), now))
        for ns, q in queues:
            read.append(self._rsmq(f'{ns}:{q}', next(replies), next(replies), now))
        for name in streams:
            read.append(self._stream(name, next(replies), next(replies), now))
        figures = [f for f in read if f is not None]  # None: deleted between the listing and the read
        snapshot = Snapshot(now, _with_dead_letters(figures, {a.key: a for a in figures}))
        self._previous = {f.key: f for f in snapshot.queues}
        self._previous_at = now
        return snapshot

    def _elapsed(self, now: float) -> float | None:
        return None if self._previous_at is None else now - self._previous_at

    def _topic(self, name: str, stats: Any, extra: Any, now: float) -> QueueFigures | None:
        if not isinstance(stats, TopicStats) or not isinstance(extra, list):
            return _gone(stats, extra)
        head = extra[0] if isinstance(extra[0], str) else None
        total = stats.backlog + stats.nextlog + stats.delayed
        publish_rate = commit_rate = None
        exact = True
        before = self._previous.get(('topic', name))
        seconds = self._elapsed(now)
        if before is not None and seconds:
            if before._head is not None and len(extra) > 1 and isinstance(extra[1], int):
                published = extra[1]  # pushed in front of the old newest id
            else:
                # The backlog was empty, or its old newest id was claimed: all that waits now is newer, and
                # some of what came since may have been claimed already.
                published, exact = stats.backlog, stats.backlog == 0 and before._total == total
            publish_rate = _rate(published, seconds)
            commit_rate = _rate(published - (total - before._total), seconds)
        return QueueFigures(
            'topic',
            name,
            depth=stats.backlog,
            in_flight=stats.nextlog,
            expired=stats.expired,
            delayed=stats.delayed,
            dead_letters=None,
            oldest_age=stats.oldest_age,
            publish_rate=publish_rate,
            commit_rate=commit_rate,
            rates_exact=exact,
            _head=head,
            _total=total,
        )

    def _rsmq(self, name: str, attrs: Any, first: Any, now: float) -> QueueFigures | None:
        if not isinstance(attrs, RsmqAttributes) or not isinstance(first, list):
            return _gone(attrs, first)
        ids = first[0] if isinstance(first[0], list) else []
        sent = rsmq_sent(str(ids[0])) / 1000 if ids else None
        before = self._previous.get(('rsmq', name))
        publish_rate = commit_rate = None
        seconds = self._elapsed(now)
        if before is not None and before.published_total is not None and seconds:
            published = attrs.totalsent - before.published_total
            publish_rate = _rate(published, seconds)
            commit_rate = _rate(published - (attrs.msgs - before._total), seconds)
        return QueueFigures(
            'rsmq',
            name,
            depth=attrs.msgs - attrs.hiddenmsgs,
            in_flight=attrs.hiddenmsgs,
            expired=None,
            delayed=None,
            dead_letters=None,
            oldest_age=_age(now, None if sent is None or math.isnan(sent) else sent),  # NaN: not an RSMQ id
            published_total=attrs.totalsent,
            publish_rate=publish_rate,
            commit_rate=commit_rate,
            _dead=f'{name.rpartition(":")[0]}:{attrs.dead_letter}' if attrs.dead_letter else None,
            _total=attrs.msgs,
        )

    def _stream(self, name: str, xinfo: Any, groups: Any, now: float) -> QueueFigures | None:
        if not isinstance(xinfo, list) or not isinstance(groups, list):
            return _gone(xinfo, groups)
        try:
            info = _streams._map(xinfo[0])
            length = int(info['length'])
            added = info.get('entries-added')
            first = info.get('first-entry')
            first_time = stream_id_time(str(first[0])) if first else None
        except (TypeError, ValueError, KeyError, IndexError):
            raise _errors.reply_error(self._ctx, 'XINFO STREAM', xinfo) from None
        before = self._previous.get(('stream', name))
        seconds = self._elapsed(now)
        old_groups = {g.name: g for g in before.groups} if before is not None else {}
        group_figures = tuple(_group(g, old_groups.get(g.name), seconds) for g in groups if isinstance(g, GroupInfo))
        published_total = int(added) if added is not None else None
        publish_rate = None
        if before is not None and before.published_total is not None and published_total is not None:
            publish_rate = _rate(published_total - before.published_total, seconds)
        lags = [g.lag for g in group_figures if g.lag is not None]
        return QueueFigures(
            'stream',
            name,
            depth=length,
            in_flight=sum(g.pending for g in group_figures) if group_figures else None,
            expired=None,
            delayed=None,
            dead_letters=None,
            oldest_age=_age(now, first_time.timestamp() if first_time else None),
            lag=max(lags) if lags else None,
            published_total=published_total,
            publish_rate=publish_rate,
            commit_rate=_sum([g.commit_rate for g in group_figures]),
            groups=group_figures,
        )


def _rsmq_ns_ok(ns: str) -> bool:
    try:
        _rsmq.check_ns(ns)
    except FerroqError:
        return False
    return True


def _gone(*replies: Any) -> QueueFigures | None:
    """A queue deleted between the listing and the read is left out (None); any other error is raised."""
    for reply in replies:
        if isinstance(reply, QueueNotFound) or (isinstance(reply, ServerError) and _streams._is_missing(reply)):
            continue
        if isinstance(reply, FerroqError):
            raise reply
    return None


def _sum(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _group(g: GroupInfo, before: GroupFigures | None, seconds: float | None) -> GroupFigures:
    commit_rate = None
    if before is not None and g.entries_read is not None and before.entries_read is not None:
        commit_rate = _rate((g.entries_read - before.entries_read) - (g.pending - before.pending), seconds)
    return GroupFigures(g.name, g.consumers, g.pending, g.lag, g.entries_read, commit_rate)


def _with_dead_letters(figures: list[QueueFigures], by_key: dict[tuple[str, str], QueueFigures]) -> list[QueueFigures]:
    out = []
    for f in figures:
        if f.kind == 'rsmq':
            dead = by_key.get(('rsmq', f._dead)) if f._dead else None
        else:
            dead = by_key.get((f.kind, f.name + DEAD_SUFFIX))
        dead_letters = None
        if dead is not None:  # a stream's pending entries are still in its length
            dead_letters = dead.depth + (dead.in_flight or 0 if dead.kind != 'stream' else 0)
        elif f._dead:
            dead_letters = 0  # the dead-letter queue is configured but gone or empty
        out.append(replace(f, dead_letters=dead_letters))
    return out
