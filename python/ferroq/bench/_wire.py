"""Keys, ids and scripts of the protocols as the peers write them, for the raw clients and the ceiling streams.

The raw redis-py implementation and the ``redis-cli --pipe`` streams speak rfq, RSMQ and Redis Streams
command by command, the way the peer libraries do (``docs/protocol.md``), so their figures are the
protocol's own and not ferroq's scripts.
"""

from __future__ import annotations

import random
import secrets
import string
import time
from importlib import resources

from ferroq.protocol import keys

__all__ = [
    'RFQ_CLAIM_BATCH',
    'RFQ_COMMIT_BATCH',
    'RSMQ_RECEIVE',
    'rfq_claim_side_keys',
    'rfq_ids',
    'rfq_keys',
    'rsmq_ids',
    'rsmq_keys',
    'stream_key',
]


def _peer_script(name: str) -> str:
    """A peer's script for the benchmark's baselines (lua/peers/, next to ferroq's own; never sent by ferroq)."""
    return (resources.files('ferroq.protocol') / 'lua' / 'peers' / f'{name}.lua').read_text(encoding='utf-8')


# RSMQ 0.12's receiveMessage script, verbatim (PyRSMQ ships the same): KEYS = zset, now ms, now + vt ms.
RSMQ_RECEIVE = _peer_script('rsmq_receive')
# rfq's claim and commit as a careful pure-Python client batches them: one script per batch each (no leases).
RFQ_CLAIM_BATCH = _peer_script('rfq_claim_batch')
RFQ_COMMIT_BATCH = _peer_script('rfq_commit_batch')

_ALNUM = string.ascii_letters + string.digits
_B36 = string.digits + string.ascii_lowercase


def rfq_keys(topic: str) -> tuple[str, str, str]:
    """backlog, nextlog and the message key prefix of an rfq topic."""
    return f'rfq:{topic}:backlog', f'rfq:{topic}:nextlog', f'rfq:{topic}:message:'


def rfq_claim_side_keys(topic: str) -> list[str]:
    """The six keys after backlog and nextlog that rfq/claim-8n takes for a topic (leases, deliveries, delayed,
    claims, claim_leases, inflight)."""
    return [f'rfq:{topic}:{k}' for k in ('leases', 'deliveries', 'delayed', 'claims', 'claim_leases', 'inflight')]


def rfq_ids(n: int) -> list[str]:
    """``n`` fresh 32-hex message ids (rfq's shape)."""
    return [secrets.token_hex(16) for _ in range(n)]


def rsmq_keys(qname: str) -> tuple[str, str]:
    """The zset and the hash of an RSMQ queue (namespace ``rsmq``)."""
    return f'rsmq:{qname}', f'rsmq:{qname}:Q'


def _base36(x: int) -> str:
    out = ''
    while x:
        x, d = divmod(x, 36)
        out = _B36[d] + out
    return out or '0'


def rsmq_ids(n: int, start_us: int | None = None) -> list[str]:
    """``n`` RSMQ ids in send order: base36 of epoch µs, then 22 random letters and digits (RSMQ's algorithm).

    Consecutive µs stamps make the ids sort in send order, as RSMQ's do, so a stream of receives can be
    built beforehand.
    """
    t0 = int(time.time() * 1e6) if start_us is None else start_us
    return [_base36(t0 + i) + ''.join(random.choices(_ALNUM, k=22)) for i in range(n)]


def stream_key(name: str) -> str:
    """The STREAM of a ferroq Streams topic: the raw rows and the ceiling write where ferroq's clients do."""
    return keys.stream_key(name)
