"""Administration of the Spark connector's state in Redis, with no pyspark needed (the CLI uses it)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from ferroq.exceptions import InvalidArgument
from ferroq.protocol import keys
from ferroq.pure import _rfq
from ferroq.spark import _conn
from ferroq.spark._lock import LOCK_TTL_MS
from ferroq.spark._options import parse
from ferroq.types import Message

__all__ = [
    'COMMIT_MOST',
    'PAGE',
    'carry_over',
    'claim_entry',
    'commit_ledger',
    'ledger_claims',
    'ledger_messages',
    'release',
]

#: Ledger entries (claims, up to chunk_size ids each) read per round trip.
PAGE = 10
#: The most messages one commit script call of :func:`commit_ledger` takes (a claim of the streaming reader
#: holds at most chunk_size of them, so each goes whole).
COMMIT_MOST = 10_000


def claim_entry(fence: str, ids: str) -> str:
    """A ledger entry: the claim's fence (its token; digits: a delivery count, a claim of the layout before batch
    claims), then its ids (space-separated, in claim order)."""
    return f'{fence} {ids}'


def ledger_claims(raw: _conn.Raw, ledger: str, lo: int = 0, hi: int | None = None) -> Iterator[tuple[str, list[str]]]:
    """``(fence, ids)`` of the ledger's entries ``[lo, hi)`` (all by default), PAGE per round trip."""
    start = lo
    while hi is None or start < hi:
        stop = start + PAGE if hi is None else min(start + PAGE, hi)
        entries: list[bytes] = raw.call('lrange', ledger, start, stop - 1)
        for entry in entries:
            fence, *ids = entry.decode().split(' ')
            if not fence or not ids:  # an empty fence would commit unfenced, whoever holds the message now
                raise InvalidArgument(f'ledger {ledger} has an entry that is not a claim: {entry[:80]!r}')
            yield fence, ids
        if len(entries) < stop - start:
            return
        start = stop


def commit_ledger(raw: _conn.Raw, topic: str, ledger: str) -> int:
    """Commits the messages of a ledger, fenced by their claims; returns how many were committed.

    Each claim goes whole, in one ``rfq/commit-6n`` call and in claim order (the order of its entry), PAGE of
    them per round trip: a claim that still holds exactly its ids at the nextlog's tail takes the script's
    path with no work per message in Lua, any other (ids lost to a takeover, redeliveries, other consumers'
    claims in between) its general path. A claim of the layout before batch claims (a delivery count for a
    fence) is committed by count."""
    t = _rfq.topic_keys(topic)
    fixed = [t.nextlog, t.leases, t.deliveries, *t.claim_keys]

    def calls_of(fence: str, ids: list[str]) -> list[tuple[list[str], list[Any]]]:
        return [
            (fixed + [t.prefix + msg_id for msg_id in part], [len(t.prefix), fence, len(part)])
            for part in (ids[i : i + COMMIT_MOST] for i in range(0, len(ids), COMMIT_MOST))
        ]

    calls = (call for fence, ids in ledger_claims(raw, ledger) for call in calls_of(fence, ids))
    committed = 0
    while page := list(itertools.islice(calls, PAGE)):
        for reply in raw.scripts('commit-6n', page, protocol='rfq'):
            if not isinstance(reply, list) or not reply:
                raise raw.reply_error('rfq/commit-6n', reply)
            committed += int(reply[0])
    return committed


def ledger_messages(raw: _conn.Raw, topic: str, ledger: str) -> Iterator[list[Message]]:
    """The ledger's messages (no fields), a page per claim: fenced by the claim's token, or by the delivery count
    of a claim of the layout before batch claims."""
    for fence, ids in ledger_claims(raw, ledger):
        if fence.isdigit():
            yield [Message(i, topic, {}, int(fence)) for i in ids]
        else:
            yield [Message(i, topic, {}, 0, fence) for i in ids]


def carry_over(raw: _conn.Raw, previous: str, ledger: str) -> int:
    """Rewrites a ledger of the previous layout (``previous``: an entry per message, ``<id> <fence>``) as
    ``ledger`` (an entry per claim), in one transaction; returns how many messages it lists.

    Consecutive entries with the same fence become one claim, so a replay reads the same messages in the same
    order. Raises InvalidArgument, writing nothing, for an entry without a fence."""
    entries: list[bytes] = raw.call('lrange', previous, 0, -1)
    claims: list[tuple[str, list[str]]] = []
    for entry in entries:
        msg_id, _, fence = entry.decode().partition(' ')
        if not fence or ' ' in fence:
            raise InvalidArgument(f'ledger {previous} has an entry that is not <id> <claim>: {entry[:80]!r}')
        if not claims or claims[-1][0] != fence:
            claims.append((fence, []))
        claims[-1][1].append(msg_id)

    def rewrite(r: Any) -> None:
        pipe = r.pipeline(transaction=True)
        pipe.delete(ledger)
        if claims:
            pipe.rpush(ledger, *(claim_entry(fence, ' '.join(ids)) for fence, ids in claims))
        pipe.delete(previous)
        pipe.execute()

    raw.run(rewrite)
    return len(entries)


def release(url: str, topic: str, consumer: str = 'spark', *, force: bool = False, **client_options: Any) -> int:
    """Gives back every message a retired streaming query (reading ``topic`` as ``consumer``) still holds.

    Its ledgers' messages return to the front of the backlog (delivery counts kept) and the ledgers are
    deleted. Run it only when no query reads as ``consumer``: a live one would replay a released batch with
    nothing in it. While a query's lock is there (up to two minutes after its last poll) it is refused,
    unless ``force``. ``client_options`` are those of ``ferroq.Client``. Returns how many were released.

    Raises:
        InvalidArgument: a bad name or option, or a query holds the consumer's lock (without ``force``).
    """
    options = {'url': url, 'topic': topic, 'consumer': consumer, **{k: str(v) for k, v in client_options.items()}}
    plan = parse(options, 'stream_read')
    raw = _conn.raw(plan.connection)
    prefix = keys.spark_prefix('topic', topic)
    if not force and raw.call('get', keys.spark_lock(prefix, consumer)) is not None:
        raise InvalidArgument(
            f'a streaming query is reading topic {topic} as consumer {consumer!r} (or stopped less than '
            f'{LOCK_TTL_MS // 1000} s ago): stop it first, or force the release'
        )
    handle = _conn.native(plan.connection).topic(topic)
    released = 0
    for seq, previous in _ledgers(raw, keys.spark_ledger(prefix, consumer, 0)[:-1]):
        carry_over(raw, previous, keys.spark_claims(prefix, consumer, seq))
    for _, ledger in _ledgers(raw, keys.spark_claims(prefix, consumer, 0)[:-1]):
        for page in ledger_messages(raw, topic, ledger):
            released += len(handle.release(page))
        raw.call('delete', ledger)
    return released


def _ledgers(raw: _conn.Raw, head: str) -> list[tuple[int, str]]:
    """``(seq, key)`` of the keys ``<head><seq>``: one consumer's ledgers (a consumer name may hold ':', so the
    pattern ``<head>*`` also matches those of a consumer whose name starts with this one's and a ':'.)"""
    found = [k.decode() for k in raw.run(lambda r: list(r.scan_iter(match=head + '*')))]
    return [(int(k[len(head) :]), k) for k in found if k[len(head) :].isdigit()]
