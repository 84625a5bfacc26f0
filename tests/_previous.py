"""Claims made as the previous release made them (a per-message lease and record, before batch claims), with
its claim script and prelude, kept verbatim in ``python/ferroq/protocol/lua/previous/`` (read from the source
tree: the wheel leaves them out) for the migration tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PREVIOUS = Path(__file__).resolve().parents[1] / 'python' / 'ferroq' / 'protocol' / 'lua' / 'previous'
KEYS = ('backlog', 'nextlog', 'leases', 'deliveries', 'delayed')


def old_claim(r: Any, topic: str, count: int, lease_ms: int = 60_000, owner: str = '') -> list[str]:
    """Claim with the previous release's claim-5n (``r``: redis-py with decoded replies); returns the ids."""
    source = (PREVIOUS / 'prelude.lua').read_text() + (PREVIOUS / 'claim-5n.lua').read_text()
    keys = [f'rfq:{topic}:{k}' for k in KEYS]
    reply = r.eval(source, len(keys), *keys, count, lease_ms, '', owner, f'rfq:{topic}:message:')
    ids, i = [], 1
    while i < len(reply):
        ids.append(reply[i + 1])
        i += 4 + 2 * int(reply[i + 3])
    return ids
