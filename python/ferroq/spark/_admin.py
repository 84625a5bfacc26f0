"""Administration of the Spark connector's state in Redis, with no pyspark needed (the CLI uses it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ferroq.exceptions import InvalidArgument
from ferroq.protocol import keys
from ferroq.pure import _rfq
from ferroq.spark import _conn
from ferroq.spark._lock import LOCK_TTL_MS
from ferroq.spark._options import parse
from ferroq.types import Message

__all__ = ['COMMIT_MOST', 'PAGE', 'commit_ledger', 'ledger_messages', 'release']

#: Ledger entries read per round trip, and handed to one commit, extend or release call (which sends them in
#: chunks of chunk_size, one pipeline).
PAGE = 10_000
#: The most messages one commit script call of :func:`commit_ledger` takes (a claim of the streaming reader
#: holds at most this many, so each goes whole).
COMMIT_MOST = 10_000


def commit_ledger(raw: _conn.Raw, topic: str, ledger: str) -> int:
    """Commits the messages of a ledger, fenced by their claims; returns how many were committed.

    The entries are grouped by claim, and each claim goes to the commit script whole, in one call and in
    claim order (the order of its ledger entries): the script's fast path, with no work per message in Lua.
    The ids travel only as their message keys. A ledger written before batch claims (``<id> <delivery
    count>``) is committed by count, as :func:`ledger_messages` reads it."""
    t = _rfq.topic_keys(topic)
    fixed = [t.nextlog, t.leases, t.deliveries, *t.claim_keys]
    committed = 0

    def flush(fence: str, message_keys: list[str]) -> None:
        nonlocal committed
        args = [len(t.prefix), fence, len(message_keys)]
        reply = raw.script('commit-6n', fixed + message_keys, args, protocol='rfq')
        if not isinstance(reply, list) or not reply:
            raise raw.reply_error('rfq/commit-6n', reply)
        committed += int(reply[0])

    fence, message_keys = '', list[str]()
    for entries in _ledger_pages(raw, ledger):
        for entry in entries:
            msg_id, _, entry_fence = entry.decode().partition(' ')
            if not entry_fence:  # an empty fence would commit unfenced, whoever holds the message now
                raise InvalidArgument(f'ledger {ledger} has an entry without a claim: {entry!r}')
            if entry_fence != fence or len(message_keys) >= COMMIT_MOST:
                if message_keys:
                    flush(fence, message_keys)
                fence, message_keys = entry_fence, []
            message_keys.append(t.prefix + msg_id)
    if message_keys:
        flush(fence, message_keys)
    return committed


def _ledger_pages(raw: _conn.Raw, ledger: str) -> Iterator[list[bytes]]:
    """The entries of a ledger, PAGE per round trip."""
    start = 0
    while True:
        entries: list[bytes] = raw.call('lrange', ledger, start, start + PAGE - 1)
        if entries:
            yield entries
        if len(entries) < PAGE:
            return
        start += PAGE


def ledger_messages(raw: _conn.Raw, topic: str, ledger: str) -> Iterator[list[Message]]:
    """The ``<id> <claim>`` entries of a ledger, as Messages (no fields) in pages of PAGE. A ledger written before
    batch claims holds ``<id> <delivery count>`` instead: those Messages are fenced by the count."""
    for entries in _ledger_pages(raw, ledger):
        page = []
        for entry in entries:
            mid, _, fence = entry.decode().partition(' ')
            if fence.isdigit():
                page.append(Message(mid, topic, {}, int(fence)))
            else:
                page.append(Message(mid, topic, {}, 0, fence))
        yield page


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
    pattern = keys.spark_ledger(prefix, consumer, 0)[:-1] + '*'
    released = 0
    for ledger in raw.run(lambda r: list(r.scan_iter(match=pattern))):
        for page in ledger_messages(raw, topic, ledger):
            released += len(handle.release(page))
        raw.call('delete', ledger)
    return released
