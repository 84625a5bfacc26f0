"""Streams topics for both pure clients: validation, requests and reply decoding, as plans (see ``_requests``).

A stream is one Redis STREAM, ``ferroq:stream:<name>``, and a consumer group is a Redis consumer group on it:
offsets, pending lists and delivery counts are Redis's own. What touches more than one key (a publish and
its token, autoclaim and dead-letter with the dead-letter stream) is one of the scripts in
``ferroq/protocol/lua/streams/``; the rest are plain stream commands.
"""

from __future__ import annotations

import os
import re
import socket
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple, TypeVar

from ferroq._limits import MAX_DELIVERIES, MAX_FIELDS, MAX_GROUP_NAME_LENGTH, MAX_SECONDS, shown
from ferroq.exceptions import InvalidArgument, InvalidName, QueueExists, QueueNotFound, ServerError
from ferroq.protocol import keys
from ferroq.pure._errors import map_error, reply_error
from ferroq.pure._replies import arrow_batch, pairs
from ferroq.pure._requests import Block, Plan
from ferroq.pure._send import evalsha, scan_keys, script, send
from ferroq.pure._settings import Settings
from ferroq.pure._validation import (
    TOPIC_RE,
    as_list,
    check_batch,
    check_block,
    check_count,
    check_dead_topic,
    check_error,
    check_field_names,
    check_fields,
    check_flag,
    check_topic,
    seconds_of,
)
from ferroq.types import GroupInfo, PendingEntry, StreamEntry, StreamInfo

T = TypeVar('T')

#: What autoclaim records on the entries it dead-letters when the caller gives no error text.
MAX_DELIVERIES_ERROR = 'max deliveries reached'

_NAME_RE = re.compile(rf'[!-~]{{1,{MAX_GROUP_NAME_LENGTH}}}')
_ID_RE = re.compile(r'(\d{1,20})(?:-(\d{1,20}))?')
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class StreamRef:
    name: str
    key: str


@dataclass(frozen=True)
class GroupRef:
    """A consumer group as a client object knows it; ``dead`` is the dead-letter stream."""

    stream: StreamRef
    name: str
    consumer: str
    max_deliveries: int | None
    dead: StreamRef


class Retention(NamedTuple):
    """The retention arguments of publish-2 and XTRIM: ``kind`` is '' (none), 'MAXLEN' or 'MINID'."""

    kind: str
    threshold: str
    mode: str


# --- validation ----------------------------------------------------------------------------------


def stream_ref(name: object) -> StreamRef:
    """Client.stream: validate the name and build the key (no I/O)."""
    checked = check_topic(name, 'stream')
    return StreamRef(checked, keys.stream_key(checked))


def check_name(name: object, what: str) -> str:
    """A consumer group or consumer name: 1-MAX_GROUP_NAME_LENGTH printable ASCII characters, no spaces."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvalidName(
            f'invalid {what} name {shown(name)}: use 1-{MAX_GROUP_NAME_LENGTH} printable ASCII characters without spaces'
        )
    return name


def default_consumer() -> str:
    """``<hostname>-<pid>``: unique per process, so two processes never share a consumer's pending entries."""
    host = ''.join(c if '!' <= c <= '~' else '_' for c in socket.gethostname())
    return f'{host}-{os.getpid()}'[:MAX_GROUP_NAME_LENGTH]


def group_ref(
    stream: StreamRef, name: object, consumer: object, max_deliveries: object, dead_letter: object
) -> GroupRef:
    """Stream.group: validate and build (no I/O)."""
    group = check_name(name, 'group')
    who = default_consumer() if consumer is None else check_name(consumer, 'consumer')
    if max_deliveries is not None and (
        isinstance(max_deliveries, bool)
        or not isinstance(max_deliveries, int)
        or not 1 <= max_deliveries <= MAX_DELIVERIES
    ):
        raise InvalidArgument(
            f'max_deliveries must be None or an int from 1 to {MAX_DELIVERIES}, got {shown(max_deliveries)}'
        )
    dead = stream_ref(check_dead_topic(stream.name, dead_letter, 'stream'))
    return GroupRef(stream, group, who, max_deliveries, dead)


def _is_id(text: str, seq: bool) -> bool:
    """``<ms>-<seq>`` (or ``<ms>`` alone unless ``seq``), each part a 64-bit unsigned int."""
    match = _ID_RE.fullmatch(text)
    if match is None or (seq and match[2] is None):
        return False
    return all(int(part) < 2**64 for part in match.groups('0'))


def check_position(value: object, what: str, specials: tuple[str, ...], exclusive: bool = False) -> str:
    """A stream id argument: one of ``specials``, ``<ms>[-<seq>]`` (after ``(`` if ``exclusive``), or an aware
    datetime (``<ms since the epoch>-0``)."""
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise InvalidArgument(f'{what} is a naive datetime: use an aware datetime (with a tzinfo)')
        ms = (value - _EPOCH) // _MS
        if ms < 0:
            raise InvalidArgument(f'{what} is before 1970: stream ids start at the epoch, got {shown(value)}')
        return f'{ms}-0'
    if isinstance(value, str):
        body = value[1:] if exclusive and value.startswith('(') else value
        if value in specials or _is_id(body, seq=False):
            return value
    choices = ', '.join(repr(s) for s in specials)
    bound = " (after '(' for an exclusive bound)" if exclusive else ''
    raise InvalidArgument(
        f"{what} must be {choices}, a stream id '<ms>-<seq>' or '<ms>'{bound}, or an aware datetime, got {shown(value)}"
    )


def check_entry_ids(stream: StreamRef, entries: object) -> list[str]:
    """StreamEntry objects of ``stream`` or ``<ms>-<seq>`` ids, mixed (ack, dead_letter)."""
    ids = []
    for item in as_list(entries, 'entries'):
        if isinstance(item, StreamEntry):
            if item.stream != stream.name:
                raise InvalidArgument(
                    f'entry {shown(item.id)} was read from stream {shown(item.stream)}, not {shown(stream.name)}'
                )
            item = item.id
        if not isinstance(item, str) or not _is_id(item, seq=True):
            raise InvalidArgument(f"an entry must be a StreamEntry or a stream id '<ms>-<seq>', got {shown(item)}")
        ids.append(item)
    return ids


def check_idle(value: object) -> int:
    """min_idle in seconds (pending, autoclaim); returns milliseconds."""
    seconds = seconds_of(value)
    if seconds is None or not 0 <= seconds <= MAX_SECONDS:
        raise InvalidArgument(f'min_idle must be a number of seconds from 0 to {MAX_SECONDS:.0f}, got {shown(value)}')
    return round(seconds * 1000)


def check_retention(maxlen: object, max_age: object, approximate: object, *, required: bool = False) -> Retention:
    """maxlen (keep about the newest n entries) or max_age (seconds, from the client's clock), never both."""
    if maxlen is not None and (isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 0):
        raise InvalidArgument(f'maxlen must be None or an int >= 0, got {shown(maxlen)}')
    seconds = seconds_of(max_age)
    if max_age is not None and (seconds is None or seconds <= 0):
        raise InvalidArgument(f'max_age must be None or a number of seconds > 0, got {shown(max_age)}')
    if maxlen is not None and max_age is not None:
        raise InvalidArgument('give maxlen or max_age, not both')
    mode = '~' if check_flag(approximate, 'approximate') else '='
    if maxlen is not None:
        return Retention('MAXLEN', str(maxlen), mode)
    if seconds is not None:
        min_ms = time.time_ns() // 1_000_000 - round(seconds * 1000)
        return Retention('MINID', f'{max(0, min_ms)}-0', mode)
    if required:
        raise InvalidArgument('trim needs maxlen or max_age')
    return Retention('', '', mode)


# --- replies -------------------------------------------------------------------------------------


def _map(reply: Any) -> dict[str, Any]:
    """A Redis map: a dict (RESP3) or a flat list of key/value pairs (RESP2)."""
    if isinstance(reply, dict):
        return reply
    if not isinstance(reply, list) or len(reply) % 2:
        raise TypeError
    return pairs(reply)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _entries(ctx: Settings, what: str, stream: StreamRef, reply: Any, deliveries: int) -> list[StreamEntry]:
    """``[[id, [field, value, ...]], ...]`` (XRANGE, XREADGROUP); an entry deleted since (nil fields) is left out."""
    try:
        return [
            StreamEntry(entry_id, stream.name, pairs(fields), deliveries)
            for entry_id, fields in reply
            if isinstance(entry_id, str) and fields is not None
        ]
    except (TypeError, ValueError):
        raise reply_error(ctx, what, reply) from None


def publish_reply(ctx: Settings, reply: Any) -> tuple[list[str], bool]:
    """A publish-2 reply ``['ok'|'done', [id, ...]]``: the ids, and whether this call appended them."""
    if not (isinstance(reply, list) and len(reply) == 2 and reply[0] in ('ok', 'done') and isinstance(reply[1], list)):
        raise reply_error(ctx, 'streams/publish-2', reply)
    return [str(i) for i in reply[1]], reply[0] == 'ok'


def _id_lists(ctx: Settings, what: str, replies: list[Any]) -> list[str]:
    if not all(isinstance(r, list) for r in replies):
        raise reply_error(ctx, what, replies)
    return [entry_id for r in replies for entry_id in r]


def _is_missing(exc: ServerError) -> bool:
    """A missing group or stream: NOGROUP (also inside a script's error on Redis 6.2), or a missing key."""
    text = str(exc)
    return 'NOGROUP' in text or 'no such key' in text or 'requires the key to exist' in text


def _not_found(group: GroupRef) -> QueueNotFound:
    return QueueNotFound(
        f'consumer group {shown(group.name)} of stream {shown(group.stream.name)} not found: call create() first'
    )


def _in_group(group: GroupRef, plan: Plan[T]) -> Plan[T]:
    """Run ``plan``; a missing group or stream becomes QueueNotFound."""
    try:
        return (yield from plan)
    except ServerError as exc:
        if not _is_missing(exc):
            raise
        raise _not_found(group) from None


def _chunks(ctx: Settings, items: list[str]) -> list[list[str]]:
    return [items[i : i + ctx.chunk_size] for i in range(0, len(items), ctx.chunk_size)]


# --- Stream --------------------------------------------------------------------------------------


def publish(
    ctx: Settings,
    stream: StreamRef,
    fields: Mapping[str, str],
    maxlen: int | None,
    max_age: float | None,
    approximate: bool,
) -> Plan[str]:
    flat = check_fields(fields, ctx.max_message_bytes, MAX_FIELDS)
    retention = check_retention(maxlen, max_age, approximate)
    return (yield from _publish(ctx, stream, [flat], retention))[0]


def publish_batch(
    ctx: Settings,
    stream: StreamRef,
    messages: Iterable[Mapping[str, str]],
    maxlen: int | None,
    max_age: float | None,
    approximate: bool,
) -> Plan[list[str]]:
    items = check_batch(messages, ctx.max_message_bytes, MAX_FIELDS)
    retention = check_retention(maxlen, max_age, approximate)
    if not items:
        return []
    return (yield from _publish(ctx, stream, items, retention))


def _publish(ctx: Settings, stream: StreamRef, items: list[list[str]], retention: Retention) -> Plan[list[str]]:
    calls = []
    for start in range(0, len(items), ctx.chunk_size):
        # One token per chunk, made before sending: a resend after a dropped connection carries the same token,
        # and the script answers it with the first call's ids instead of appending again.
        script_keys = [stream.key, keys.stream_published(stream.name, uuid.uuid4().hex)]
        args = [str(keys.STREAM_PUBLISH_TOKEN_MS), *retention]
        for flat in items[start : start + ctx.chunk_size]:
            args += flat
        calls.append(evalsha('streams/publish-2', script_keys, args))
    ids = [i for r in (yield from send(ctx, calls, retry_drop=True)) for i in publish_reply(ctx, r)[0]]
    if len(ids) != len(items):
        raise reply_error(ctx, 'streams/publish-2', ids)
    return ids


def streams(ctx: Settings) -> Plan[list[str]]:
    """Client.streams: every STREAM key under the prefix whose name is a valid stream name, sorted."""
    found = yield from scan_keys(ctx, keys.stream_key('*'), 'stream')
    names = {key[len(keys.STREAM_PREFIX) :] for key in found}
    return sorted(name for name in names if TOPIC_RE.fullmatch(name))


def length(ctx: Settings, stream: StreamRef) -> Plan[int]:
    reply = (yield from send(ctx, [('XLEN', stream.key)], retry_drop=True))[0]
    if not isinstance(reply, int):
        raise reply_error(ctx, 'XLEN', reply)
    return reply


def range_(ctx: Settings, stream: StreamRef, start: object, end: object, count: int) -> Plan[list[StreamEntry]]:
    first = check_position(start, 'start', ('-', '+'), exclusive=True)
    last = check_position(end, 'end', ('-', '+'), exclusive=True)
    command = ('XRANGE', stream.key, first, last, 'COUNT', str(check_count(count)))
    reply = (yield from send(ctx, [command], retry_drop=True))[0]
    return _entries(ctx, 'XRANGE', stream, reply, 0)


def range_arrow(ctx: Settings, stream: StreamRef, start: object, end: object, count: int, fields: object) -> Plan[Any]:
    """Stream.range_arrow: XRANGE as ``_id`` and one binary column per name in ``fields``."""
    import pyarrow  # noqa: F401  (before any I/O: without pyarrow the call fails at once)

    first = check_position(start, 'start', ('-', '+'), exclusive=True)
    last = check_position(end, 'end', ('-', '+'), exclusive=True)
    n = check_count(count)
    columns: dict[str, list[Any]] = {name: [] for name in check_field_names(fields, ('_id',))}
    reply = (yield from send(ctx, [('XRANGE', stream.key, first, last, 'COUNT', str(n))], retry_drop=True, raw=True))[0]
    ids: list[str] = []
    try:
        for entry_id, flat in reply:
            if flat is None:
                continue
            body = pairs(flat)
            ids.append(entry_id.decode())
            for name, values in columns.items():
                values.append(body.get(name.encode()))
    except (TypeError, ValueError, AttributeError):
        raise reply_error(ctx, 'XRANGE', reply) from None
    return arrow_batch(ids, columns)


def trim(ctx: Settings, stream: StreamRef, maxlen: int | None, max_age: float | None, approximate: bool) -> Plan[int]:
    retention = check_retention(maxlen, max_age, approximate, required=True)
    # Not resent after a dropped connection: the resend would report 0 entries removed.
    reply = (yield from send(ctx, [('XTRIM', stream.key, retention.kind, retention.mode, retention.threshold)]))[0]
    if not isinstance(reply, int):
        raise reply_error(ctx, 'XTRIM', reply)
    return reply


def info(ctx: Settings, stream: StreamRef) -> Plan[StreamInfo]:
    try:
        reply = (yield from send(ctx, [('XINFO', 'STREAM', stream.key)], retry_drop=True))[0]
    except ServerError as exc:
        if not _is_missing(exc):
            raise
        return StreamInfo(stream.name, 0, None, None, 0)
    try:
        fields = _map(reply)
        first, last = fields['first-entry'], fields['last-entry']
        return StreamInfo(
            stream.name,
            int(fields['length']),
            None if first is None else str(first[0]),
            None if last is None else str(last[0]),
            int(fields['groups']),
        )
    except (TypeError, ValueError, KeyError, IndexError):
        raise reply_error(ctx, 'XINFO STREAM', reply) from None


def groups(ctx: Settings, stream: StreamRef) -> Plan[list[GroupInfo]]:
    try:
        reply = (yield from send(ctx, [('XINFO', 'GROUPS', stream.key)], retry_drop=True))[0]
    except ServerError as exc:
        if not _is_missing(exc):
            raise
        return []
    try:
        rows = [_map(row) for row in reply]
        return [
            GroupInfo(
                name=str(row['name']),
                consumers=int(row['consumers']),
                pending=int(row['pending']),
                last_delivered_id=str(row['last-delivered-id']),
                entries_read=_optional_int(row.get('entries-read')),
                lag=_optional_int(row.get('lag')),
            )
            for row in rows
        ]
    except (TypeError, ValueError, KeyError):
        raise reply_error(ctx, 'XINFO GROUPS', reply) from None


def delete(ctx: Settings, stream: StreamRef) -> Plan[bool]:
    reply = (yield from send(ctx, [('DEL', stream.key)]))[0]
    if not isinstance(reply, int):
        raise reply_error(ctx, 'DEL', reply)
    return reply > 0


# --- ConsumerGroup -------------------------------------------------------------------------------


def create(ctx: Settings, group: GroupRef, start: object, exist_ok: bool) -> Plan[bool]:
    position = check_position(start, 'start', ('$',))
    exist_ok = check_flag(exist_ok, 'exist_ok')
    try:
        yield from send(ctx, [('XGROUP', 'CREATE', group.stream.key, group.name, position, 'MKSTREAM')])
    except ServerError as exc:
        if exc.code != 'BUSYGROUP':
            raise
        if exist_ok:
            return False
        raise QueueExists(
            f'consumer group {shown(group.name)} of stream {shown(group.stream.name)} already exists'
        ) from None
    return True


def read(ctx: Settings, group: GroupRef, count: int, block: float | None) -> Plan[list[StreamEntry]]:
    head = ('XREADGROUP', 'GROUP', group.name, group.consumer, 'COUNT', str(check_count(count)))
    tail = ('STREAMS', group.stream.key, '>')
    wait = check_block(block)
    return (yield from _in_group(group, _read(ctx, group, head, tail, wait)))


def _read(
    ctx: Settings, group: GroupRef, head: tuple[str, ...], tail: tuple[str, ...], wait: float | None
) -> Plan[list[StreamEntry]]:
    if wait is None:
        reply = (yield from send(ctx, [(*head, *tail)]))[0]  # not resent: a lost reply's entries stay pending
    else:
        # On a dedicated connection, as a blocking claim: the pool is not held while Redis waits. BLOCK 0 would
        # wait forever, so the shortest wait is 1 ms.
        reply = yield Block((*head, 'BLOCK', str(max(1, round(wait * 1000))), *tail), wait + ctx.command_timeout)
        if isinstance(reply, BaseException):
            raise map_error(reply, ctx)
    if reply is None:
        return []
    try:
        streams = list(reply.values()) if isinstance(reply, dict) else [entries for _, entries in reply]
    except (TypeError, ValueError):
        raise reply_error(ctx, 'XREADGROUP', reply) from None
    return [entry for entries in streams for entry in _entries(ctx, 'XREADGROUP', group.stream, entries, 1)]


def ack(ctx: Settings, group: GroupRef, entries: Iterable[StreamEntry | str]) -> Plan[list[str]]:
    ids = check_entry_ids(group.stream, entries)
    if not ids:
        return []
    calls = [evalsha('streams/ack-1', [group.stream.key], [group.name, *chunk]) for chunk in _chunks(ctx, ids)]
    # Not resent after a dropped connection: the resend would report nothing acknowledged.
    return _id_lists(ctx, 'streams/ack-1', (yield from send(ctx, calls)))


def pending(
    ctx: Settings, group: GroupRef, count: int, consumer: str | None, min_idle: float | None
) -> Plan[list[PendingEntry]]:
    command = ['XPENDING', group.stream.key, group.name]
    count_arg = str(check_count(count))
    who = None if consumer is None else check_name(consumer, 'consumer')
    if min_idle is not None:
        command += ['IDLE', str(check_idle(min_idle))]
    command += ['-', '+', count_arg]
    if who is not None:
        command.append(who)
    reply = (yield from _in_group(group, send(ctx, [tuple(command)], retry_drop=True)))[0]
    try:
        return [PendingEntry(str(i), str(c), int(idle) / 1000, int(n)) for i, c, idle, n in reply]
    except (TypeError, ValueError):
        raise reply_error(ctx, 'XPENDING', reply) from None


def autoclaim(ctx: Settings, group: GroupRef, min_idle: float, count: int, error: str) -> Plan[list[StreamEntry]]:
    idle_ms, most = check_idle(min_idle), check_count(count)
    text = check_error(error) or MAX_DELIVERIES_ERROR
    s = group.stream
    args = [s.name, group.name, group.consumer, str(idle_ms), str(most), str(group.max_deliveries or 0), text]
    reply = yield from _in_group(group, script(ctx, 'streams/autoclaim-2', [s.key, group.dead.key], args))
    try:
        return [StreamEntry(str(i), s.name, pairs(fields), int(n)) for i, fields, n in reply[0]]
    except (TypeError, ValueError, IndexError):
        raise reply_error(ctx, 'streams/autoclaim-2', reply) from None


def dead_letter(ctx: Settings, group: GroupRef, entries: Iterable[StreamEntry | str], error: str) -> Plan[list[str]]:
    ids = check_entry_ids(group.stream, entries)
    text = check_error(error)
    if not ids:
        return []
    s = group.stream
    calls = [
        evalsha('streams/dead_letter-2', [s.key, group.dead.key], [s.name, group.name, text, *chunk])
        for chunk in _chunks(ctx, ids)
    ]
    # Not resent after a dropped connection: the resend would report nothing moved.
    return _id_lists(ctx, 'streams/dead_letter-2', (yield from _in_group(group, send(ctx, calls))))


def seek(ctx: Settings, group: GroupRef, position: object) -> Plan[None]:
    command = ('XGROUP', 'SETID', group.stream.key, group.name, check_position(position, 'position', ('$',)))
    yield from _in_group(group, send(ctx, [command], retry_drop=True))


def group_info(ctx: Settings, group: GroupRef) -> Plan[GroupInfo]:
    for row in (yield from groups(ctx, group.stream)):
        if row.name == group.name:
            return row
    raise _not_found(group)


def delete_group(ctx: Settings, group: GroupRef) -> Plan[bool]:
    try:
        reply = (yield from send(ctx, [('XGROUP', 'DESTROY', group.stream.key, group.name)]))[0]
    except ServerError as exc:
        if not _is_missing(exc):
            raise
        return False
    if not isinstance(reply, int):
        raise reply_error(ctx, 'XGROUP DESTROY', reply)
    return reply > 0
