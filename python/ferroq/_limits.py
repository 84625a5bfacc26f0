"""Every bound on an argument, for the pure client, the worker and the Spark source: read by name from the
native core's table (``ferroq._ferroq.LIMITS``, defined once in ``src/limits.rs``), so both clients check the
same numbers. ``tests/unit/test_limits.py`` checks that every limit of the core is here.
"""

from __future__ import annotations

from ferroq._ferroq import LIMITS

#: Largest connection pool a client may ask for (pool_size).
MAX_POOL_SIZE = int(LIMITS['MAX_POOL_SIZE'])

#: Most messages sent in one script call or transaction (chunk_size).
MAX_CHUNK_SIZE = int(LIMITS['MAX_CHUNK_SIZE'])

#: Most messages (or entries) one call may claim, read, list or return.
MAX_COUNT = int(LIMITS['MAX_COUNT'])

#: Longest lease, block, delay, min_idle or timeout, in seconds (7 days).
MAX_SECONDS = float(LIMITS['MAX_SECONDS'])

#: Shortest lease, in seconds.
MIN_LEASE = float(LIMITS['MIN_LEASE'])

#: Most characters of a topic or stream name.
MAX_NAME_LENGTH = int(LIMITS['MAX_NAME_LENGTH'])

#: Most characters of a message id, a claim owner or a worker name.
MAX_ID_LENGTH = int(LIMITS['MAX_ID_LENGTH'])

#: Most characters of a consumer group or consumer name.
MAX_GROUP_NAME_LENGTH = int(LIMITS['MAX_GROUP_NAME_LENGTH'])

#: Most fields one stream entry may have.
MAX_FIELDS = int(LIMITS['MAX_FIELDS'])

#: Largest max_deliveries of a consumer group.
MAX_DELIVERIES = int(LIMITS['MAX_DELIVERIES'])

#: Most characters of an Arrow publish's dedup key.
MAX_DEDUP_KEY = int(LIMITS['MAX_DEDUP_KEY'])

#: Longest an Arrow publish's dedup marker is kept, in seconds (30 days).
MAX_DEDUP_TTL = float(LIMITS['MAX_DEDUP_TTL'])

#: Most characters of an RSMQ queue name.
MAX_RSMQ_QNAME_LENGTH = int(LIMITS['MAX_RSMQ_QNAME_LENGTH'])

#: Most characters of an RSMQ namespace.
MAX_RSMQ_NS_LENGTH = int(LIMITS['MAX_RSMQ_NS_LENGTH'])

#: RSMQ's bound for vt and delay, in seconds.
MAX_RSMQ_SECONDS = int(LIMITS['MAX_RSMQ_SECONDS'])

#: Smallest RSMQ maxsize (bytes of one message), besides -1 for unlimited.
MIN_RSMQ_MAXSIZE = int(LIMITS['MIN_RSMQ_MAXSIZE'])

#: Largest RSMQ maxsize (bytes of one message).
MAX_RSMQ_MAXSIZE = int(LIMITS['MAX_RSMQ_MAXSIZE'])

#: Most messages one worker claim may prefetch.
MAX_PREFETCH = int(LIMITS['MAX_PREFETCH'])

#: Most characters of the error text a worker records on a dead-lettered message.
MAX_ERROR_CHARS = int(LIMITS['MAX_ERROR_CHARS'])

#: Most handler threads or tasks one worker may run.
MAX_CONCURRENCY = int(LIMITS['MAX_CONCURRENCY'])

#: Fewest messages a receive asks for (count, not a pop) for the client to read their bodies itself, right after
#: the receive script, rather than through it.
MIN_RSMQ_COUNT_FOR_CALLER_BODIES = int(LIMITS['MIN_RSMQ_COUNT_FOR_CALLER_BODIES'])

#: Most keys (publish records) a client keeps for a later request to delete.
MAX_DELETE_LATER = int(LIMITS['MAX_DELETE_LATER'])

#: Fewest publish records a single publish deletes on its way: they gather until this many wait (any other
#: request of the client, and its ``close()``, takes however many wait).
MIN_DELETE_LATER = int(LIMITS['MIN_DELETE_LATER'])

#: Most characters of a value an error message shows (its repr, cut to end in '...').
MAX_SHOWN_CHARS = int(LIMITS['MAX_SHOWN_CHARS'])


def shown(value: object) -> str:
    """``repr(value)`` as error messages show it: at most MAX_SHOWN_CHARS characters, a longer one cut to end in
    '...' (a list passed for one id makes a short error, as in the native client)."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + '...'
