"""The rfq topic operations: ids, keys, publish, claim, fenced commit / extend / release, and the admin reads.

Every operation is a plan (:data:`ferroq.pure._requests.Plan`) that the sync and async clients run alike.
"""

from __future__ import annotations

import itertools
import os
import random
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from redis import exceptions as rex

from ferroq._limits import MIN_DELETE_LATER, shown
from ferroq.exceptions import (
    FerroqError,
    InvalidArgument,
    ServerError,
)
from ferroq.protocol import keys
from ferroq.pure._errors import map_error, reply_error
from ferroq.pure._replies import arrow_batch, ms_time, pairs, record_count
from ferroq.pure._requests import Block, Plan, Sleep, Watched
from ferroq.pure._send import evalsha, is_drop, scan_keys, script, send, wait_loading
from ferroq.pure._settings import Settings
from ferroq.pure._validation import (
    Ref,
    as_iterator,
    check_batch,
    check_block,
    check_chunk,
    check_count,
    check_dead_topic,
    check_delay,
    check_error,
    check_field_names,
    check_fields,
    check_flag,
    check_id,
    check_lease,
    check_messages,
    check_owner,
    check_queue,
    check_refs,
    check_topics,
)
from ferroq.types import InspectEntry, Message, TopicStats, published_at

#: Messages per harvest or purge script call, so Redis is never blocked for long.
STEP = 1000

# --- ids -----------------------------------------------------------------------------------------

_node: tuple[int, int] = (0, 0)  # (pid, node)


_CLAIM_CHARS = '0123456789abcdefghijklmnopqrstuvwxyz'


def new_claim_token() -> str:
    """A claim's token: a letter (so a script never reads it as a delivery count) and 15 random base-36 digits."""
    return random.choice(_CLAIM_CHARS[10:]) + ''.join(random.choices(_CLAIM_CHARS, k=15))


def new_id() -> str:
    """A new rfq id: uuid1 hex with a random multicast node, one per process (as rfq 1.2+)."""
    global _node
    pid = os.getpid()
    if _node[0] != pid:  # a forked child must not share its parent's node
        _node = (pid, random.getrandbits(48) | (1 << 40))
    return uuid.uuid1(node=_node[1]).hex


# --- keys ----------------------------------------------------------------------------------------


class TopicKeys(NamedTuple):
    name: str
    backlog: str
    nextlog: str
    leases: str
    deliveries: str
    delayed: str
    prefix: str
    claims: str
    claim_leases: str
    inflight: str

    @property
    def four(self) -> list[str]:
        """The keys every topic script takes first: backlog, nextlog, leases, deliveries."""
        return [self.backlog, self.nextlog, self.leases, self.deliveries]

    @property
    def five(self) -> list[str]:
        """The four topic keys and the delayed ZSET."""
        return [*self.four, self.delayed]

    @property
    def claim_keys(self) -> list[str]:
        """The claims HASH, the claims' leases and the in-flight SET."""
        return [self.claims, self.claim_leases, self.inflight]

    @property
    def eight(self) -> list[str]:
        """Every side key: what claim, release, harvest and stats take."""
        return [*self.five, *self.claim_keys]


def topic_keys(name: str) -> TopicKeys:
    """The keys of a topic (``name`` must be valid already)."""
    backlog, nextlog, leases, deliveries = keys.rfq_topic_keys(name)
    return TopicKeys(
        name,
        backlog,
        nextlog,
        leases,
        deliveries,
        keys.rfq_delayed(name),
        keys.rfq_message_prefix(name),
        keys.rfq_claims(name),
        keys.rfq_claim_leases(name),
        keys.rfq_inflight(name),
    )


def topics(ctx: Settings) -> Plan[list[str]]:
    """Every topic with a backlog or nextlog (SCAN, never KEYS)."""
    names: set[str] = set()
    for pattern in (keys.rfq_backlog('*'), keys.rfq_nextlog('*')):
        for key in (yield from scan_keys(ctx, pattern, 'list')):
            names.add(key[len(keys.RFQ_PREFIX) : -len(':backlog')])
    return sorted(names)


def publish(ctx: Settings, topic: TopicKeys, fields: Mapping[str, str], front: bool) -> Plan[str]:
    flat = check_fields(fields, ctx.max_message_bytes)
    return (yield from _publish(ctx, topic, [flat], check_flag(front, 'front')))[0]


def publish_batch(
    ctx: Settings, topic: TopicKeys, messages: Iterable[Mapping[str, str]], front: bool
) -> Plan[list[str]]:
    items = check_batch(messages, ctx.max_message_bytes)
    front = check_flag(front, 'front')
    if not items:
        return []
    return (yield from _publish(ctx, topic, items, front))


def publish_stream(ctx: Settings, topic: TopicKeys, messages: Iterable[Mapping[str, str]]) -> Plan[int]:
    """Publish chunk by chunk, pulling ``chunk_size`` messages at a time: memory stays bounded.

    Each chunk is checked, then written as one watched transaction (:func:`write_chunk`). A ferroq error (a bad chunk, a failed
    call) gets ``published``: the messages of the chunks before it. The iterable's own errors pass unchanged.
    """
    source = as_iterator(messages, 'messages')
    published = 0
    while True:
        items = list(itertools.islice(source, ctx.chunk_size))
        if not items:
            return published
        try:
            yield from _write_chunks(ctx, topic, check_chunk(items, ctx.max_message_bytes, published), False)
        except FerroqError as exc:
            exc.published = published
            raise
        published += len(items)
        if len(items) < ctx.chunk_size:  # the iterator ended: it is not asked again
            return published


def _publish(ctx: Settings, topic: TopicKeys, items: list[list[str]], front: bool) -> Plan[list[str]]:
    """A publish or publish_batch call: one message with :func:`_publish_one`, more with :func:`_write_chunks`."""
    if len(items) == 1:
        return [(yield from _publish_one(ctx, topic, items[0], front))]
    return (yield from _write_chunks(ctx, topic, items, front))


def _write_chunks(ctx: Settings, topic: TopicKeys, items: list[list[str]], front: bool) -> Plan[list[str]]:
    ids = [new_id() for _ in items]
    chunks = [
        (ids[i : i + ctx.chunk_size], items[i : i + ctx.chunk_size]) for i in range(0, len(items), ctx.chunk_size)
    ]
    if front:  # the last chunk first: each chunk goes before everything waiting, so the batch stays in order
        chunks.reverse()
    for chunk_ids, flats in chunks:
        # The record is named after the chunk's first id, fresh for every call; the next request deletes it.
        record = keys.rfq_published(topic.name, chunk_ids[0])
        hsets = [(topic.prefix + msg_id, flat[1:]) for msg_id, flat in zip(chunk_ids, flats)]
        yield from write_chunk(ctx, topic, record, keys.STREAM_PUBLISH_TOKEN_MS, front, chunk_ids, hsets, forget=True)
    return ids


def _publish_one(ctx: Settings, topic: TopicKeys, flat: list[str], front: bool) -> Plan[str]:
    """One message: one publish_one-3 call, one round trip; the twin of the Rust ``rfq::publish_one``.

    The record (named after the message's id, which only this call knows) makes a repeat after a dropped
    connection write nothing. Once the first attempt's reply is read, no attempt can reach Redis later, so the
    record may go: its ``DEL`` rides ahead of the client's next request other than a single publish, or of the
    single publish made once ``MIN_DELETE_LATER`` records wait (:class:`~ferroq.pure._settings.DeleteLater`),
    instead of costing a round trip of its own. After a repeat, the dropped attempt could still arrive (it
    would find the record and write nothing), so the record is left to expire, as is one that no later
    request takes along.
    """
    msg_id = new_id()
    record = keys.rfq_published(topic.name, msg_id)
    args = ['1' if front else '0', str(keys.STREAM_PUBLISH_TOKEN_MS), msg_id, *flat[1:]]  # flat: nfields, f1, v1, ...
    call = evalsha('rfq/publish_one-3', [topic.backlog, record, topic.prefix + msg_id], args)
    repeated: list[bool] = []
    # The records left to delete go along only once MIN_DELETE_LATER wait: a DEL with every call cost 5-10%.
    yield from send(ctx, [call], retry_drop=True, repeated=repeated, min_deletes=MIN_DELETE_LATER)
    if not repeated:
        ctx.delete_later.add(record)
    return msg_id


#: Rounds of one chunk's watched transaction: each lost round means another call wrote the chunk's record between
#: this call's WATCH and its EXEC, and the next round reads what that call handled.
WATCH_ROUNDS = 16


def write_chunk(
    ctx: Settings,
    topic: TopicKeys,
    record: str,
    ttl_ms: int,
    front: bool,
    ids: list[str],
    hsets: Sequence[tuple[str, Sequence[str | bytes]]],
    *,
    forget: bool,
) -> Plan[int]:
    """Write one publish chunk at most once per ``record``, without Lua; returns how many messages it wrote.

    ``hsets``: per message, in input order, its key and field/value pairs. Each round is a :class:`Watched`:
    ``WATCH record`` + ``GET record`` (k: how many of the chunk's messages earlier calls with this record handled);
    if k < n, ``MULTI``, the HSETs of messages k+1..n, the push of their ids, ``SET record n PX ttl``, ``EXEC``.
    EXEC runs only if the record is unchanged since this round's WATCH, which preceded the GET that showed the
    chunk unwritten; else (nil) the next round reads the record again. So an attempt whose bytes reach Redis
    late, after a retry on a new connection wrote the chunk, either reads the record and stops or has its EXEC
    aborted by the retry's SET (see docs/protocol.md). The twin of the Rust ``rfq::write_chunk``.

    ``forget``: the record is this call's own (not a dedup key's) and may go once the chunk is known written: no
    attempt of the call comes after, and every earlier attempt watched the record before the SET that touched it.
    Its ``DEL`` rides with the client's next request (``ctx.delete_later``), not in a round trip of its own.
    """
    n = len(ids)
    handled: list[int | None] = [None]

    def build(value: Any) -> list[tuple[str, ...]] | None:
        text = value.decode() if isinstance(value, bytes) else value
        done = 0 if text is None else int(text) if isinstance(text, str) and text.isdigit() else None
        handled[0] = done
        if done is None or done >= n:
            return None
        commands: list[tuple[Any, ...]] = [('HSET', key, *pairs) for key, pairs in hsets[done:]]
        # The backlog is consumed from its tail: LPUSH in input order, or (front) RPUSH in reverse order, so the
        # chunk is consumed next and still in input order.
        commands.append(
            ('RPUSH', topic.backlog, *reversed(ids[done:])) if front else ('LPUSH', topic.backlog, *ids[done:])
        )
        commands.append(('SET', record, str(n), 'PX', str(ttl_ms)))
        return commands

    loading_deadline: float | None = None
    dropped = False
    for _ in range(WATCH_ROUNDS):
        while True:
            deletes = tuple(ctx.delete_later.take())
            reply = yield Watched(record, build, deletes)
            if not isinstance(reply, BaseException):
                break
            for key in deletes:  # not known to be sent: left for the next request again, as send() does
                ctx.delete_later.add(key)
            if isinstance(reply, rex.BusyLoadingError):
                loading_deadline = yield from wait_loading(ctx, loading_deadline)
            elif not dropped and is_drop(reply):
                dropped = True  # safe to repeat: the next attempt starts from its own WATCH
            else:
                raise map_error(reply, ctx)
        if handled[0] is None:
            raise reply_error(ctx, f'GET {record}', 'not a count')
        if reply is None:
            continue  # the record changed since WATCH
        if not isinstance(reply, list):
            raise reply_error(ctx, 'EXEC', reply)
        for item in reply:
            if isinstance(item, BaseException):
                raise map_error(item, ctx)
        if forget:
            ctx.delete_later.add(record)
        return n - handled[0] if reply else 0
    raise ServerError(
        f'ERR the publish record {record} kept changing under other writers ({WATCH_ROUNDS} rounds)', 'ERR'
    )


def claim(
    ctx: Settings, topic: TopicKeys, count: int, block: float | None, lease: float, owner: str | None
) -> Plan[list[Message]]:
    """Topic.claim."""
    args = check_count(count), check_block(block), check_lease(lease), check_owner(owner)
    return (yield from _claim(ctx, [topic], *args))


def claim_many(
    ctx: Settings, topics: Sequence[str], count: int, block: float | None, lease: float, owner: str | None
) -> Plan[list[Message]]:
    """Client.claim: several topics in priority order."""
    names = check_topics(topics)
    args = check_count(count), check_block(block), check_lease(lease), check_owner(owner)
    return (yield from _claim(ctx, [topic_keys(name) for name in names], *args))


def _claim(
    ctx: Settings, topics: list[TopicKeys], count: int, wait: float | None, lease_ms: int, owner: str
) -> Plan[list[Message]]:
    messages = yield from _claim_now(ctx, topics, count, lease_ms, '', owner)
    if messages or wait is None:
        return messages
    if len(topics) == 1:
        # Wait on the server: BLMOVE hands over the first id that arrives, then the script leases it.
        t = topics[0]
        moved = yield Block(
            ('BLMOVE', t.backlog, t.nextlog, 'RIGHT', 'LEFT', f'{max(wait, 0.001):.3f}'), wait + ctx.command_timeout
        )
        if isinstance(moved, BaseException):
            raise map_error(moved, ctx)
        if moved is None:
            return []
        if not isinstance(moved, str):
            raise reply_error(ctx, 'BLMOVE', moved)
        return (yield from _claim_now(ctx, topics, count, lease_ms, moved, owner))
    # Several topics: no blocking command can watch them in priority order, so poll with backoff.
    deadline = time.monotonic() + wait
    delay = 0.005
    for _ in range(int(wait / 0.005) + 2):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        yield Sleep(min(delay, remaining))
        delay = min(delay * 2, 0.1)
        messages = yield from _claim_now(ctx, topics, count, lease_ms, '', owner)
        if messages:
            return messages
    return []


def _claim_now(
    ctx: Settings, topics: list[TopicKeys], count: int, lease_ms: int, moved: str, owner: str
) -> Plan[list[Message]]:
    token = new_claim_token()
    script_keys = [k for t in topics for k in t.eight]
    reply = yield from script(ctx, 'rfq/claim-8n', script_keys, [str(count), str(lease_ms), moved, owner, token])
    return (yield from _with_bodies(ctx, 'rfq/claim-8n', topics, token, reply))


def claim_reply(reply: Any, ntopics: int) -> list[tuple[int, str, int]]:
    """(topic index, id, delivery count) of each message of a claim-8n (or resume-6) reply: ``now_ms``, then per
    topic ``topic_index, ids, n`` (the ids in one space-separated string) and n (position, delivery count)
    pairs for the ids claimed before. Strings may be bytes (a raw connection). Raises ValueError on any
    other shape."""

    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    try:
        out: list[tuple[int, str, int]] = []
        items = iter(reply)
        next(items)  # now_ms
        for ti in items:
            topic = int(ti) - 1
            if not 0 <= topic < ntopics:
                raise ValueError(f'topic index {ti}')
            ids, n = text(next(items)).split(' '), int(next(items))
            counts = [1] * len(ids)
            for _ in range(n):
                at = int(next(items))
                if not 1 <= at <= len(ids):
                    raise ValueError(f'position {at}')
                counts[at - 1] = int(next(items))
            out += [(topic, i, d) for i, d in zip(ids, counts)]
        return out
    except (TypeError, IndexError, StopIteration):
        raise ValueError('cut short') from None


def claim_ids(reply: Any) -> tuple[str, int]:
    """The ids of a one-topic claim-8n reply, as the reply has them (one space-separated string, oldest first),
    and how many there are: ``('', 0)`` for an empty claim. Raises ValueError on another shape."""
    if isinstance(reply, list) and len(reply) == 1:
        return '', 0
    if not isinstance(reply, list) or len(reply) < 4 or reply[1] != 1:
        raise ValueError('not a one-topic claim reply')
    ids = reply[2].decode() if isinstance(reply[2], bytes) else str(reply[2])
    return ids, ids.count(' ') + 1


def _with_bodies(ctx: Settings, name: str, topics: list[TopicKeys], token: str, reply: Any) -> Plan[list[Message]]:
    """The messages of a claim-8n (or resume-6) reply (:func:`claim_reply`), with their bodies fetched in one
    pipeline. A message whose body is gone (committed or purged by someone else after its id was queued) is
    committed away, not returned."""
    try:
        held = [(topics[ti], msg_id, d) for ti, msg_id, d in claim_reply(reply, len(topics))]
    except ValueError:
        raise reply_error(ctx, name, reply) from None
    if not held:
        return []
    bodies = yield from send(ctx, [('HGETALL', t.prefix + i) for t, i, _ in held], retry_drop=True)
    out, ghosts = [], []
    for (topic, msg_id, deliveries), body in zip(held, bodies):
        if isinstance(body, list):
            body = pairs(body)
        if not isinstance(body, dict):
            raise reply_error(ctx, 'HGETALL', body)
        if body:
            out.append(Message(msg_id, topic.name, body, deliveries, token))
        else:
            ghosts.append(Ref(topic.name, msg_id, token))
    if ghosts:
        yield from _fenced(ctx, 'commit', ghosts, 0)
    return out


def resume(ctx: Settings, topic: TopicKeys, owner: str, lease: float) -> Plan[list[Message]]:
    """Topic.resume: claim again, in place, what ``owner`` still holds."""
    name = check_owner(owner, required=True)
    lease_ms = check_lease(lease)
    token = new_claim_token()
    script_keys = [topic.nextlog, topic.leases, topic.deliveries, *topic.claim_keys]
    reply = yield from script(ctx, 'rfq/resume-6', script_keys, [name, str(lease_ms), token])
    return (yield from _with_bodies(ctx, 'rfq/resume-6', [topic], token, reply))


# commit, extend and release share their shape: per topic, chunks of (id, token) pairs, fenced.


def _claims(messages: Iterable[Message | str], topic: TopicKeys | None) -> list[Ref]:
    """The claims a call names: ids or Messages of ``topic``, or Messages of any topics when ``topic`` is None
    (a client's commit, extend or release)."""
    return check_messages(messages) if topic is None else check_refs(messages, topic.name)


def commit(ctx: Settings, topic: TopicKeys | None, messages: Iterable[Message | str]) -> Plan[list[str]]:
    return (yield from _fenced(ctx, 'commit', _claims(messages, topic), 0))


def extend(ctx: Settings, topic: TopicKeys | None, messages: Iterable[Message | str], lease: float) -> Plan[list[str]]:
    refs = _claims(messages, topic)
    return (yield from _fenced(ctx, 'extend', refs, check_lease(lease)))


def release(ctx: Settings, topic: TopicKeys | None, messages: Iterable[Message | str], delay: float) -> Plan[list[str]]:
    refs = _claims(messages, topic)
    return (yield from _fenced(ctx, 'release', refs, check_delay(delay)))


def dead_letter(
    ctx: Settings, topic: TopicKeys, messages: Iterable[Message | str], error: str, to: str | None
) -> Plan[list[str]]:
    """Topic.dead_letter: move held messages to the backlog of ``to`` (default ``<topic>.dead``)."""
    dead = topic_keys(check_dead_topic(topic.name, to))
    refs = check_refs(messages, topic.name)
    return (yield from _fenced(ctx, 'dead_letter', refs, 0, dead=dead, error=check_error(error)))


def _fenced(
    ctx: Settings, op: str, refs: list[Ref], ms: int, dead: TopicKeys | None = None, error: str = ''
) -> Plan[list[str]]:
    """Run commit / extend / release / dead_letter; returns the ids the scripts accepted, in input order.

    ``ms`` is the lease of extend and the delay of release.
    """
    if not refs:
        return []
    groups: dict[str, list[Ref]] = {}
    for ref in refs:
        groups.setdefault(ref.topic, []).append(ref)
    calls: list[tuple[str, ...]] = []
    spans: list[tuple[str, int, int]] = []  # (topic, first call, end) of each topic's calls
    for name, group in groups.items():
        t = topic_keys(name)
        chunks = [group[i : i + ctx.chunk_size] for i in range(0, len(group), ctx.chunk_size)]
        if op == 'release':  # each chunk goes to the consume end: the last chunk first keeps input order
            chunks.reverse()
        first = len(calls)
        calls += [_fenced_call(op, t, chunk, ms, dead, error) for chunk in chunks]
        spans.append((name, first, len(calls)))
    # commit and extend are fenced and repeatable; a repeated release or dead-letter would report nothing done.
    replies = yield from send(ctx, calls, retry_drop=op in ('commit', 'extend'))
    done: dict[str, list[str]] = {}
    for name, first, end in spans:
        part = replies[first:end]
        if op == 'release':
            part.reverse()
        if not all(isinstance(r, list) for r in part):
            raise reply_error(ctx, f'rfq/{op}', part)
        if op == 'commit':  # { committed, then the ids given that were not }: the rest, in input order
            refused = {msg_id for r in part for msg_id in r[1:]}
            done[name] = list(dict.fromkeys(ref.id for ref in groups[name] if ref.id not in refused))
            if len(done[name]) != sum(int(r[0]) for r in part):
                raise reply_error(ctx, 'rfq/commit-6n', part)
        else:
            done[name] = [msg_id for r in part for msg_id in r]
    # Each script returns an in-order subsequence of its input: walk the input to merge them back.
    out = []
    position = dict.fromkeys(done, 0)
    for ref in refs:
        accepted, i = done[ref.topic], position[ref.topic]
        if i < len(accepted) and accepted[i] == ref.id:
            out.append(ref.id)
            position[ref.topic] = i + 1
    return out


def _fenced_call(
    op: str, t: TopicKeys, chunk: list[Ref], ms: int, dead: TopicKeys | None, error: str
) -> tuple[str, ...]:
    """The script call of one chunk of commit / extend / release / dead_letter (see :func:`_fenced`)."""
    if op == 'commit':  # the ids are the rest of their message keys: not sent twice
        script_keys = [t.nextlog, t.leases, t.deliveries, *t.claim_keys, *(t.prefix + r.id for r in chunk)]
        return evalsha('rfq/commit-6n', script_keys, [str(len(t.prefix)), *_groups(chunk, False)])
    if op == 'extend':
        return evalsha('rfq/extend-5', [t.leases, t.deliveries, *t.claim_keys], [str(ms), *_groups(chunk)])
    if op == 'release':
        return evalsha('rfq/release-8', t.eight, [str(ms), *_groups(chunk)])
    assert dead is not None
    moved = [k for r in chunk for k in (t.prefix + r.id, dead.prefix + r.id)]
    script_keys = [t.nextlog, t.leases, t.deliveries, dead.backlog, dead.deliveries, *t.claim_keys, *moved]
    return evalsha('rfq/dead_letter-8n', script_keys, [error, *_groups(chunk)])


def _groups(refs: list[Ref], with_ids: bool = True) -> list[str]:
    """The fence groups of a fenced script's arguments: per run of refs with one fence, ``fence, k`` and (with
    ``with_ids``) the k ids."""
    out: list[str] = []
    for fence, run in itertools.groupby(refs, key=lambda r: r.fence):
        ids = [r.id for r in run]
        out += [fence, str(len(ids)), *(ids if with_ids else ())]
    return out


def harvest(ctx: Settings, topic: TopicKeys, all: bool, lease: float) -> Plan[list[str]]:
    lease_ms = check_lease(lease)
    if check_flag(all, 'all'):
        reply = yield from script(ctx, 'rfq/harvest_all-7', [*topic.four, *topic.claim_keys], [])
        if not isinstance(reply, list):
            raise reply_error(ctx, 'rfq/harvest_all-7', reply)
        return reply
    out: list[str] = []
    for _ in range(10_000):
        reply = yield from script(ctx, 'rfq/harvest-8', topic.eight, [str(lease_ms), str(STEP)])
        try:
            out += reply[0]
            handled = int(reply[1])
        except (TypeError, ValueError, IndexError):
            raise reply_error(ctx, 'rfq/harvest-8', reply) from None
        if handled < STEP:
            break
    return out


def peek(ctx: Settings, topic: TopicKeys, msg_id: str) -> Plan[dict[str, str] | None]:
    key = topic.prefix + check_id(msg_id)
    reply = (yield from send(ctx, [('HGETALL', key)]))[0]
    if isinstance(reply, list):
        reply = pairs(reply)
    if not isinstance(reply, dict):
        raise reply_error(ctx, 'HGETALL', reply)
    return reply or None


def fetch_arrow(ctx: Settings, topic: TopicKeys, ids: object, fields: object, held: object) -> Plan[Any]:
    """Topic.fetch_arrow: in rounds of ``chunk_size`` ids, the fields asked for (an HMGET per message, EXISTS
    when none is), the delivery records (HMGET) and, unless ``held``, the in-flight set (SMISMEMBER); a message
    with none of the fields is checked with EXISTS."""
    import pyarrow  # noqa: F401  (before any I/O: without pyarrow the call fails at once)

    wanted = [check_id(i) for i in as_iterator(ids, 'ids')]
    names = check_field_names(fields, ('_id', '_deliveries'))
    held = check_flag(held, 'held')
    columns: dict[str, list[Any]] = {name: [] for name in names}
    found: list[str] = []
    counts: list[int] = []
    for lo in range(0, len(wanted), ctx.chunk_size):
        chunk = wanted[lo : lo + ctx.chunk_size]
        commands: list[tuple[str, ...]] = [
            ('HMGET', topic.prefix + i, *names) if names else ('EXISTS', topic.prefix + i) for i in chunk
        ]
        commands.append(('HMGET', topic.deliveries, *chunk))
        if not held:
            commands.append(('SMISMEMBER', topic.inflight, *chunk))
        replies = yield from send(ctx, commands, retry_drop=True, raw=True)
        in_flight = [1] * len(chunk) if held else replies.pop()
        records = replies.pop()
        if not isinstance(records, list) or len(records) != len(chunk):
            raise reply_error(ctx, 'HMGET', records)
        if not isinstance(in_flight, list) or len(in_flight) != len(chunk):
            raise reply_error(ctx, 'SMISMEMBER', in_flight)
        bodies: list[list[Any] | None] = []
        for reply in replies:
            if not names:
                bodies.append([] if reply == 1 else None)
            elif isinstance(reply, list) and len(reply) == len(names):
                bodies.append(reply)
            else:
                raise reply_error(ctx, 'HMGET', reply)
        unsure = [i for i, body in enumerate(bodies) if names and body is not None and all(v is None for v in body)]
        if unsure:
            exists = yield from send(ctx, [('EXISTS', topic.prefix + chunk[i]) for i in unsure], retry_drop=True)
            for i, there in zip(unsure, exists):
                if there != 1:
                    bodies[i] = None
        for msg_id, body, record, counted in zip(chunk, bodies, records, in_flight):
            if body is None:
                continue  # committed (or never published): left out
            found.append(msg_id)
            counts.append(record_count(record) + (1 if counted else 0))
            for values, value in zip(columns.values(), body):
                values.append(value)
    return arrow_batch(found, columns, counts)


def inspect(ctx: Settings, topic: TopicKeys, queue: str, start: int, count: int) -> Plan[list[InspectEntry]]:
    queue = check_queue(queue)
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidArgument(f'start must be an int >= 0, got {shown(start)}')
    count = check_count(count)
    if start >= 2**32:  # longer than any Redis list can be
        return []
    lst = topic.backlog if queue == 'backlog' else topic.nextlog
    script_keys = [lst, topic.leases, topic.deliveries, topic.claims, topic.claim_leases]
    reply = yield from script(ctx, 'rfq/inspect-5', script_keys, [str(start), str(count), topic.prefix])
    try:
        return [
            InspectEntry(
                id=msg_id,
                fields=pairs(body) or None,
                deliveries=int(deliveries) if deliveries else 0,
                claimed_at=ms_time(claimed_at),
                lease_deadline=ms_time(deadline),
                owner=owner if isinstance(owner, str) else None,
                error=error if isinstance(error, str) else None,
            )
            for msg_id, deliveries, claimed_at, deadline, body, owner, error in reply[1]
        ]
    except (TypeError, ValueError, IndexError, OverflowError):
        raise reply_error(ctx, 'rfq/inspect-5', reply) from None


def stats(ctx: Settings, topic: TopicKeys) -> Plan[TopicStats]:
    reply = yield from script(ctx, 'rfq/stats-8', topic.eight, [])
    try:
        now_ms, backlog, nextlog, leased, expired, oldest_backlog, oldest_nextlog, delayed = reply
        stamps = [published_at(i) for i in (oldest_backlog, oldest_nextlog) if isinstance(i, str)]
        times = [s.timestamp() for s in stamps if s is not None]
        # ids are stamped by the producer's clock, now by Redis: never report a negative age
        age = max(0.0, int(now_ms) / 1000 - min(times)) if times else None
        return TopicStats(topic.name, int(backlog), int(nextlog), int(leased), int(expired), age, int(delayed))
    except (TypeError, ValueError):
        raise reply_error(ctx, 'rfq/stats-8', reply) from None


def purge(ctx: Settings, topic: TopicKeys, queue: str) -> Plan[int]:
    queue = check_queue(queue)
    lst = topic.backlog if queue == 'backlog' else topic.nextlog
    total = 0
    for _ in range(10_000_000):  # a bound: 10^10 messages
        script_keys = [lst, topic.leases, topic.deliveries, *topic.claim_keys]
        reply = yield from script(ctx, 'rfq/purge-6', script_keys, [topic.prefix, str(STEP)])
        if not isinstance(reply, int):
            raise reply_error(ctx, 'rfq/purge-6', reply)
        total += reply
        if reply < STEP:
            break
    return total
