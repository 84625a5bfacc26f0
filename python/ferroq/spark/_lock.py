"""One live streaming query per consumer of a topic or stream: a lock renewed at every poll.

Two queries reading as the same consumer would claim (or move the group) under each other, so the second
one fails at its first poll. The lock records the offsets its holder planned last: a run of the same query
restarted from its checkpoint plans from one of them and takes the lock over at once (the JVM may stop the
previous run's source late, or never, when it died). A query that died frees its lock when it expires.
"""

from __future__ import annotations

from ferroq.exceptions import InvalidArgument
from ferroq.spark import _conn

__all__ = ['LOCK_TTL_MS', 'free', 'hold']

#: How long a lock lasts without a poll renewing it.
LOCK_TTL_MS = 120_000


def hold(raw: _conn.Raw, key: str, instance: str, what: str, start: str, end: str | None = None) -> None:
    """Takes or renews the lock ``key`` for ``instance`` planning from ``start`` (up to ``end`` once known).

    Raises:
        InvalidArgument: another query holds it.
    """
    if raw.script('lock-1', [key], [instance, LOCK_TTL_MS, start, start if end is None else end]):
        raise InvalidArgument(
            f'another streaming query is reading {what}: stop it or give this one another consumer '
            f'(the lock {key} expires {LOCK_TTL_MS // 1000} s after its last poll)'
        )


def free(raw: _conn.Raw, key: str, instance: str) -> None:
    """Frees the lock ``key`` if ``instance`` holds it."""
    raw.script('lock-1', [key], [instance, '0', '', ''])
