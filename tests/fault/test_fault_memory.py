"""``maxmemory`` with ``noeviction``: a full Redis refuses writes with a typed error and nothing partial.

What it proves: publishing into a full Redis raises ``ferroq.exceptions.OutOfMemory``; the refused
batch wrote nothing (no hash, no list entry); every earlier message is intact, and consumers can drain
the full topic while Redis is still at its limit (claim, extend and harvest are not refused: their
first write cannot grow memory, while publish's can).
"""

from __future__ import annotations

import time

import pytest
from _fault_history import body, delivery
from _fault_queues import Target

from _adapters import KINDS, new_client
from ferroq.exceptions import OutOfMemory

BATCH = 50
PAD = 1000


def _fill(t, procs, topic: str) -> tuple[int, OutOfMemory]:
    """Publish batches until Redis refuses one; returns how many messages were published, and the error."""
    published = 0
    for i in range(2000):
        keys = [f'f.{i}.{j}' for j in range(BATCH)]
        try:
            ids = t.publish_batch([body(k, PAD) for k in keys])
        except OutOfMemory as exc:
            procs.record('pub', keys=keys, err=f'OutOfMemory: {exc}')
            return published, exc
        procs.record('pub', keys=keys, ids=ids)
        published += BATCH
    raise AssertionError('Redis never ran out of memory')


def _limit(r, headroom: int) -> None:
    r.config_set('maxmemory-policy', 'noeviction')
    r.config_set('maxmemory', str(int(r.info('memory')['used_memory']) + headroom))


@pytest.mark.parametrize('impl', KINDS)
def test_out_of_memory_is_typed_atomic_and_drains(impl, server, r, procs, loop_thread, report):
    topic = 'oom'
    client = new_client(impl, loop_thread, server.url)
    try:
        t = client.topic(topic)
        _limit(r, 2_000_000)
        published, err = _fill(t, procs, topic)
        assert 'maxmemory' in str(err)
        # Nothing of the refused batch: exactly the messages of the batches that returned.
        assert r.llen(f'rfq:{topic}:backlog') == published > 0
        assert sum(1 for _ in r.scan_iter(match=f'rfq:{topic}:message:*', count=1000)) == published
        # Consumers empty the topic while Redis is over its limit (made sure of: the freed request buffers
        # of the refused call may have brought it just under, and on a busy machine the server may free
        # some more before the next call, so the limit goes well below): claims are not refused, publishes are.
        r.config_set('maxmemory', str(int(r.info('memory')['used_memory']) - 500_000))
        with pytest.raises(OutOfMemory):
            t.publish({'k': 'over the limit'})
        deadline = time.monotonic() + 30
        while r.llen(f'rfq:{topic}:backlog') and time.monotonic() < deadline:
            t0 = time.monotonic()
            msgs = t.claim(count=100, lease=60.0)
            procs.record('claim', t0=t0, msgs=[delivery(m) for m in msgs])
            t0 = time.monotonic()
            done = t.commit(msgs)
            procs.record('commit', t0=t0, ids=[m.id for m in msgs], done=list(done))
        assert Target(topic).leftover(r) == 0
    finally:
        r.config_set('maxmemory', '0')
        client.close()
    counts = procs.drained(r, server.url, topic, 60.0)
    report(f'oom-noeviction[{impl}]', counts)
    counts.assert_targets(set())
    assert counts.published == published and counts.recovered == 0 and counts.duplicated == 0
