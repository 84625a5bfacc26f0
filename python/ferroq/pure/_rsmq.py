"""The RSMQ protocol for both pure clients: validation, requests and reply decoding, as plans (see ``_requests``).

Queues are byte-compatible with smrchy/rsmq 0.12 and PyRSMQ 0.6: the scripts in
``ferroq/protocol/lua/rsmq/`` write exactly RSMQ's keys and fields; docs/protocol.md explains the
client side done here.
"""

from __future__ import annotations

import random
import re
import string
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ferroq._limits import (
    MAX_RSMQ_MAXSIZE,
    MAX_RSMQ_SECONDS,
    MIN_RSMQ_COUNT_FOR_CALLER_BODIES,
    MIN_RSMQ_MAXSIZE,
    shown,
)
from ferroq.exceptions import (
    BatchError,
    InvalidArgument,
    InvalidMessage,
    InvalidName,
    MessageTooLarge,
    QueueExists,
    QueueNotFound,
)
from ferroq.protocol import keys
from ferroq.pure._errors import map_error, reply_error
from ferroq.pure._requests import Listen, Plan, Subscribe
from ferroq.pure._send import evalsha, script, send
from ferroq.pure._settings import Settings
from ferroq.pure._validation import (
    as_list,
    batch_error,
    check_all,
    check_block,
    check_count,
    check_flag,
    seconds_of,
    utf8_len,
)
from ferroq.types import RsmqAttributes, RsmqMessage, rsmq_sent

#: Longest wait between two receive attempts of a blocking receive when no notification comes (producers
#: that do not publish: PyRSMQ, or RSMQ without realtime).
BLOCK_POLL = 1.0
#: Tries of a receive when the queue's dead-letter queue changes under it.
DLQ_TRIES = 3

_QNAME_RE = re.compile(keys.RSMQ_QNAME_PATTERN)
_NS_RE = re.compile(keys.RSMQ_NS_PATTERN)
_ID_RE = re.compile(keys.RSMQ_ID_PATTERN)
_ALPHABET = string.ascii_letters + string.digits


@dataclass
class RsmqRef:
    """A queue as a client object knows it: its keys, and the dead-letter queue last learnt from Redis."""

    ns: str
    name: str
    realtime: bool
    zset: str
    hash: str
    channel: str
    dlq: str | None = None

    @property
    def pair(self) -> list[str]:
        return [self.zset, self.hash]

    def published(self, token: str) -> str:
        """The record of one send chunk (see ``keys.rsmq_published``)."""
        return keys.rsmq_published(self.ns, self.name, token)


# --- validation ----------------------------------------------------------------------------------


def check_qname(name: object) -> str:
    if not isinstance(name, str) or not _QNAME_RE.fullmatch(name):
        raise InvalidName(f'invalid RSMQ queue name {shown(name)}: use 1-160 characters from A-Z a-z 0-9 _ -')
    return name


def check_ns(ns: object) -> str:
    if not isinstance(ns, str) or not _NS_RE.fullmatch(ns):
        raise InvalidName(f'invalid RSMQ namespace {shown(ns)}: use 1-64 characters from A-Z a-z 0-9 _ . : -')
    return ns


def queue_ref(qname: object, ns: object, realtime: object) -> RsmqRef:
    """Client.rsmq: validate and build the keys (no I/O)."""
    name, space = check_qname(qname), check_ns(ns)
    rt = check_flag(realtime, 'realtime')
    return RsmqRef(
        space, name, rt, keys.rsmq_queue(space, name), keys.rsmq_hash(space, name), keys.rsmq_channel(space, name)
    )


def _stored_seconds(value: object, name: str) -> str:
    """vt or delay as stored in the queue hash: integer seconds."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RSMQ_SECONDS:
        raise InvalidArgument(f'{name} must be an int from 0 to {MAX_RSMQ_SECONDS} (seconds), got {shown(value)}')
    return str(value)


def _maxsize(value: object) -> str:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (MIN_RSMQ_MAXSIZE <= value <= MAX_RSMQ_MAXSIZE or value == -1)
    ):
        raise InvalidArgument(
            f'maxsize must be an int from {MIN_RSMQ_MAXSIZE} to {MAX_RSMQ_MAXSIZE}, or -1 for unlimited, got {shown(value)}'
        )
    return str(value)


def _call_ms(value: object, name: str) -> str:
    """A per-call vt or delay (never stored, so fractions are fine): milliseconds."""
    seconds = seconds_of(value)
    if seconds is None or not 0 <= seconds <= MAX_RSMQ_SECONDS:
        raise InvalidArgument(f'{name} must be a number of seconds from 0 to {MAX_RSMQ_SECONDS}, got {shown(value)}')
    return str(round(seconds * 1000))


def _optional_ms(value: object, name: str) -> str:
    return '' if value is None else _call_ms(value, name)


def check_call_vt(vt: object) -> None:
    """A receive's ``vt``, checked as ``receive`` checks it: None (the queue's) or seconds."""
    _optional_ms(vt, 'vt')


_PAIRING = (
    'max_receives and dead_letter go together: give both, or max_receives=0 alone to remove the dead-letter queue'
)


def _dead_letter(ref: RsmqRef, max_receives: object, dead_letter: object, least: int) -> tuple[str, str]:
    """(max_receives, dead_letter) as the scripts take them: '' for "not given"."""
    if max_receives is None and dead_letter is None:
        return '', ''
    if max_receives is not None and (
        isinstance(max_receives, bool) or not isinstance(max_receives, int) or max_receives < least
    ):
        hint = ' (0 removes the dead-letter queue)' if least == 0 else ''
        raise InvalidArgument(f'max_receives must be an int >= {least}{hint}, got {shown(max_receives)}')
    if dead_letter is not None:
        check_qname(dead_letter)
        if dead_letter == ref.name:
            raise InvalidArgument(f'a queue cannot be its own dead-letter queue: {shown(dead_letter)}')
    if not isinstance(max_receives, int) or (max_receives == 0) != (dead_letter is None):
        raise InvalidArgument(_PAIRING)
    return str(max_receives), dead_letter if isinstance(dead_letter, str) else ''


def utf16_len(text: str) -> int:
    """RSMQ's message length: JavaScript's ``string.length`` (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _check_message(message: object, max_bytes: int) -> int:
    """Validate one message; returns its UTF-16 length."""
    if not isinstance(message, str):
        raise InvalidMessage(f'an RSMQ message must be a str, got {type(message).__name__}')
    try:
        size = utf8_len(message)
    except UnicodeEncodeError:
        raise InvalidMessage('an RSMQ message is not valid Unicode (lone surrogate)') from None
    if size > max_bytes:
        raise MessageTooLarge(f'message is {size} bytes, more than max_message_bytes={max_bytes}')
    return utf16_len(message)


def _too_long(length: int, maxsize: str) -> MessageTooLarge:
    return MessageTooLarge(
        f"message is {length} characters (UTF-16 code units), more than the queue's maxsize {maxsize}"
    )


def check_rsmq_id(msg_id: object) -> str:
    if not isinstance(msg_id, str) or not _ID_RE.fullmatch(msg_id):
        raise InvalidArgument(f'invalid RSMQ message id {shown(msg_id)}: expected 32 characters from A-Z a-z 0-9 :')
    return msg_id


# --- script outcomes -----------------------------------------------------------------------------


def _status(ctx: Settings, ref: RsmqRef, name: str, reply: Any) -> list[Any]:
    """The reply of an rsmq script when its status is 'ok'; the matching error otherwise."""
    if not isinstance(reply, list) or not reply:
        raise reply_error(ctx, name, reply)
    status = reply[0]
    if status == 'ok' or (status == 'done' and name == 'rsmq/send-3'):
        return reply
    if status == 'notfound':
        raise _not_found(ref)
    if status == 'exists':
        raise QueueExists(f'RSMQ queue {shown(ref.name)} already exists in namespace {shown(ref.ns)}')
    if status == 'dlqmissing' and len(reply) == 2:
        raise QueueNotFound(
            f'dead-letter queue {shown(reply[1])} of RSMQ queue {shown(ref.name)} not found in namespace {shown(ref.ns)}'
        )
    raise reply_error(ctx, name, reply)


def _not_found(ref: RsmqRef) -> QueueNotFound:
    return QueueNotFound(f'RSMQ queue {shown(ref.name)} not found in namespace {shown(ref.ns)}')


def _dlq_hash(ref: RsmqRef, dead_letter: str) -> str:
    return keys.rsmq_hash(ref.ns, dead_letter) if dead_letter else ref.hash


# --- operations ----------------------------------------------------------------------------------


def queues(ctx: Settings, ns: str) -> Plan[list[str]]:
    space = check_ns(ns)
    reply = (yield from send(ctx, [('SMEMBERS', keys.rsmq_queues(space))], retry_drop=True))[0]
    if not isinstance(reply, (list, set)):
        raise reply_error(ctx, 'SMEMBERS', reply)
    return sorted(reply)


def create(
    ctx: Settings, ref: RsmqRef, vt: int, delay: int, maxsize: int, max_receives: int | None, dead_letter: str | None
) -> Plan[None]:
    args = [ref.name, _stored_seconds(vt, 'vt'), _stored_seconds(delay, 'delay'), _maxsize(maxsize)]
    maxrecv, dlq = _dead_letter(ref, max_receives, dead_letter, 1)
    script_keys = [keys.rsmq_queues(ref.ns), ref.hash, _dlq_hash(ref, dlq)]
    reply = yield from script(ctx, 'rsmq/create-3', script_keys, [*args, maxrecv, dlq])
    _status(ctx, ref, 'rsmq/create-3', reply)


def delete_queue(ctx: Settings, ref: RsmqRef) -> Plan[None]:
    script_keys = [keys.rsmq_queues(ref.ns), ref.zset, ref.hash]
    reply = yield from script(ctx, 'rsmq/delete_queue-3', script_keys, [ref.name])
    _status(ctx, ref, 'rsmq/delete_queue-3', reply)


def attributes(ctx: Settings, ref: RsmqRef) -> Plan[RsmqAttributes]:
    reply = (yield from send(ctx, [evalsha('rsmq/attributes-2', ref.pair, [])], retry_drop=True))[0]
    return _attributes(ctx, ref, reply)


def _attributes(ctx: Settings, ref: RsmqRef, reply: Any) -> RsmqAttributes:
    ok = _status(ctx, ref, 'rsmq/attributes-2', reply)
    try:
        (vt, delay, maxsize, totalrecv, totalsent, created, modified, maxrecv, dlq), msgs, hidden = ok[1:]
        return RsmqAttributes(
            vt=float(vt),
            delay=float(delay),
            maxsize=int(maxsize),
            totalrecv=int(totalrecv or 0),
            totalsent=int(totalsent or 0),
            created=int(float(created or 0)),
            modified=int(float(modified or 0)),
            msgs=int(msgs),
            hiddenmsgs=int(hidden),
            max_receives=int(maxrecv) if maxrecv is not None else None,
            dead_letter=dlq,
        )
    except (TypeError, ValueError):
        raise reply_error(ctx, 'rsmq/attributes-2', reply) from None


def set_attributes(
    ctx: Settings,
    ref: RsmqRef,
    vt: int | None,
    delay: int | None,
    maxsize: int | None,
    max_receives: int | None,
    dead_letter: str | None,
) -> Plan[RsmqAttributes]:
    if vt is None and delay is None and maxsize is None and max_receives is None and dead_letter is None:
        raise InvalidArgument('set_attributes needs at least one of vt, delay, maxsize, max_receives, dead_letter')
    args = [
        '' if vt is None else _stored_seconds(vt, 'vt'),
        '' if delay is None else _stored_seconds(delay, 'delay'),
        '' if maxsize is None else _maxsize(maxsize),
    ]
    maxrecv, dlq = _dead_letter(ref, max_receives, dead_letter, 0)
    call = evalsha('rsmq/set_attributes-2', [ref.hash, _dlq_hash(ref, dlq)], [*args, maxrecv, dlq])
    changed = (yield from send(ctx, [call], retry_drop=True))[0]  # setting the same values again is harmless
    _status(ctx, ref, 'rsmq/set_attributes-2', changed)
    # A second round trip: pipelined, a NOSCRIPT retry of the first script could run it after the read.
    return (yield from attributes(ctx, ref))


def send_one(ctx: Settings, ref: RsmqRef, message: str, delay: float | None) -> Plan[str]:
    length = _check_message(message, ctx.max_message_bytes)
    return (yield from _send(ctx, ref, [message], [length], _optional_ms(delay, 'delay'), single=True))[0]


def send_batch(ctx: Settings, ref: RsmqRef, messages: Iterable[str], delay: float | None) -> Plan[list[str]]:
    items = as_list(messages, 'messages')
    lengths = check_all(items, lambda message: _check_message(message, ctx.max_message_bytes))
    delay_ms = _optional_ms(delay, 'delay')
    if not items:
        return []
    return (yield from _send(ctx, ref, items, lengths, delay_ms, single=False))


def queue_maxsize(ctx: Settings, ref: RsmqRef) -> Plan[tuple[int, str]]:
    """The queue's maxsize (-1: unlimited) and its stored text; QueueNotFound if it does not exist."""
    reply = (yield from send(ctx, [('HMGET', ref.hash, 'vt', 'delay', 'maxsize')], retry_drop=True))[0]
    if not isinstance(reply, list) or len(reply) != 3:
        raise reply_error(ctx, 'HMGET', reply)
    if None in reply:
        raise _not_found(ref)
    try:
        return int(reply[2]), str(reply[2])
    except ValueError:
        raise reply_error(ctx, 'HMGET', reply) from None


def _batch_too_long(lengths: list[int], maxsize: str) -> BatchError:
    limit = int(maxsize)
    errors = [(i, _too_long(n, maxsize)) for i, n in enumerate(lengths) if limit != -1 and n > limit]
    return batch_error(errors, len(lengths))


def _send(
    ctx: Settings, ref: RsmqRef, messages: list[str], lengths: list[int], delay_ms: str, *, single: bool
) -> Plan[list[str]]:
    step = ctx.chunk_size
    if len(messages) > step:
        # Several scripts: check what they would refuse first, so a predictable error writes nothing.
        reply = (yield from send(ctx, [('HMGET', ref.hash, 'vt', 'delay', 'maxsize')]))[0]
        if not isinstance(reply, list) or len(reply) != 3:
            raise reply_error(ctx, 'HMGET', reply)
        if None in reply:
            raise _not_found(ref)
        try:
            limit = int(reply[2])
        except ValueError:
            raise reply_error(ctx, 'HMGET', reply) from None
        if limit != -1 and max(lengths) > limit:
            raise _batch_too_long(lengths, reply[2])
    channel = ref.channel if ref.realtime else ''
    calls = []
    for start in range(0, len(messages), step):
        chunk = messages[start : start + step]
        # One token per chunk, made before sending: a resend after a dropped connection carries the same token,
        # and the script answers it with the first call's ids instead of sending again.
        token = uuid.uuid4().hex
        args = [delay_ms, str(max(lengths[start : start + step])), channel, str(keys.STREAM_PUBLISH_TOKEN_MS)]
        for message in chunk:
            args += (''.join(random.choices(_ALPHABET, k=22)), message)
        calls.append(evalsha('rsmq/send-3', [*ref.pair, ref.published(token)], args))
    replies = yield from send(ctx, calls, retry_drop=True)
    ids: list[str] = []
    for reply in replies:
        if isinstance(reply, list) and len(reply) == 2 and reply[0] == 'toolong':
            if single:
                raise _too_long(lengths[0], reply[1])
            raise _batch_too_long(lengths, reply[1])
        ok = _status(ctx, ref, 'rsmq/send-3', reply)
        if len(ok) != 2 or not isinstance(ok[1], list):
            raise reply_error(ctx, 'rsmq/send-3', reply)
        ids += ok[1]
    if len(ids) != len(messages):
        raise reply_error(ctx, 'rsmq/send-3', replies)
    return ids


def receive(
    ctx: Settings, ref: RsmqRef, count: int, vt: float | None, block: float | None, *, pop: bool = False
) -> Plan[list[RsmqMessage]]:
    """receive / receive_batch (``pop=False``) and pop / pop_batch (``pop=True``, never blocking)."""
    count = check_count(count)
    vt_ms = '' if pop else _optional_ms(vt, 'vt')
    wait = check_block(block)
    messages, now_ms, next_ms = yield from _take(ctx, ref, count, vt_ms, pop)
    if messages or wait is None:
        return messages
    deadline = time.monotonic() + wait
    # Wake on the realtime channel (producers with realtime publish on every send) or when the next hidden
    # message becomes visible; BLOCK_POLL bounds the wait for producers that never publish.
    subscribed = yield Subscribe(ref.channel)
    if isinstance(subscribed, BaseException):
        raise map_error(subscribed, ctx)
    for _ in range(int(wait * 1000) + 3):  # a bound: every pause but the last is >= 1 ms
        messages, now_ms, next_ms = yield from _take(ctx, ref, count, vt_ms, pop)
        remaining = deadline - time.monotonic()
        if messages or remaining <= 0:
            return messages
        pause = min(remaining, BLOCK_POLL)
        if next_ms >= 0:
            pause = min(pause, max(0.001, (next_ms - now_ms) / 1000))
        heard = yield Listen(pause)
        if isinstance(heard, BaseException):
            raise map_error(heard, ctx)
    return []


def _take(ctx: Settings, ref: RsmqRef, count: int, vt_ms: str, pop: bool) -> Plan[tuple[list[RsmqMessage], int, int]]:
    """Up to ``count`` messages in script calls of at most chunk_size; (messages, now_ms, next_ms). A receive of
    MIN_RSMQ_COUNT_FOR_CALLER_BODIES or more reads the bodies itself, after the last call (see receive-4)."""
    caller_reads = not pop and count >= MIN_RSMQ_COUNT_FOR_CALLER_BODIES
    taken: list[list[Any]] = []  # id, body ('' until read), rc, fr of each message
    now_ms = next_ms = -1
    while len(taken) < count:
        want = min(count - len(taken), ctx.chunk_size)
        got, now_ms, next_ms = yield from _take_chunk(ctx, ref, want, vt_ms, pop, caller_reads)
        taken += got
        if len(got) < want:
            break
    if caller_reads and taken:
        taken = yield from _with_bodies(ctx, ref, taken)
    return [RsmqMessage(i, body, rc, fr, rsmq_sent(i)) for i, body, rc, fr in taken], now_ms, next_ms


def _take_chunk(
    ctx: Settings, ref: RsmqRef, count: int, vt_ms: str, pop: bool, caller_reads: bool
) -> Plan[tuple[list[list[Any]], int, int]]:
    name = 'rsmq/receive-4'
    for _ in range(DLQ_TRIES):
        dlq = [keys.rsmq_queue(ref.ns, ref.dlq), keys.rsmq_hash(ref.ns, ref.dlq)] if ref.dlq else ref.pair
        args = [str(count), vt_ms, '1' if pop else '0', f'{ref.ns}:', '1' if caller_reads else '0']
        reply = yield from script(ctx, name, [*ref.pair, *dlq], args)
        if isinstance(reply, list) and len(reply) == 2 and reply[0] == 'dlq' and isinstance(reply[1], str):
            ref.dlq = reply[1]  # the queue's dead-letter queue: call again with its keys
            continue
        ok = _status(ctx, ref, name, reply)
        try:
            _, now_ms, next_ms, out, again = ok
            now_ms = int(now_ms)
            # out: id, body of each message (its id alone when the caller reads the bodies); again: place (from
            # 1), rc and fr of each one received before, the others having rc 1 and fr now_ms.
            if caller_reads:
                got = [[i, '', 1, now_ms] for i in out]
            else:
                if len(out) % 2:
                    raise ValueError('not 2 values per message')
                flat = iter(out)
                got = [[i, body, 1, now_ms] for i, body in zip(flat, flat)]
            if len(again) % 3:
                raise ValueError('not 3 values per message received before')
            flat = iter(again)
            for k, rc, fr in zip(flat, flat, flat):
                if not 1 <= int(k) <= len(got):
                    raise ValueError(f'no message {k}')
                got[int(k) - 1][2:] = int(rc), int(fr)
            for m in got:
                if not isinstance(m[0], str) or not isinstance(m[1], str):
                    raise TypeError('an id or a body that is not a string')
            return got, now_ms, int(next_ms)
        except (TypeError, ValueError):
            raise reply_error(ctx, name, reply) from None
    raise reply_error(ctx, name, f'the dead-letter queue changed {DLQ_TRIES} times in a row')


def _with_bodies(ctx: Settings, ref: RsmqRef, taken: list[list[Any]]) -> Plan[list[list[Any]]]:
    """The received messages with their bodies, read with one HMGET per chunk (one round trip). One whose body is
    missing (a foreign or evicted write, or deleted since) is left out, and deleted, as receive-4 does with one
    it sees."""
    step = ctx.chunk_size
    calls = [('HMGET', ref.pair[1], *(m[0] for m in taken[s : s + step])) for s in range(0, len(taken), step)]
    replies = yield from send(ctx, calls, retry_drop=True)
    if not all(isinstance(reply, list) for reply in replies) or sum(map(len, replies)) != len(taken):
        raise reply_error(ctx, 'HMGET', replies)
    kept, missing = [], []
    for m, body in zip(taken, (body for reply in replies for body in reply)):
        if body is None:
            missing.append(m[0])
        else:
            m[1] = body
            kept.append(m)
    if missing:
        yield from _delete(ctx, ref, missing)
    return kept


def delete(ctx: Settings, ref: RsmqRef, msg_id: str) -> Plan[bool]:
    return check_rsmq_id(msg_id) in (yield from _delete(ctx, ref, [msg_id]))


def delete_batch(ctx: Settings, ref: RsmqRef, ids: Iterable[str]) -> Plan[list[str]]:
    checked = [check_rsmq_id(i) for i in as_list(ids, 'ids')]
    if not checked:
        return []
    return (yield from _delete(ctx, ref, checked))


def _delete(ctx: Settings, ref: RsmqRef, ids: list[str]) -> Plan[list[str]]:
    step = ctx.chunk_size
    chunks = [ids[i : i + step] for i in range(0, len(ids), step)]
    calls = [evalsha('rsmq/delete-2', ref.pair, chunk) for chunk in chunks]
    replies = yield from send(ctx, calls)  # not repeated: a repeat would report nothing deleted
    deleted: list[str] = []
    for chunk, reply in zip(chunks, replies):
        if isinstance(reply, list):
            deleted.extend(reply)
        elif isinstance(reply, int) and reply == len(chunk):  # the number alone: every id given was deleted
            deleted.extend(chunk)
        else:
            raise reply_error(ctx, 'rsmq/delete-2', reply)
    return deleted


def change_visibility(ctx: Settings, ref: RsmqRef, msg_id: str, vt: float) -> Plan[bool]:
    args = [check_rsmq_id(msg_id), _call_ms(vt, 'vt')]
    reply = (yield from send(ctx, [evalsha('rsmq/visibility-2', ref.pair, args)], retry_drop=True))[0]
    ok = _status(ctx, ref, 'rsmq/visibility-2', reply)
    if len(ok) != 2 or ok[1] not in (0, 1):
        raise reply_error(ctx, 'rsmq/visibility-2', reply)
    return bool(ok[1] == 1)
