"""Consumer crashes and pauses: SIGKILL + restart under load, and SIGSTOP past the lease.

What they prove: a claim held by a dead or frozen consumer comes back after its lease and is processed
by another consumer; nothing is lost; a message is redelivered only when it was in flight at the kill or
pause; the frozen consumer's late commit is refused (fenced), so no message is committed twice.
"""

from __future__ import annotations

import random
import signal
import time

import pytest
from _fault_history import body

from conftest import pending, wait_for

LEASE = 1.5


@pytest.mark.parametrize('impl', ['native', 'native-async', 'pure', 'pure-async'])
def test_kill_consumers(impl, server, r, procs, report):
    topic, count = 'kc', 10
    rng = random.Random(f'kill-{impl}')
    producers = [f'p{i}' for i in range(2)]
    for name in producers:
        procs.spawn('producer', name, impl, server.url, topic, batches=40, batch=25, pace=0.05)

    def consumer(name: str) -> None:
        procs.spawn('consumer', name, impl, server.url, topic, count=count, lease=LEASE, harvest_every=0.5, work=0.02)

    live = [f'c{i}' for i in range(3)]
    for name in live:
        consumer(name)
    kills = procs.crash_loop(rng, live, consumer, producers, min_kills=6)
    counts = procs.settle(r, server.url, topic, producers, LEASE)
    report(f'kill-consumers[{impl}]', counts)
    counts.assert_targets({'kill', 'unrecorded'})
    assert kills >= 6
    assert counts.published == 2 * 40 * 25 and counts.indeterminate == 0
    assert not counts.errors, counts.samples['errors']  # no connection faults here: no call may fail
    # Redelivered only what the killed consumers held: at most one claim of `count` each.
    assert counts.duplicated + counts.commit_unknown <= kills * count


@pytest.mark.parametrize('impl', ['native', 'pure'])
def test_kill_workers(impl, server, r, procs, report):
    """The same crash loop with ferroq.Worker consumers (prefetch, heartbeats, batched commits)."""
    topic = 'kw'
    rng = random.Random(f'kill-worker-{impl}')
    producers = ['p0', 'p1']
    for name in producers:
        procs.spawn('producer', name, impl, server.url, topic, batches=30, batch=25, pace=0.05)
    options = {'lease': LEASE, 'max_deliveries': 100, 'harvest_interval': 0.5, 'poll': 0.2, 'concurrency': 2}

    def worker(name: str) -> None:
        procs.spawn('worker', name, impl, server.url, topic, work=0.005, worker_options=options)

    live = ['w0', 'w1']
    for name in live:
        worker(name)
    kills = procs.crash_loop(rng, live, worker, producers, min_kills=5)
    # A Worker records a delivery when its handler starts, up to lease / 3 after the last renewal.
    counts = procs.settle(r, server.url, topic, producers, LEASE, min_hold=LEASE / 2)
    report(f'kill-workers[{impl}]', counts)
    counts.assert_targets({'kill', 'unrecorded'})
    assert kills >= 5 and counts.published == 2 * 30 * 25
    assert r.llen(f'rfq:{topic}.dead:backlog') == 0  # nothing dead-lettered


@pytest.mark.parametrize('impl', ['native', 'native-async', 'pure', 'pure-async'])
def test_paused_consumer_is_fenced(impl, server, r, procs, report):
    topic, lease = 'pause', 1.0
    keys = [f'pre.0.{i}' for i in range(60)]
    with _client(impl, server.url) as c:
        procs.record('pub', keys=keys, ids=c.topic(topic).publish_batch([body(k) for k in keys]))
    # A claims 10 and "works" on them for 0.5 s: it is frozen in the middle, for 3 leases.
    procs.spawn('consumer', 'a', impl, server.url, topic, count=10, lease=lease, work=0.5)
    wait_for('a to claim', lambda: any(e['ev'] == 'claim' and 'msgs' in e for e in procs.events('a')), timeout=15)
    procs.signal('a', signal.SIGSTOP, 'stop')
    held = next(e for e in procs.events('a') if e['ev'] == 'claim' and 'msgs' in e)['msgs']
    # B harvests and takes over; it must not get A's messages before A's lease has run out.
    procs.spawn('consumer', 'b', impl, server.url, topic, count=10, lease=lease, harvest_every=0.2)
    wait_for('b to empty the topic', lambda: pending(r, topic) == 0, timeout=20, step=0.05)
    time.sleep(max(0.0, 3 * lease - 0.5))
    procs.signal('a', signal.SIGCONT, 'cont')
    wait_for(
        "a's late commit",
        lambda: any(e['ev'] == 'commit' and set(e['ids']) == {m[1] for m in held} for e in procs.events('a')),
        timeout=15,
    )
    procs.finish()

    late = next(e for e in procs.events('a') if e['ev'] == 'commit' and set(e['ids']) == {m[1] for m in held})
    assert late.get('done') == [], f'the late commit of a paused consumer must be refused: {late}'
    counts = procs.drained(r, server.url, topic, lease)
    report(f'pause-consumer[{impl}]', counts)
    counts.assert_targets({'pause'})
    # Exactly the held messages were delivered twice (A, then B once), and committed once (by B).
    assert counts.duplicated == len(held) == counts.causes['pause']
    assert counts.commit_unknown == 0 and not counts.errors, counts.samples
    b_claims = [m for e in procs.events('b') if e['ev'] == 'claim' and 'msgs' in e for m in e['msgs']]
    again = [m for m in b_claims if m[1] in {h[1] for h in held}]
    assert sorted(m[1] for m in again) == sorted(h[1] for h in held)
    assert all(m[2] == 2 for m in again), again  # the second delivery, with the next token


def _client(impl: str, url: str):  # a sync client for setup: the kind under test does not matter here
    import ferroq
    import ferroq.pure

    return ferroq.Client(url) if impl.startswith('native') else ferroq.pure.Client(url)
